"""Python baselines for `cargo bench --bench dual_gemm`.

* Always: PyTorch `silu(a @ b1.T) * (a @ b2.T)` in bf16 (random bf16 inputs).
* Compute capability 10.x only: two `torch._scaled_mm` NVFP4 calls (fp32 out) + SiLU·mul → fp16,
  the hackathon's cuBLAS baseline, on random NVFP4 inputs with blocked scales.
* When NVFP4_CUTE_DSL_DIR names a directory holding the hackathon's `submission.py` (and the
  `task.py`/`utils.py` it imports), on 10.x: its `custom_kernel(data)` on inputs built in the
  reference harness's format (a, b1, b2, plain scales, permuted scales, c).

The two 10.x modes follow the public reference harness (gpu-mode/reference-kernels,
problems/nvidia/nvfp4_dual_gemm/reference.py) and have NOT been run here: no B200 was available.

Same method as the Rust bench (the reference harness, docs/format.md): per shape, `--sets` distinct random
input sets; before each timed batch the L2 is flushed (a 256 MiB zero fill); one CUDA event pair
around one call per input set, back to back (eager mode, launch cost included); batches repeat
until the relative standard error of the mean is below 0.5 % (at least 5 batches) or 3 s pass.

Prints one line per shape: "MxNxK <bf16 µs> <scaled_mm µs or -> <cute_dsl µs or ->".
"""

import argparse
import importlib.util
import os
import sys

import torch

# The Rust benches' timing method, shared with the other baseline script.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import time_calls  # noqa: E402


def bf16_baseline(m, n, k, sets):
    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    inputs = [
        tuple(torch.randn(rows, k, device="cuda", dtype=torch.bfloat16, generator=gen) for rows in (m, n, n))
        for _ in range(sets)
    ]

    def call(i):
        a, b1, b2 = inputs[i]
        return torch.nn.functional.silu(a @ b1.T) * (a @ b2.T)

    return time_calls(call, sets, 3.0)[0]


def nvfp4_operand(rows, k):
    """Random packed fp4 data (rows, k/2) and blocked e4m3 scales, as the harness feeds _scaled_mm."""
    data = torch.randint(-128, 128, (rows, k // 2), dtype=torch.int8, device="cuda").view(torch.float4_e2m1fn_x2)
    blocks = -(-rows // 128) * -(-(k // 16) // 4)
    scales = (torch.rand(blocks * 512, device="cuda") + 0.01).to(torch.float8_e4m3fn)
    return data, scales


def scaled_mm_baseline(m, n, k, sets):
    inputs = [(nvfp4_operand(m, k), nvfp4_operand(n, k), nvfp4_operand(n, k)) for _ in range(sets)]

    def call(i):
        (a, sa), (b1, sb1), (b2, sb2) = inputs[i]
        gate = torch._scaled_mm(a, b1.transpose(0, 1), sa, sb1, bias=None, out_dtype=torch.float32)
        up = torch._scaled_mm(a, b2.transpose(0, 1), sa, sb2, bias=None, out_dtype=torch.float32)
        return (torch.nn.functional.silu(gate) * up).to(torch.float16)

    return time_calls(call, sets, 3.0)[0]


def harness_input(m, n, k):
    """One input tuple in the reference harness's format (L = 1)."""
    l, sf_k = 1, k // 16

    def packed(rows):
        return torch.randint(-128, 128, (l, rows, k // 2), dtype=torch.int8, device="cuda").permute(1, 2, 0).view(
            torch.float4_e2m1fn_x2
        )

    def scales(rows):
        plain = (torch.rand((l, rows, sf_k), device="cuda") + 0.01).to(torch.float8_e4m3fn).permute(1, 2, 0)
        rest_mn, rest_k = -(-rows // 128), -(-sf_k // 4)
        blocked = (torch.rand((l, rest_mn, rest_k, 32, 4, 4), device="cuda") + 0.01).to(torch.float8_e4m3fn)
        return plain, blocked.permute(3, 4, 1, 5, 2, 0)

    (sa, sa_p), (sb1, sb1_p), (sb2, sb2_p) = scales(m), scales(n), scales(n)
    c = torch.empty((l, m, n), dtype=torch.float16, device="cuda").permute(1, 2, 0)
    return (packed(m), packed(n), packed(n), sa, sb1, sb2, sa_p, sb1_p, sb2_p, c)


def cute_dsl_baseline(directory, m, n, k, sets):
    sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("cute_dsl_submission", os.path.join(directory, "submission.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inputs = [harness_input(m, n, k) for _ in range(sets)]
    return time_calls(lambda i: module.custom_kernel(inputs[i]), sets, 3.0)[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", type=int, default=50)
    parser.add_argument("--shapes", required=True, help="comma-separated MxNxK")
    args = parser.parse_args()
    blackwell = torch.cuda.get_device_capability()[0] == 10
    cute_dsl_dir = os.environ.get("NVFP4_CUTE_DSL_DIR")
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        bf16 = bf16_baseline(m, n, k, args.sets)
        scaled = f"{scaled_mm_baseline(m, n, k, args.sets):.3f}" if blackwell else "-"
        cute = f"{cute_dsl_baseline(cute_dsl_dir, m, n, k, args.sets):.3f}" if blackwell and cute_dsl_dir else "-"
        print(f"{shape} {bf16:.3f} {scaled} {cute}", flush=True)


if __name__ == "__main__":
    main()
