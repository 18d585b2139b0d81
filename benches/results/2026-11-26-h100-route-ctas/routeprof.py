import torch, nvfp4
from torch.profiler import profile, ProfilerActivity
for tokens, top_k, experts in ((64, 8, 128), (4096, 8, 128)):
    idx = torch.stack([torch.randperm(experts, device="cuda")[:top_k] for _ in range(tokens)])
    for _ in range(3): nvfp4.moe_route(idx, experts)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5): nvfp4.moe_route(idx, experts)
        torch.cuda.synchronize()
    for e in p.key_averages():
        if "route" in e.key: print(tokens * top_k, e.key, f"{e.device_time / 1:.1f} us avg over {e.count}")
