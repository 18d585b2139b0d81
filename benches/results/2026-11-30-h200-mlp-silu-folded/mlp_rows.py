"""Rows of the MLP layer bench (bindings/python/examples/mlp.py's `layer`): the op, its three
calls, unfused, PyTorch bf16, µs from CUDA graphs replayed in turn, each the median."""
import runpy
import sys
import torch

mod = runpy.run_path("bindings/python/examples/mlp.py", run_name="rows")
layer = mod["layer"]
TOKENS = [int(t) for t in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1, 16, 64, 128, 256, 512, 1024, 4096]
ROWS = [(2048, 8192, "Llama-3.2-1B"), (4096, 14336, "Llama-3-8B"), (7168, 18432, "DeepSeek-V3 dense")]
print("| model | tokens | nvfp4 op | three calls | unfused | bf16 | bf16 / op | rel. error |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for h, i, model in ROWS:
    for t in TOKENS:
        error, (ours, calls, unfused, theirs), _ = layer(t, h, i)
        print(f"| {model} ({h} → {i}) | {t} | {ours:.1f} | {calls:.1f} | {unfused:.1f} | {theirs:.1f} | "
              f"{theirs / ours:.2f}× | {error:.4f} |", flush=True)
        torch.cuda.empty_cache()
