"""µs per call of each GPU MODE adapter (``nvfp4.gpumode``) on its problem's benchmark shapes,
with the device's floor measured in the same run, timed the way the harness's
``eval_better_bench*.py`` times a submission: 15 input sets from the problem's own
``generate_input`` (seed + 42 each), the L2 cache cleared, the 15 calls timed together with
CUDA events (so one call's host work overlaps the previous call's kernels, as in the harness),
µs per call; the median of ``--reps`` such runs.

    NVFP4_GPUMODE_DIR=DIR python bindings/python/benchmarks/gpumode.py [--reps 20]

(``scripts/fetch-gpumode.sh DIR`` downloads the harness's files.) Floor = max(bytes the problem
must move / measured copy bandwidth, FLOPs / measured fp16 tensor rate): fp16 is the rate
Hopper multiplies NVFP4 operands at once decoded (it has no fp4 tensor cores).
"""

import argparse
import importlib
import json
import os
import statistics
import sys
from pathlib import Path

import torch

import nvfp4
import nvfp4.gpumode

ADAPTERS = {
    "nvfp4_gemv": nvfp4.gpumode.gemv,
    "nvfp4_gemm": nvfp4.gpumode.gemm,
    "nvfp4_dual_gemm": nvfp4.gpumode.dual_gemm,
    "nvfp4_group_gemm": nvfp4.gpumode.group_gemm,
}


def benchmark_shapes(directory: Path, problem: str) -> list:
    shapes, section = [], None
    for line in (directory / problem / "task.yml").read_text().splitlines():
        if line and not line[0].isspace():
            section = line.rstrip(":").strip()
        elif section == "benchmarks" and line.strip().startswith("- {"):
            shapes.append(json.loads(line.strip()[2:]))
    return shapes


def load_reference(directory: Path, problem: str):
    for name in ("reference", "task", "utils"):
        sys.modules.pop(name, None)
    sys.path[:0] = [str(directory / problem), str(directory)]
    try:
        return importlib.import_module("reference")
    finally:
        del sys.path[:2]


def work(problem: str, spec: dict) -> tuple:
    """(bytes, FLOPs) the problem must move and compute at least."""
    def nvfp4_bytes(rows, k):
        return rows * k // 2 + rows * k // 16

    if problem == "nvfp4_group_gemm":
        groups = list(zip(spec["m"], spec["n"], spec["k"]))
        moved = sum(nvfp4_bytes(m, k) + nvfp4_bytes(n, k) + 2 * m * n for m, n, k in groups)
        return moved, sum(2 * m * n * k for m, n, k in groups)
    m, k, l = spec["m"], spec["k"], spec["l"]
    n = 1 if problem == "nvfp4_gemv" else spec["n"]
    products = 2 if problem == "nvfp4_dual_gemm" else 1
    moved = l * (nvfp4_bytes(m, k) + products * nvfp4_bytes(n, k) + 2 * m * n)
    return moved, l * products * 2 * m * n * k


SETS = 15  # the harness's NUM_ITERATIONS_PER_BENCHMARK


def time_calls(fn, reps: int) -> float:
    """Median µs of ``reps`` calls, each after an L2 flush, each timed alone."""
    return time_sets([()], lambda _: fn(), reps)


def time_sets(sets, fn, reps: int) -> float:
    """Median over ``reps`` runs of µs per call of ``fn(data)`` over all ``sets`` back to back
    after one L2 flush."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times = []
    for rep in range(reps + 2):
        torch.cuda.synchronize()
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for data in sets:
            fn(data)
        end.record()
        torch.cuda.synchronize()
        if rep >= 2:
            times.append(start.elapsed_time(end) * 1000.0 / len(sets))
    return statistics.median(times)


def measured_rates() -> tuple:
    """(copy bandwidth in bytes/µs, fp16 tensor rate in FLOP/µs), measured now."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = time_calls(lambda: dst.copy_(src), 10)
    a = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
    mm_us = time_calls(lambda: a @ a, 10)
    return 2 * src.numel() / copy_us, 2 * 8192**3 / mm_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    directory = os.environ.get("NVFP4_GPUMODE_DIR")
    if not torch.cuda.is_available() or not directory:
        print("needs a CUDA device and NVFP4_GPUMODE_DIR (scripts/fetch-gpumode.sh): nothing to time")
        return
    arch, name, sms = nvfp4.device_info()
    bandwidth, rate = measured_rates()
    print(f"device: {name} ({arch}, {sms} SMs); torch {torch.__version__}; "
          f"copy {bandwidth / 1e6:.2f} TB/s, fp16 mm {rate / 1e6:.0f} TFLOP/s (measured)")
    print("| problem | shape | ours µs | floor µs | ours / floor |")
    print("| --- | --- | --- | --- | --- |")
    for problem, adapter in ADAPTERS.items():
        reference = load_reference(Path(directory), problem)
        ratios = []
        for spec in benchmark_shapes(Path(directory), problem):
            sets = [reference.generate_input(**dict(spec, seed=spec["seed"] + 42 * (i + 1))) for i in range(SETS)]
            ours = time_sets(sets, adapter, args.reps)
            del sets
            moved, flops = work(problem, spec)
            floor = max(moved / bandwidth, flops / rate)
            ratios.append(ours / floor)
            shape = {key: value for key, value in spec.items() if key != "seed"}
            print(f"| {problem} | {shape} | {ours:.1f} | {floor:.1f} | {ours / floor:.2f} |")
        geomean = torch.tensor(ratios).log().mean().exp().item()
        print(f"| {problem} | geomean | | | {geomean:.2f} |")


if __name__ == "__main__":
    main()
