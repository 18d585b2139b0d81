import sys, torch
sys.path.insert(0, "bindings/python/examples")
import mlp as M
from torch.profiler import profile, ProfilerActivity
from torch.autograd import DeviceType

def prof(fn, label):
    fn(); torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        flush.zero_(); graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(10):
            flush.zero_(); graph.replay()
        torch.cuda.synchronize()
    ev = sorted([e for e in p.events() if e.device_type == DeviceType.CUDA], key=lambda e: e.time_range.start)
    rows, cur = [], None
    for e in ev:
        if "fill" in e.name.lower():
            cur = []; rows.append(cur); continue
        if cur is not None:
            cur.append((e.name[:40], e.time_range.start, e.time_range.end))
    rs = [r for r in rows[-8:] if r]
    n = len(rs[0])
    med = lambda xs: sorted(xs)[len(xs)//2]
    parts = []
    for j in range(n):
        d = med([r[j][2] - r[j][1] for r in rs])
        gap = med([r[j][1] - r[j-1][2] for r in rs]) if j else 0.0
        parts.append(f"[gap {gap:.1f}] {rs[0][j][0]} {d:.1f}")
    spans = med([r[-1][2] - r[0][1] for r in rs])
    print(f"{label}: span {spans:.1f} | " + "; ".join(parts), flush=True)

for (h, i) in ((2048, 8192), (4096, 14336), (7168, 18432)):
    g = torch.Generator(device="cuda").manual_seed(0)
    w1 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w3 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w2 = (torch.randn(h, i, device="cuda", generator=g) * i**-0.5).bfloat16()
    xc = torch.randn(256, h, device="cuda", generator=g).bfloat16()
    mlp = M.NvFp4Mlp(w1, w3, w2, xc)
    for t in (1, 16, 64):
        x = torch.randn(t, h, device="cuda", generator=g).bfloat16()
        prof(lambda: mlp(x), f"{h}->{i} t{t} nvfp4")
