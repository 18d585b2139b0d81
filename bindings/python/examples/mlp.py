"""A SwiGLU MLP block ``down(silu(x·W1ᵀ) ⊙ (x·W3ᵀ))`` with NVFP4 weights, against the same
block in bf16 PyTorch: output relative error and µs per call (eager and CUDA graph). With
``--sweep`` it is the layer bench: three model sizes × six token counts, CUDA graphs only.

The weights are quantized once from bf16 (each with a global scale ``amax / (6·448)``, the
library's ``Auto`` rule); the activations are quantized with static global scales calibrated
once on a first batch (as serving engines use static input scales), so a call never
synchronizes and can be captured in a CUDA graph. A call is the library's MLP op
(``nvfp4.swiglu_mlp``): three kernels, quantize x, the dual GEMM writing NVFP4, the GEMM writing
bf16 (the input's dtype), each handing the next its tokens decoded. Timed beside it: the same
kernels as three calls (each GEMM with its token pre-decoding pass; bit-identical output) and
the unfused form (fp16 dual GEMM output, then ``quantize``).

Timing (``benchmarks/phased.py``, shared with the MoE layer bench): each variant of a row
captured as a CUDA graph and replayed in two phases of its own, about 0.4 s of replays back to
back each (the L2 flushed before each replay, each replay between two CUDA events), in the order
A B C D D C B A; each variant the median of its phases' second halves. Under the power limit an
H200's clocks depend on the workload (the NVFP4 layer runs at higher clocks than the bf16 one),
so variants replayed in turn would all run at their mix's clocks, and variants timed once one
after another drift with the GPU's temperature (timed so, identical kernels read up to 11 %
apart by their place in a row).

    python bindings/python/examples/mlp.py [--tokens 256] [--hidden 4096] [--intermediate 7168]
    python bindings/python/examples/mlp.py --sweep
"""

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import nvfp4

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from phased import phased_us  # noqa: E402  (the layer benches' shared timer)


def f32_product(a: float, b: float) -> float:
    """``a · b`` rounded as the library multiplies global scales (float32 operands and
    product), so that the separate calls get the MLP op's α bit for bit."""
    return (torch.tensor(a, dtype=torch.float32) * torch.tensor(b, dtype=torch.float32)).item()


def global_scale(t: torch.Tensor) -> float:
    """The library's Auto rule: amax / (6 · 448) (1 for an all-zero tensor)."""
    amax = t.abs().max().item()
    return amax / (6.0 * 448.0) if amax > 0 else 1.0


class NvFp4Mlp:
    """The block with NVFP4 weights. ``mode``: ``"op"``, the library's MLP op
    (``nvfp4.swiglu_mlp``: the three kernels below, each handing the next its tokens already
    decoded); ``"calls"``, the same three kernels as separate calls (quantize x,
    ``dual_gemm_nvfp4``, ``gemm``; each GEMM with token tiles runs its pre-decoding pass);
    ``"unfused"``, the dual GEMM writing fp16 and a separate ``quantize``."""

    def __init__(self, w1, w3, w2, x_calibration, mode="op"):
        self.g1, self.g3, self.g2 = global_scale(w1), global_scale(w3), global_scale(w2)
        self.w1 = nvfp4.quantize(w1, self.g1)
        self.w3 = nvfp4.quantize(w3, self.g3)
        self.w2 = nvfp4.quantize(w2, self.g2)
        self.gx = global_scale(x_calibration)
        self.mode = mode
        xq, xs = nvfp4.quantize(x_calibration, self.gx)
        self.gh = global_scale(self.gate_up(xq, xs))

    def gate_up(self, xq, xs):
        return nvfp4.dual_gemm(xq, self.w1[0], self.w3[0], xs, self.w1[1], self.w3[1],
                               f32_product(self.gx, self.g1), f32_product(self.gx, self.g3))

    def __call__(self, x):
        if self.mode == "op":
            return nvfp4.swiglu_mlp(x, self.w1[0], self.w3[0], self.w2[0], self.w1[1], self.w3[1], self.w2[1],
                                    self.g1, self.g3, self.g2, x_scale=self.gx, h_scale=self.gh, out_dtype=x.dtype)
        xq, xs = nvfp4.quantize(x, self.gx)
        if self.mode == "calls":
            hq, hs = nvfp4.dual_gemm_nvfp4(
                xq, self.w1[0], self.w3[0], xs, self.w1[1], self.w3[1],
                f32_product(self.gx, self.g1), f32_product(self.gx, self.g3), global_scale=self.gh,
            )
        else:
            hq, hs = nvfp4.quantize(self.gate_up(xq, xs), self.gh)
        return nvfp4.gemm(hq, self.w2[0], hs, self.w2[1], f32_product(self.gh, self.g2), out_dtype=x.dtype)


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


