"""PyTorch baseline for `cargo bench --bench dual_gemm`: times silu(a @ b1.T) * (a @ b2.T) in bf16.

Same method as the Rust bench (task.md's reference harness): per shape, `--sets` distinct random
input sets; before each timed batch the L2 is flushed (a 256 MiB zero fill); one CUDA event pair
around one call per input set, back to back (eager mode, launch cost included); batches repeat
until the relative standard error of the mean is below 0.5 % (at least 5 batches) or 3 s pass.

Prints one line per shape: "MxNxK <mean µs> <relative error>".
"""

import argparse
import math
import time

import torch


def time_shape(m, n, k, sets):
    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    inputs = [
        tuple(torch.randn(rows, k, device="cuda", dtype=torch.bfloat16, generator=gen) for rows in (m, n, n))
        for _ in range(sets)
    ]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def call(i):
        a, b1, b2 = inputs[i]
        return torch.nn.functional.silu(a @ b1.T) * (a @ b2.T)

    for i in range(sets):
        call(i)
    samples = []
    started = time.time()
    while True:
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(sets):
            call(i)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / sets)
        n_s = len(samples)
        mean = sum(samples) / n_s
        var = sum((s - mean) ** 2 for s in samples) / max(n_s - 1, 1)
        rel = math.sqrt(var / n_s) / mean
        if n_s >= 5 and (rel < 0.005 or time.time() - started > 3.0) or n_s >= 1000:
            return mean, rel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", type=int, default=50)
    parser.add_argument("--shapes", required=True, help="comma-separated MxNxK")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        mean, rel = time_shape(m, n, k, args.sets)
        print(f"{shape} {mean:.3f} {rel:.5f}", flush=True)


if __name__ == "__main__":
    main()
