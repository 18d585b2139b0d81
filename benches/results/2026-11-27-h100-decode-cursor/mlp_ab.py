"""A/B of the MLP layer (fused NVFP4 block and bf16, CUDA graphs) between wheels.
usage: mlp_ab.py ROUNDS CONFIGS LABEL=SITE...   (CONFIGS: HxIxT,...)
Each (label, round) runs in its own process with PYTHONPATH=SITE; prints a median table."""
import json, os, statistics, subprocess, sys

CHILD = r'''
import json, sys
sys.path.insert(0, "bindings/python/examples")
import torch, mlp
out = {}
for c in sys.argv[1].split(","):
    h, i, t = map(int, c.split("x"))
    torch.manual_seed(0)
    dev = torch.device("cuda")
    w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
    fused = mlp.NvFp4Mlp(w1, w3, w2, x)
    want = mlp.bf16_mlp(x, w1, w3, w2).float()
    err = ((fused(x).float() - want).norm() / want.norm()).item()
    bf16 = lambda y: mlp.bf16_mlp(y, w1, w3, w2)
    out[c] = [mlp.graph_us(fused, x), mlp.graph_us(bf16, x), err]
print("JSON" + json.dumps(out))
'''

rounds, configs, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
labels = [s.split("=", 1)[0] for s in specs]
res = {}
for r in range(rounds):
    for spec in specs:
        label, site = spec.split("=", 1)
        env = dict(os.environ, PYTHONPATH=site)
        p = subprocess.run([sys.executable, "-c", CHILD, configs], env=env, capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith("JSON")]
        if not line:
            print(label, "failed:", p.stderr[-2000:]); continue
        for c, v in json.loads(line[0][4:]).items():
            res.setdefault(c, {}).setdefault(label, []).append(v)
print("| HxIxT | " + " | ".join(f"{l} µs" for l in labels) + " | bf16 µs | " + " | ".join(f"bf16/{l}" for l in labels) + " | " + " | ".join(f"{l}/{labels[0]}" for l in labels[1:]) + " | rel err |")
print("|" + " --- |" * (2 + 2 * len(labels) + len(labels)))
for c, per in res.items():
    med = [statistics.median(v[0] for v in per[l]) if l in per else float("nan") for l in labels]
    bf = statistics.median(v[1] for l in labels if l in per for v in per[l])
    err = max(v[2] for l in labels if l in per for v in per[l])
    print(f"| {c} | " + " | ".join(f"{m:.1f}" for m in med) + f" | {bf:.1f} | " + " | ".join(f"{bf/m:.2f}x" for m in med) + " | " + " | ".join(f"{m/med[0]:.3f}" for m in med[1:]) + f" | {err:.4f} |")
