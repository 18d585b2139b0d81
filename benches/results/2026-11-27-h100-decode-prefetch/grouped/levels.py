"""Does the Qwen3-30B-A3B 64-token MoE layer's time level follow where its weights lie?
One process: the layer timed with its weight buffers re-allocated (cloned) at shifted addresses."""
import sys, statistics
sys.path.insert(0, "bindings/python/benchmarks")
import torch, torch.nn.functional as F
import nvfp4.nn
from moe_layer import MODELS, graph_us

experts, hidden, intermediate, top_k = MODELS["qwen3-30b"]
g = torch.Generator(device="cuda").manual_seed(0)
gate_up = torch.randn(experts, 2 * intermediate, hidden, device="cuda", dtype=torch.bfloat16, generator=g) * hidden**-0.5
down = torch.randn(experts, hidden, intermediate, device="cuda", dtype=torch.bfloat16, generator=g) * intermediate**-0.5
tokens = 64
x = torch.randn(tokens, hidden, device="cuda", generator=g).to(torch.bfloat16)
logits = torch.randn(tokens, experts, device="cuda", generator=g)
w, idx = torch.topk(logits.softmax(-1), top_k, dim=-1)
w = w.to(torch.bfloat16)
x_scale = nvfp4.nn.global_scale_for(x.abs().max().item())
h_amax = []
for e in range(experts):
    gt, up = (x.float() @ gate_up[e].float().T).split(intermediate, dim=1)
    h_amax.append(2 * (F.silu(gt) * up).abs().max().item())
module = nvfp4.nn.Experts.from_float(gate_up, down, x_scale, [nvfp4.nn.global_scale_for(a) for a in h_amax])
del gate_up, down
want = module(x, idx, w).float()
pads = []
rows = []
for gen in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    if gen:
        pads.append(torch.empty((gen * 1048576 + 65536 * (gen % 5),), dtype=torch.uint8, device="cuda"))
        for name in ("w13", "w13_scales", "w2", "w2_scales"):
            setattr(module, name, getattr(module, name).clone())
    got = module(x, idx, w).float()
    assert torch.equal(got, want)
    t = [graph_us(module, (x, idx, w)) for _ in range(3)]
    rows.append((gen, module.w13.data_ptr(), statistics.median(t), t))
    print(f"gen {gen:2d} w13 at {module.w13.data_ptr():#x} (mod 2 MiB {module.w13.data_ptr() % (2 << 20):#x}): layer µs {statistics.median(t):.1f}  {['%.1f' % v for v in t]}", flush=True)
