"""The MLP layer bench's rows timed by the previous method (variants one after another with
do_bench, in order and back, each the mean of its two) and by the current one (variants
replayed in turn under sustained load, each the median), alternately, in one process."""
import runpy
import torch

old = runpy.run_path(".gpu-bundle/mlp_old.py", run_name="old")["layer"]
new = runpy.run_path("bindings/python/examples/mlp.py", run_name="new")["layer"]
ROWS = [(2048, 8192, "Llama-3.2-1B", [256, 1024]), (4096, 14336, "Llama-3-8B", [256, 1024]),
        (7168, 18432, "DeepSeek-V3 dense", [256])]
print("| model | tokens | method | nvfp4 op | three calls | unfused | bf16 | bf16 / op |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for h, i, model, tokens in ROWS:
    for t in tokens:
        for name, layer in (("in order and back", old), ("in turn", new), ("in order and back", old), ("in turn", new)):
            _, (ours, calls, unfused, theirs), _ = layer(t, h, i)
            print(f"| {model} | {t} | {name} | {ours:.1f} | {calls:.1f} | {unfused:.1f} | {theirs:.1f} | "
                  f"{theirs / ours:.2f}× |", flush=True)
            torch.cuda.empty_cache()
