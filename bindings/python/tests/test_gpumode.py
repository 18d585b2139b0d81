"""The GPU MODE adapter (``nvfp4.gpumode.custom_kernel``) against the harness's own input
generator and correctness check (gpu-mode/reference-kernels, ``problems/nvidia/
nvfp4_dual_gemm/``: rtol = atol = 1e-3 against its reference), on its test and benchmark shapes.

The harness's files are not part of this repository: point ``NVFP4_GPUMODE_DIR`` at a directory
holding its ``reference.py``, ``task.py`` and ``utils.py`` (else the test skips with that reason).
On Hopper the reference's ``torch._scaled_mm`` (fp4) does not run, so it is replaced by an exact
emulation: both operands decoded (every e2m1 · e4m3 product is exact in float32), the products
summed in float64 and rounded to float32.
"""

import importlib
import os
import sys

import pytest
import torch

import nvfp4.gpumode
from nvfp4_decode import dequant

# task.yml: tests, then benchmarks (l = 1, seed 1111 throughout).
SHAPES = [
    (1536, 512, 7168), (256, 512, 256), (3072, 1024, 1536), (7168, 1024, 256), (7168, 2304, 2048),
    (4608, 384, 7168), (7168, 384, 2304), (512, 768, 7168), (4096, 768, 512),
    (256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168),
]


def emulated_scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.float32, **_):
    """``torch._scaled_mm`` for fp4 ``a`` (m × k/2) and ``b`` (k/2 × n, a transposed row-major
    n × k/2) with blocked scales, computed exactly."""
    assert bias is None
    a_values = dequant(a.contiguous().view(torch.uint8), scale_a)
    b_values = dequant(b.t().contiguous().view(torch.uint8), scale_b)
    return (a_values.double() @ b_values.double().T).to(out_dtype)


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_the_adapter_passes_the_harness_check(cuda, monkeypatch, m, n, k):
    directory = os.environ.get("NVFP4_GPUMODE_DIR")
    if not directory:
        pytest.skip("NVFP4_GPUMODE_DIR is not set (the harness's reference.py, task.py, utils.py)")
    monkeypatch.syspath_prepend(directory)
    sys.modules.pop("reference", None)
    harness = importlib.import_module("reference")
    monkeypatch.setattr(torch, "_scaled_mm", emulated_scaled_mm)
    data = harness.generate_input(m=m, n=n, k=k, l=1, seed=1111)
    c = data[-1]
    c.fill_(float("nan"))
    out = nvfp4.gpumode.custom_kernel(data)
    assert out.data_ptr() == c.data_ptr(), "C is returned in place, not copied"
    ok, message = harness.check_implementation(data, out)
    assert ok, message
