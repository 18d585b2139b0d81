"""One wheel's MLP op and bf16 block at decode token counts (run once per wheel and round)."""
import os, sys, json, torch
sys.path.insert(0, "bindings/python/examples")
import mlp
tag = sys.argv[1]
res = {}
for h, i, model in mlp.SIZES:
    for t in [int(x) for x in os.environ.get("MLP_TOKENS", "1,16,64").split(",")]:
        torch.manual_seed(0)
        dev = torch.device("cuda")
        w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
        w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
        w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
        x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
        op = mlp.NvFp4Mlp(w1, w3, w2, x)
        want = mlp.bf16_mlp(x, w1, w3, w2).float()
        got = op(x).float()
        err = ((got - want).norm() / want.norm()).item()
        assert err < 0.3, err
        ours, theirs = mlp.graphs_us((op, lambda y: mlp.bf16_mlp(y, w1, w3, w2)), x)
        res[f"{model} {t}"] = (ours, theirs)
        torch.cuda.empty_cache()
print(json.dumps({"tag": tag, "rows": res}))
