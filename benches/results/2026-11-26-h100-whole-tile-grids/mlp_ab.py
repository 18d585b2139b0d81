"""Times the fused NVFP4 MLP and the bf16 one from CUDA graphs (mlp.py's method) for a list of
(hidden, intermediate, tokens); one process per wheel."""
import sys, torch
sys.path.insert(0, "bindings/python/examples")
import mlp as M

label = sys.argv[1]
cases = [tuple(int(v) for v in c.split("x")) for c in sys.argv[2:]]
by_size = {}
for h, i, t in cases:
    by_size.setdefault((h, i), []).append(t)
for (h, i), toks in by_size.items():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
    xc = torch.randn(256, h, device=dev, dtype=torch.bfloat16)
    fused = M.NvFp4Mlp(w1, w3, w2, xc)
    for t in toks:
        x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
        want = M.bf16_mlp(x, w1, w3, w2).float()
        err = ((fused(x).float() - want).norm() / want.norm()).item()
        ours = M.graph_us(fused, x)
        theirs = M.graph_us(lambda y: M.bf16_mlp(y, w1, w3, w2), x)
        print(f"{label} {h}x{i} t{t}: nvfp4 {ours:.1f} bf16 {theirs:.1f} ratio {theirs/ours:.3f} err {err:.4f}", flush=True)
    del w1, w3, w2, fused
    torch.cuda.empty_cache()