def graph(fn, x):
    """A CUDA graph of ``fn(x)``, captured after a warm-up call (plans are made outside the
    capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(x)
    return g


def graphs_us(fns, x):
    """µs of a graph replay of each of ``fns(x)``, each in phases of its own (see the module doc
    for the method)."""
    return phased_us([graph(fn, x) for fn in fns])


def layer(t, h, i, seed=0):
    """The blocks (the MLP op, its three calls, unfused, bf16) of one size on a fresh batch:
    (relative error of the op vs bf16, µs of each from CUDA graphs, eager µs of the op and
    bf16). The op's output must be its three calls' bit for bit."""
    torch.manual_seed(seed)
    dev = torch.device("cuda")
    w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
    op = NvFp4Mlp(w1, w3, w2, x)
    calls = NvFp4Mlp(w1, w3, w2, x, mode="calls")
    unfused = NvFp4Mlp(w1, w3, w2, x, mode="unfused")
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)  # a new batch, same scales
    want = bf16_mlp(x, w1, w3, w2).float()
    got = op(x)
    assert torch.equal(got, calls(x)), "the MLP op differs from its three calls"
    error = ((got.float() - want).norm() / want.norm()).item()
    unfused_error = ((unfused(x).float() - want).norm() / want.norm()).item()
    assert abs(error - unfused_error) <= 1e-6 * max(1.0, unfused_error), (error, unfused_error)
    bf16 = lambda y: bf16_mlp(y, w1, w3, w2)  # noqa: E731
    graphs = graphs_us((op, calls, unfused, bf16), x)
    eager = [time_us(lambda: op(x)), time_us(lambda: bf16(x))]
    return error, graphs, eager


SIZES = [(2048, 8192, "Llama-3.2-1B"), (4096, 14336, "Llama-3-8B"), (7168, 18432, "DeepSeek-V3 dense")]
TOKENS = [1, 16, 64, 256, 1024, 4096]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=7168)
    parser.add_argument("--sweep", action="store_true", help="the layer bench: every size and token count")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to run")
        return
    arch, name, sms = nvfp4.device_info()
    print(f"device: {name} ({arch}, {sms} SMs); torch {torch.__version__}")
    if not args.sweep:
        t, h, i = args.tokens, args.hidden, args.intermediate
        error, (ours, calls, unfused, theirs), (ours_eager, theirs_eager) = layer(t, h, i)
        print(f"SwiGLU MLP tokens={t} hidden={h} intermediate={i}")
        print(f"relative error of the NVFP4 block vs bf16 (Frobenius): {error:.4f}")
        print("| path | eager µs | CUDA graph µs |")
        print("| --- | --- | --- |")
        print(f"| nvfp4 MLP op (swiglu_mlp) | {ours_eager:.1f} | {ours:.1f} |")
        print(f"| nvfp4 three calls (quantize x, dual GEMM → NVFP4, GEMM) | | {calls:.1f} |")
        print(f"| nvfp4 unfused (…, dual GEMM → fp16, quantize, GEMM) | | {unfused:.1f} |")
        print(f"| PyTorch bf16 (3 linears + silu·mul) | {theirs_eager:.1f} | {theirs:.1f} |")
        return
    print("SwiGLU MLP layer, µs per call from CUDA graphs")
    print("| model (hidden → intermediate) | tokens | nvfp4 op | nvfp4 three calls | nvfp4 unfused | bf16 | bf16 / nvfp4 op | rel. error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for h, i, model in SIZES:
        for t in TOKENS:
            error, (ours, calls, unfused, theirs), _ = layer(t, h, i)
            print(
                f"| {model} ({h} → {i}) | {t} | {ours:.1f} | {calls:.1f} | {unfused:.1f} | {theirs:.1f} | "
                f"{theirs / ours:.2f}× | {error:.4f} |",
                flush=True,
            )
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
