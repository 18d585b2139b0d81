import torch, statistics, nvfp4
def graph_us(fn, reps=30):
    fn(); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); g.replay(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) * 1000)
    return statistics.median(ts)
def torch_route(idx, experts):
    tokens, top_k = idx.shape
    e = idx.reshape(-1)
    order = torch.argsort(e.int(), stable=True)
    token_of = order // top_k
    counts = torch.zeros(experts, dtype=torch.int64, device=e.device)
    counts.scatter_add_(0, e.long(), torch.ones_like(e, dtype=torch.int64))
    zero = counts.new_zeros(1)
    ro = torch.cat([zero, torch.cumsum(counts, 0)]).int()
    so = torch.cat([zero, torch.cumsum((counts + 127) // 128 * 128, 0)]).int()
    src = torch.empty_like(order, dtype=torch.int32)
    src[order] = torch.arange(order.shape[0], dtype=torch.int32, device=e.device)
    return token_of, src, ro, so
for tokens, top_k, experts in ((64, 8, 128), (64, 8, 256), (1024, 8, 128), (4096, 4, 128), (4096, 8, 128), (4096, 8, 256), (16384, 8, 256)):
    idx = torch.stack([torch.randperm(experts, device="cuda")[:top_k] for _ in range(tokens)])
    a = graph_us(lambda: nvfp4.moe_route(idx, experts))
    b = graph_us(lambda: torch_route(idx, experts))
    print(f"tokens {tokens} top_k {top_k} experts {experts}: moe_route {a:.1f} us, PyTorch {b:.1f} us")
