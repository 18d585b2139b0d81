"""A SwiGLU MLP block ``down(silu(x·W1ᵀ) ⊙ (x·W3ᵀ))`` with NVFP4 weights, against the same
block in bf16 PyTorch: output relative error and µs per call (eager and CUDA graph).

The weights are quantized once from bf16 (each with a global scale ``amax / (6·448)``, the
library's ``Auto`` rule); the activations are quantized on the GPU in every call with static
global scales calibrated once on a first batch (as serving engines use static input scales), so
a call never synchronizes and can be captured in a CUDA graph.

    python bindings/python/examples/mlp.py [--tokens 256] [--hidden 4096] [--intermediate 7168]
"""

import argparse

import torch
import torch.nn.functional as F

import nvfp4


def global_scale(t: torch.Tensor) -> float:
    """The library's Auto rule: amax / (6 · 448) (1 for an all-zero tensor)."""
    amax = t.abs().max().item()
    return amax / (6.0 * 448.0) if amax > 0 else 1.0


class NvFp4Mlp:
    """The block with NVFP4 weights; per call: quantize x, dual GEMM, quantize, GEMM."""

    def __init__(self, w1, w3, w2, x_calibration):
        self.g1, self.g3, self.g2 = global_scale(w1), global_scale(w3), global_scale(w2)
        self.w1 = nvfp4.quantize(w1, self.g1)
        self.w3 = nvfp4.quantize(w3, self.g3)
        self.w2 = nvfp4.quantize(w2, self.g2)
        self.gx = global_scale(x_calibration)
        hidden = self.gate_up(x_calibration)
        self.gh = global_scale(hidden)

    def gate_up(self, x):
        xq, xs = nvfp4.quantize(x, self.gx)
        return nvfp4.dual_gemm(xq, self.w1[0], self.w3[0], xs, self.w1[1], self.w3[1], self.gx * self.g1, self.gx * self.g3)

    def __call__(self, x):
        h = self.gate_up(x)
        hq, hs = nvfp4.quantize(h, self.gh)
        return nvfp4.gemm(hq, self.w2[0], hs, self.w2[1], self.gh * self.g2)


def bf16_mlp(x, w1, w3, w2):
    return F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)


def time_us(fn, calls=50):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def graphed(fn, x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    return graph, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=7168)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to run")
        return
    torch.manual_seed(0)
    t, h, i = args.tokens, args.hidden, args.intermediate
    dev = torch.device("cuda")
    w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
    mlp = NvFp4Mlp(w1, w3, w2, x)
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)  # a new batch, same scales
    want = bf16_mlp(x, w1, w3, w2).float()
    got = mlp(x).float()
    error = ((got - want).norm() / want.norm()).item()
    ours = time_us(lambda: mlp(x))
    theirs = time_us(lambda: bf16_mlp(x, w1, w3, w2))
    graph, _ = graphed(mlp, x)
    ours_graph = time_us(graph.replay)
    graph_bf16, _ = graphed(lambda y: bf16_mlp(y, w1, w3, w2), x)
    theirs_graph = time_us(graph_bf16.replay)
    arch, name, sms = nvfp4.device_info()
    print(f"device: {name} ({arch}, {sms} SMs); torch {torch.__version__}")
    print(f"SwiGLU MLP tokens={t} hidden={h} intermediate={i}")
    print(f"relative error of the NVFP4 block vs bf16 (Frobenius): {error:.4f}")
    print("| path | eager µs | CUDA graph µs |")
    print("| --- | --- | --- |")
    print(f"| nvfp4 (quantize x, dual GEMM, quantize, GEMM) | {ours:.1f} | {ours_graph:.1f} |")
    print(f"| PyTorch bf16 (3 linears + silu·mul) | {theirs:.1f} | {theirs_graph:.1f} |")


if __name__ == "__main__":
    main()
