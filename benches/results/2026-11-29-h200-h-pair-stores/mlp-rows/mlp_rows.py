"""Selected rows of the MLP layer bench (bindings/python/examples/mlp.py's `layer`): the op, its
three calls, unfused, PyTorch bf16, µs from CUDA graphs, each row's variants in order and back."""
import runpy
import torch

mod = runpy.run_path("bindings/python/examples/mlp.py", run_name="rows")
layer = mod["layer"]
ROWS = [(2048, 8192, "Llama-3.2-1B", [128, 256, 512, 1024, 4096]),
        (4096, 14336, "Llama-3-8B", [128, 256, 1024]),
        (7168, 18432, "DeepSeek-V3 dense", [256])]
print("| model | tokens | nvfp4 op | three calls | unfused | bf16 | bf16 / op | rel. error |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for h, i, model, tokens in ROWS:
    for t in tokens:
        error, (ours, calls, unfused, theirs), _ = layer(t, h, i)
        print(f"| {model} ({h} → {i}) | {t} | {ours:.1f} | {calls:.1f} | {unfused:.1f} | {theirs:.1f} | "
              f"{theirs / ours:.2f}× | {error:.4f} |", flush=True)
        torch.cuda.empty_cache()
