"""PyTorch peer for `cargo bench --bench grouped`: one `torch._grouped_mm` bf16 call per case.

Usage: python3 benches/torch_grouped_baseline.py CASES.json

CASES.json (written by the Rust bench) lists cases {name, dual, n, k, sizes: [[M_g per group]
per input set]}. Per case: random bf16 tokens (the sum of a set's sizes rows, sorted by group)
and weights (G × N × K, or G × 2N × K with gate rows then up rows for `dual`), the group ends as
an int32 offsets tensor on the GPU per set; one call is `torch._grouped_mm(a, w.transpose(-2, -1),
offs=ends)`, followed for `dual` by `silu(gate) * up` over the two halves of its output.

Method (the Rust bench's, benches/common): per case, one call per input set back to back
between two CUDA events, the L2 flushed (a 256 MiB zero fill) before each batch, batches until
the relative standard error of the mean is below 0.5 % (at least 5) or 2 s pass. Weights repeat
over sets only when the sets' copies would exceed 8 GiB (each copy then far larger than the L2).

Prints one line per case: "<name> <µs>".
"""

import json
import os
import sys

import torch

# The Rust benches' timing method, shared with the other baseline script.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import time_calls  # noqa: E402

COPY_BUDGET_BYTES = 8 << 30


def bench_case(case):
    n, k, dual = case["n"], case["k"], case["dual"]
    sizes = case["sizes"]
    groups, sets = len(sizes[0]), len(sizes)
    rows = 2 * n if dual else n
    gen = torch.Generator(device="cuda").manual_seed(1)
    weight_bytes = groups * rows * k * 2
    copies = max(1, min(sets, COPY_BUDGET_BYTES // weight_bytes))
    weights = [
        torch.randn(groups, rows, k, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(copies)
    ]
    tokens = [sum(s) for s in sizes]
    token_copies = max(1, min(sets, COPY_BUDGET_BYTES // max(1, max(tokens) * k * 2)))
    a = [torch.randn(max(tokens), k, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(token_copies)]
    ends = [torch.tensor(s, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32) for s in sizes]

    def call(i):
        out = torch._grouped_mm(
            a[i % token_copies][: tokens[i]], weights[i % copies].transpose(-2, -1), offs=ends[i]
        )
        if dual:
            gate, up = out[:, :n], out[:, n:]
            out = torch.nn.functional.silu(gate) * up
        return out

    result = time_calls(call, sets, 2.0)[0]
    del weights, a
    torch.cuda.empty_cache()
    return result


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for case in cases:
        print(f"{case['name']} {bench_case(case):.3f}", flush=True)


if __name__ == "__main__":
    main()
