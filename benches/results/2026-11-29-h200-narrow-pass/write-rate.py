import torch, triton.testing as tt
torch.cuda.init()
n = 134_217_728 // 2  # 134 MB of fp16
x = torch.empty(n, dtype=torch.float16, device='cuda')
y = torch.empty(n, dtype=torch.float16, device='cuda')
small = torch.empty(38_000_000 // 2, dtype=torch.float16, device='cuda')
half = torch.empty(n // 2, dtype=torch.float16, device='cuda')
def t(f):
    return tt.do_bench(f, warmup=50, rep=300, return_mode='median') * 1e3
w = t(lambda: x.fill_(1.0))
print(f"write 134 MB (fill_): {w:.1f} us = {134.2/w:.2f} TB/s")
c = t(lambda: half.copy_(y[: n // 2]))
print(f"copy 67+67 MB: {c:.1f} us = {134.2/c:.2f} TB/s (read+write)")
r = t(lambda: x.sum())
print(f"read 134 MB (sum): {r:.1f} us = {134.2/r:.2f} TB/s")
