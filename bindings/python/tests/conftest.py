"""Shared fixtures: the CUDA device for GPU tests, or a skip with its reason (a failure when
NVFP4_REQUIRE_GPU=1, as for the Rust tests)."""

import os

import pytest
import torch


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        reason = "no CUDA device visible to PyTorch"
        if os.environ.get("NVFP4_REQUIRE_GPU") == "1":
            pytest.fail(f"NVFP4_REQUIRE_GPU=1 but {reason}")
        pytest.skip(reason)
    return torch.device("cuda", torch.cuda.current_device())
