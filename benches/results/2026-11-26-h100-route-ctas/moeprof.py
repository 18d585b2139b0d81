import sys, statistics, torch, torch.nn.functional as F
sys.path.insert(0, "bindings/python/benchmarks")
import moe_layer as ml
import nvfp4, nvfp4.nn
from torch.profiler import profile, ProfilerActivity

name = sys.argv[1] if len(sys.argv) > 1 else "qwen3-30b"
tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
experts, hidden, intermediate, top_k = ml.MODELS[name]
g = torch.Generator(device="cuda").manual_seed(0)
gate_up = torch.randn(experts, 2 * intermediate, hidden, device="cuda", dtype=torch.bfloat16, generator=g) * hidden**-0.5
down = torch.randn(experts, hidden, intermediate, device="cuda", dtype=torch.bfloat16, generator=g) * intermediate**-0.5
x = torch.randn(tokens, hidden, device="cuda", generator=g).to(torch.bfloat16)
logits = torch.randn(tokens, experts, device="cuda", generator=g)
w, idx = torch.topk(logits.softmax(-1), top_k, dim=-1)
w = w.to(torch.bfloat16)
x_scale = nvfp4.nn.global_scale_for(x.abs().max().item())
module = nvfp4.nn.Experts.from_float(gate_up, down, x_scale, [nvfp4.nn.global_scale_for(8.0)] * experts)
w13 = torch.stack([nvfp4.dequantize(module.w13[e], module.w13_scales[e], module.alpha_gate[e].item() / x_scale, dtype=torch.bfloat16) for e in range(experts)])
w2 = torch.stack([nvfp4.dequantize(module.w2[e], module.w2_scales[e], module.alpha_down[e].item() / module.hidden_scales[e].item(), dtype=torch.bfloat16) for e in range(experts)])
peer = ml.bf16_layer(w13.transpose(-2, -1), w2.transpose(-2, -1), intermediate)
args = (x, idx, w)
for fn, label in ((module, "nvfp4"), (peer, "bf16")):
    fn(*args); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
    print(f"== {label} {name} {tokens} (5 calls, eager)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=90))

# combine alternatives on a y of the layer's size
rows = tokens * top_k
y = torch.randn(rows, hidden, device="cuda", dtype=torch.float16)
order = torch.argsort(idx.reshape(-1), stable=True)
token_of = order // top_k
def c_index_add():
    weighted = y.float() * w.reshape(-1)[order, None].float()
    out = torch.zeros((tokens, hidden), dtype=torch.float32, device="cuda")
    out.index_add_(0, token_of, weighted)
    return out.to(torch.bfloat16)
def c_unpermute_bmm():
    u = torch.empty_like(y); u[order] = y
    return torch.bmm(w.to(y.dtype).view(tokens, 1, top_k), u.view(tokens, top_k, hidden)).view(tokens, hidden).to(torch.bfloat16)
inv = torch.empty_like(order); inv[order] = torch.arange(rows, device="cuda")
def c_gather_bmm():
    return torch.bmm(w.to(y.dtype).view(tokens, 1, top_k), y[inv].view(tokens, top_k, hidden)).view(tokens, hidden).to(torch.bfloat16)
ref = c_index_add().float()
for fn in (c_index_add, c_unpermute_bmm, c_gather_bmm):
    us = ml.graph_us(fn, ())
    err = ((fn().float() - ref).norm() / ref.norm()).item()
    print(f"combine {fn.__name__}: {us:.1f} us  rel err {err:.2e}")
print("layer graph us: nvfp4", ml.graph_us(module, args), "bf16", ml.graph_us(peer, args))
