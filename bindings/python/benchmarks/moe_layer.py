"""µs per Mixture-of-Experts layer (the experts of one MoE block: gate/up, SwiGLU, down, the
router-weighted combine), NVFP4 (``nvfp4.nn.Experts``: sort by expert, one quantization into the
grouped layout, the grouped dual GEMM writing NVFP4, the grouped GEMM, ``nvfp4.moe_combine``)
against the same layer in bfloat16 with ``torch._grouped_mm`` as Hugging Face transformers runs
it, both captured in CUDA graphs and replayed with the L2 cache flushed before each replay, each
in two phases of its own sustained load (``phased.py``); routing random (softmax top-k of random
logits), as in ``benches/grouped``.

    python bindings/python/benchmarks/moe_layer.py [--tokens 64,4096] [--models deepseek-v3,qwen3-30b,gpt-oss-120b]
"""

import argparse

import torch
import torch.nn.functional as F

import nvfp4.nn
from phased import phased_us

# (experts, hidden, expert intermediate, top-k)
MODELS = {
    "deepseek-v3": (256, 7168, 2048, 8),
    "qwen3-30b": (128, 2048, 768, 8),
    "gpt-oss-120b": (128, 2880, 2880, 4),
}


def bf16_layer(w13_t, w2_t, intermediate):
    """The bfloat16 layer: ``w13_t`` ``E × H × 2I`` and ``w2_t`` ``E × I × H`` (transposed views),
    as Hugging Face transformers' ``grouped_mm`` experts run it (5.x,
    ``integrations/moe.py``): sort by expert, gather, ``torch._grouped_mm``, SiLU·up,
    ``torch._grouped_mm``, router weights, the inverse permutation and a sum over the top-k."""

    def layer(x, top_k_index, top_k_weights):
        tokens, top_k = top_k_index.shape
        expert_of = top_k_index.reshape(-1)
        order = torch.argsort(expert_of, stable=True)
        counts = torch.zeros(w13_t.shape[0], dtype=torch.int32, device=x.device)
        counts.scatter_add_(0, expert_of, torch.ones_like(expert_of, dtype=torch.int32))
        ends = torch.cumsum(counts, 0, dtype=torch.int32)
        gate_up = torch._grouped_mm(x[order // top_k], w13_t, offs=ends)
        gate, up = gate_up.split(intermediate, dim=1)
        y = torch._grouped_mm(F.silu(gate) * up, w2_t, offs=ends)
        weighted = y * top_k_weights.reshape(-1)[order, None]
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.shape[0], device=x.device)
        return weighted[inverse].view(tokens, top_k, -1).sum(dim=1).to(x.dtype)

    return layer


def graph(fn, args):
    """A CUDA graph of ``fn(*args)``, captured after a warm-up call."""
    fn(*args)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(*args)
    return g


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="64,4096")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time")
        return
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| model | tokens | nvfp4 µs | bf16 _grouped_mm µs | bf16 / nvfp4 | rel. error vs bf16 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        experts, hidden, intermediate, top_k = MODELS[name]
        g = torch.Generator(device="cuda").manual_seed(0)
        gate_up = torch.randn(experts, 2 * intermediate, hidden, device="cuda", dtype=torch.bfloat16, generator=g) * hidden**-0.5
        down = torch.randn(experts, hidden, intermediate, device="cuda", dtype=torch.bfloat16, generator=g) * intermediate**-0.5
        module = None
        for tokens in (int(t) for t in args.tokens.split(",")):
            x = torch.randn(tokens, hidden, device="cuda", generator=g).to(torch.bfloat16)
            logits = torch.randn(tokens, experts, device="cuda", generator=g)
            top_k_weights, top_k_index = torch.topk(logits.softmax(-1), top_k, dim=-1)
            top_k_weights = top_k_weights.to(torch.bfloat16)
            if module is None:
                # Calibration on the first token count: x's amax, each expert's h amax bound.
                x_scale = nvfp4.nn.global_scale_for(x.abs().max().item())
                h_amax = []
                for e in range(experts):
                    gate, up = (x[:256].float() @ gate_up[e].float().T).split(intermediate, dim=1)
                    h_amax.append(2 * (F.silu(gate) * up).abs().max().item())
                module = nvfp4.nn.Experts.from_float(gate_up, down, x_scale, [nvfp4.nn.global_scale_for(a) for a in h_amax])
                # The bf16 peer on the dequantized weights (the same layer).
                w13 = torch.stack([nvfp4.dequantize(module.w13[e], module.w13_scales[e], module.alpha_gate[e].item() / x_scale,
                                                     dtype=torch.bfloat16) for e in range(experts)])
                w2 = torch.stack([nvfp4.dequantize(module.w2[e], module.w2_scales[e],
                                                    module.alpha_down[e].item() / module.hidden_scales[e].item(),
                                                    dtype=torch.bfloat16) for e in range(experts)])
                peer = bf16_layer(w13.transpose(-2, -1), w2.transpose(-2, -1), intermediate)
                del gate_up, down
            inputs = (x, top_k_index, top_k_weights)
            ours, theirs = phased_us([graph(module, inputs), graph(peer, inputs)])
            got, want = module(*inputs), peer(*inputs)
            error = ((got.double() - want.double()).norm() / want.double().norm()).item()
            print(f"| {name} | {tokens} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f} | {error:.3f} |")
        del module, peer, w13, w2
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
