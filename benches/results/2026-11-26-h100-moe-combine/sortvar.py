import torch, statistics
def graph_us(fn, reps=30):
    fn(); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); g.replay(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) * 1000)
    return statistics.median(ts), out
for experts, tokens, k in ((128, 64, 8), (256, 64, 8), (128, 4096, 8), (256, 4096, 8)):
    idx = torch.stack([torch.randperm(experts, device="cuda")[:k] for _ in range(tokens)])
    e = idx.reshape(-1)
    n = e.numel()
    ar = torch.arange(n, device="cuda", dtype=torch.int32)
    variants = {
        "argsort int64 stable": lambda: torch.argsort(e, stable=True),
        "argsort int32 stable": lambda: torch.argsort(e.int(), stable=True),
        "sort int32 unique keys": lambda: torch.sort(e.int() * n + ar).indices,
        "sort int32 stable .indices": lambda: torch.sort(e.int(), stable=True).indices,
    }
    ref = torch.argsort(e, stable=True)
    for name, fn in variants.items():
        us, out = graph_us(fn)
        print(f"E={experts} slots={n}: {name}: {us:.1f} us, same order: {torch.equal(out.long(), ref)}")
