import sys, torch, subprocess, time
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
        for _ in range(6):
            flush.zero_(); graph.replay()
        torch.cuda.synchronize()
    ev = sorted([e for e in p.events() if e.device_type == DeviceType.CUDA], key=lambda e: e.time_range.start)
    rows, cur = [], None
    for e in ev:
        if "fill" in e.name.lower():
            cur = []; rows.append(cur); continue
        if cur is not None:
            cur.append((e.name[:48], e.time_range.start, e.time_range.end))
    # median per kernel position over the last 4 replays
    rs = [r for r in rows[-4:] if r]
    n = len(rs[0])
    parts = []
    for j in range(n):
        ds = sorted(r[j][2] - r[j][1] for r in rs)
        parts.append(f"{rs[0][j][0]} {ds[len(ds)//2]:.1f}")
    spans = sorted(r[-1][2] - r[0][1] for r in rs)
    print(f"{label}: span {spans[len(spans)//2]:.1f} | " + "; ".join(parts), flush=True)

for (h, i, toks) in ((2048, 8192, (256, 1024, 4096)), (4096, 14336, (256,)), (7168, 18432, (256, 1024, 4096))):
    g = torch.Generator(device="cuda").manual_seed(0)
    w1 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w3 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w2 = (torch.randn(h, i, device="cuda", generator=g) * i**-0.5).bfloat16()
    xc = torch.randn(256, h, device="cuda", generator=g).bfloat16()
    mlp = M.NvFp4Mlp(w1, w3, w2, xc)
    unf = M.NvFp4Mlp(w1, w3, w2, xc, fused=False)
    for t in toks:
        x = torch.randn(t, h, device="cuda", generator=g).bfloat16()
        prof(lambda: mlp(x), f"{h}->{i} t{t} nvfp4")
        prof(lambda: unf(x), f"{h}->{i} t{t} unfused")
        prof(lambda: M.bf16_mlp(x, w1, w3, w2), f"{h}->{i} t{t} bf16")
