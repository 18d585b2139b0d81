import sys, torch
sys.path.insert(0, "bindings/python/benchmarks")
import moe_layer as ml
import nvfp4, nvfp4.nn
from torch.profiler import profile, ProfilerActivity
from torch.autograd import DeviceType
name, tokens = "qwen3-30b", 64
experts, hidden, intermediate, top_k = ml.MODELS[name]
g = torch.Generator(device="cuda").manual_seed(0)
gate_up = torch.randn(experts, 2 * intermediate, hidden, device="cuda", dtype=torch.bfloat16, generator=g) * hidden**-0.5
down = torch.randn(experts, hidden, intermediate, device="cuda", dtype=torch.bfloat16, generator=g) * intermediate**-0.5
x = torch.randn(tokens, hidden, device="cuda", generator=g).to(torch.bfloat16)
logits = torch.randn(tokens, experts, device="cuda", generator=g)
w, idx = torch.topk(logits.softmax(-1), top_k, dim=-1)
module = nvfp4.nn.Experts.from_float(gate_up, down, nvfp4.nn.global_scale_for(x.abs().max().item()), [nvfp4.nn.global_scale_for(8.0)] * experts)
args = (x, idx, w)
module(*args); torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    module(*args)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
for _ in range(5):
    flush.zero_(); graph.replay()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(6):
        flush.zero_(); graph.replay()
    torch.cuda.synchronize()
ev = sorted([e for e in prof.events() if e.device_type == DeviceType.CUDA], key=lambda e: e.time_range.start)
rows, cur = [], None
for e in ev:
    if "FillFunctor<unsigned char" in e.name and e.time_range.end - e.time_range.start > 30:
        cur = {"k": []}; rows.append(cur); continue
    if cur is not None:
        cur["k"].append((e.name[:45], e.time_range.start, e.time_range.end))
for r in rows[-2:]:
    k = r["k"]; t0 = k[0][1]
    print(f"span {k[-1][2] - t0:.1f} us")
    for n, s, e in k:
        print(f"  +{s - t0:7.1f} {e - s:7.1f}  {n}")
