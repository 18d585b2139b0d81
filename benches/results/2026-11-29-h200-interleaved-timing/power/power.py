"""Clocks and power behind the two timing methods: the MLP op and PyTorch bf16 for one layer,
each replayed alone for 2 s (as do_bench would, L2 flushed before each replay), then the two
in turn for 2 s, then alone again; nvidia-smi samples SM clock and power every 50 ms."""
import runpy
import statistics
import subprocess
import sys
import time
import torch

mod = runpy.run_path("bindings/python/examples/mlp.py", run_name="power")
NvFp4Mlp, bf16_mlp, graph = mod["NvFp4Mlp"], mod["bf16_mlp"], mod["graph"]
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                        "-lms", "50"], stdout=subprocess.PIPE, text=True)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
phases = []


def replay(graphs, seconds):
    began = time.time()
    samples = [[] for _ in graphs]
    while time.time() - began < seconds:
        marks = []
        for _ in range(20):
            for g in graphs:
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); g.replay(); e.record()
                marks.append((s, e))
        torch.cuda.synchronize()
        for j, (s, e) in enumerate(marks):
            samples[j % len(graphs)].append(s.elapsed_time(e) * 1000.0)
    return began, time.time(), [statistics.median(x) for x in samples]


for t, h, i, model in [(256, 4096, 14336, "Llama-3-8B"), (256, 7168, 18432, "DeepSeek-V3")]:
    torch.manual_seed(0)
    dev = torch.device("cuda")
    w1 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w3 = torch.randn(i, h, device=dev, dtype=torch.bfloat16) / h**0.5
    w2 = torch.randn(h, i, device=dev, dtype=torch.bfloat16) / i**0.5
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
    mlp = NvFp4Mlp(w1, w3, w2, x)  # alive while its graph is replayed (the graph reads its weights)
    op = graph(mlp, x)
    bf = graph(lambda y: bf16_mlp(y, w1, w3, w2), x)
    time.sleep(2)
    for name, graphs in (("op alone", [op]), ("bf16 alone", [bf]), ("in turn (op, bf16)", [op, bf]),
                         ("op alone", [op]), ("bf16 alone", [bf])):
        began, ended, us = replay(graphs, 2.0)
        phases.append((model, name, began, ended, us))
        print(model, name, us, flush=True)
    del op, bf, mlp, w1, w3, w2
    torch.cuda.empty_cache()
time.sleep(0.2)
smi.terminate()
out = smi.communicate()[0]
samples = []
for line in out.strip().splitlines():
    stamp, clock, power = [v.strip() for v in line.split(",")]
    when = time.mktime(time.strptime(stamp.split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + stamp.split(".")[1])
    samples.append((when, float(clock), float(power)))
print("| layer (256 tokens) | phase | µs per replay | SM MHz (median, last second) | W (median, last second) |")
print("| --- | --- | --- | --- | --- |")
for model, name, began, ended, us in phases:
    late = [(c, p) for w, c, p in samples if ended - 1.0 <= w <= ended]
    clock = statistics.median(c for c, _ in late) if late else float("nan")
    power = statistics.median(p for _, p in late) if late else float("nan")
    print(f"| {model} | {name} | {' / '.join(f'{u:.1f}' for u in us)} | {clock:.0f} | {power:.0f} |")
