"""The GPU MODE adapters (``nvfp4.gpumode``: ``gemv``, ``gemm``, ``dual_gemm``, ``group_gemm``)
against each problem's own input generator and correctness check (gpu-mode/reference-kernels,
``problems/nvidia/nvfp4_*``: rtol = atol = 1e-3 against its reference), on every test and
benchmark shape of its ``task.yml``, each with three seeds, run the way the harness's
``eval.py`` runs a submission: the adapter gets a clone of the inputs, the check the originals.

The harness's files are not part of this repository: ``scripts/fetch-gpumode.sh DIR`` downloads
them (a pinned revision) and ``NVFP4_GPUMODE_DIR=DIR`` points the tests there (else they skip
with that reason). On Hopper the reference's ``torch._scaled_mm`` (fp4) does not run, so it is
replaced by an exact emulation: both operands decoded (every e2m1 · e4m3 product is exact in
float32), the products summed in float64 and rounded to the output type.
"""

import importlib
import json
import os
import sys
from pathlib import Path

import pytest
import torch

import nvfp4.gpumode
from nvfp4_decode import dequant

ADAPTERS = {
    "nvfp4_gemv": nvfp4.gpumode.gemv,
    "nvfp4_gemm": nvfp4.gpumode.gemm,
    "nvfp4_dual_gemm": nvfp4.gpumode.dual_gemm,
    "nvfp4_group_gemm": nvfp4.gpumode.group_gemm,
}
# The task's seed and two more.
SEEDS = (None, 2024, 777)
DIRECTORY = os.environ.get("NVFP4_GPUMODE_DIR")


def task_shapes(problem: str) -> list:
    """The ``tests`` and ``benchmarks`` entries of a problem's ``task.yml`` (one flow mapping
    a line, JSON syntax), tagged with their section."""
    shapes, section = [], None
    for line in (Path(DIRECTORY) / problem / "task.yml").read_text().splitlines():
        if line and not line[0].isspace():
            section = line.rstrip(":").strip()
        elif section in ("tests", "benchmarks") and line.strip().startswith("- {"):
            shapes.append((section, json.loads(line.strip()[2:])))
    if not shapes:
        raise ValueError(f"no test or benchmark shapes found in {problem}/task.yml")
    return shapes


def cases():
    if not DIRECTORY:
        reason = "NVFP4_GPUMODE_DIR is not set (see scripts/fetch-gpumode.sh)"
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason=reason))]
    params = []
    for problem in ADAPTERS:
        for index, (section, spec) in enumerate(task_shapes(problem)):
            for seed in SEEDS:
                spec_seeded = dict(spec, seed=spec["seed"] if seed is None else seed)
                label = f"{problem}-{section}{index}-seed{spec_seeded['seed']}"
                params.append(pytest.param(problem, section, spec_seeded, id=label))
    return params


def emulated_scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.float32, **_):
    """``torch._scaled_mm`` for fp4 ``a`` (m × k/2) and ``b`` (k/2 × n, a transposed row-major
    n × k/2) with blocked scales, computed exactly."""
    assert bias is None
    a_values = dequant(a.contiguous().view(torch.uint8), scale_a)
    b_values = dequant(b.t().contiguous().view(torch.uint8), scale_b)
    return (a_values.double() @ b_values.double().T).to(out_dtype)


def clone(data):
    """The harness's ``_clone_data``: every tensor cloned (strides kept), containers rebuilt."""
    if isinstance(data, (tuple, list)):
        return type(data)(clone(x) for x in data)
    return data.clone() if isinstance(data, torch.Tensor) else data


def harness(monkeypatch, problem: str):
    """The problem's ``reference`` module, imported as the harness does (its ``task`` and
    ``utils`` beside it; ``utils`` from the parent directory where the problem has none)."""
    for name in ("reference", "task", "utils"):
        sys.modules.pop(name, None)
    monkeypatch.syspath_prepend(DIRECTORY)
    monkeypatch.syspath_prepend(str(Path(DIRECTORY) / problem))
    return importlib.import_module("reference")


def poison(outputs):
    for c in outputs if isinstance(outputs, list) else [outputs]:
        c.fill_(float("nan"))


@pytest.mark.parametrize("problem, section, spec", cases())
def test_the_adapter_passes_the_harness_check(cuda, monkeypatch, problem, section, spec):
    reference = harness(monkeypatch, problem)
    monkeypatch.setattr(torch, "_scaled_mm", emulated_scaled_mm)
    data = reference.generate_input(**spec)
    given = clone(data)
    if problem == "nvfp4_group_gemm":
        poison([c for _, _, c in given[0]])
        operands = [t for group in given[0] for t in group[:2]] + [t for pair in given[2] for t in pair]
        expected_outputs = [c for _, _, c in given[0]]
    else:
        poison(given[-1])
        operands = [t for t in given[:-1] if t.is_cuda]
        expected_outputs = [given[-1]]
    before = [t.clone() for t in operands]
    out = ADAPTERS[problem](given)
    torch.cuda.synchronize()
    outputs = out if isinstance(out, list) else [out]
    assert [c.data_ptr() for c in outputs] == [c.data_ptr() for c in expected_outputs], "c is written in place"
    for operand, copy in zip(operands, before):
        assert torch.equal(operand.view(torch.uint8), copy.view(torch.uint8)), "the inputs are not written"
    ok, message = reference.check_implementation(data, out)
    assert ok, f"{section} {spec}: {message}"
