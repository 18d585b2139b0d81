import sys, torch
sys.path.insert(0, "bindings/python/examples")
import mlp as M
from torch.profiler import profile, ProfilerActivity
from torch.autograd import DeviceType

for (h, i) in ((2048, 8192), (4096, 14336)):
    g = torch.Generator(device="cuda").manual_seed(0)
    w1 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w3 = (torch.randn(i, h, device="cuda", generator=g) * h**-0.5).bfloat16()
    w2 = (torch.randn(h, i, device="cuda", generator=g) * i**-0.5).bfloat16()
    xc = torch.randn(256, h, device="cuda", generator=g).bfloat16()
    mlp = M.NvFp4Mlp(w1, w3, w2, xc)
    for t in (1, 16):
        x = torch.randn(t, h, device="cuda", generator=g).bfloat16()
        mlp(x); torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            mlp(x)
        flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        for _ in range(5):
            flush.zero_(); graph.replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                flush.zero_(); graph.replay()
            torch.cuda.synchronize()
        ev = sorted([e for e in prof.events() if e.device_type == DeviceType.CUDA], key=lambda e: e.time_range.start)
        # group per replay: each replay starts after a fill kernel
        rows, cur = [], None
        for e in ev:
            if "Fill" in e.name or "fill" in e.name:
                cur = {"flush_end": e.time_range.end, "k": []}; rows.append(cur); continue
            if cur is not None:
                cur["k"].append((e.name[:40], e.time_range.start, e.time_range.end))
        print(f"== {h}->{i} tokens {t}")
        for r in rows[-3:]:
            k = r["k"]
            if not k: continue
            span = k[-1][2] - k[0][1]
            parts = "; ".join(f"{n}: start +{s - k[0][1]:.1f} dur {e - s:.1f}" for n, s, e in k)
            print(f"span {span:.1f} us (first start {k[0][1] - r['flush_end']:.1f} after flush) | {parts}")
