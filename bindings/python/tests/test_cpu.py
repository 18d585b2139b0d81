"""CPU-side tests of the package (no GPU needed): import, the native module's host functions,
and argument validation (dtype, shape and stride errors name the argument and the rule)."""

import struct

import pytest
import torch

import nvfp4
from nvfp4 import _nvfp4


def packed(rows, k, dtype=torch.uint8, device="cpu"):
    return torch.zeros((rows, k // 2), dtype=dtype, device=device)


def scales(rows, k, device="cpu"):
    return torch.zeros(nvfp4.scale_shape(rows, k), dtype=torch.float8_e4m3fn, device=device)


def test_the_package_imports_and_reports_the_driver():
    assert isinstance(_nvfp4.driver_available(), bool)
    for name in nvfp4.__all__:
        assert callable(getattr(nvfp4, name))
    for op in ["quantize", "dequantize", "dual_gemm", "gemm", "grouped", "dual_gemm_out", "grouped_out", "dual_gemm_nvfp4", "dual_gemm_nvfp4_out", "grouped_separate_out", "grouped_nvfp4", "grouped_nvfp4_out", "swiglu_mlp", "swiglu_mlp_out"]:
        assert hasattr(torch.ops.nvfp4, op)


def test_scale_shape_matches_the_blocked_layout_size():
    for rows, k in [(1, 16), (7, 64), (128, 256), (130, 320), (300, 2880)]:
        r, c = nvfp4.scale_shape(rows, k)
        assert r * c == _nvfp4.scale_bytes(rows, k)
        assert r % 128 == 0 and c % 4 == 0


def test_host_quantizer_returns_the_layouts_sizes_and_rejects_bad_input():
    rows, k = 3, 64
    values = torch.linspace(-6, 6, rows * k, dtype=torch.float32)
    data, sf, global_scale = _nvfp4.quantize_host(struct.pack(f"<{rows * k}f", *values.tolist()), rows, k, None)
    assert len(data) == rows * k // 2 and len(sf) == _nvfp4.scale_bytes(rows, k) and global_scale is None
    # 6.0 is e2m1 code 7 (scale 1): the last element's nibble.
    assert data[-1] >> 4 == 7
    with pytest.raises(ValueError, match="rows × k"):
        _nvfp4.quantize_host(b"\0" * 12, rows, k, None)
    with pytest.raises(ValueError, match="global"):
        _nvfp4.quantize_host(bytes(4 * rows * k), rows, k, -1.0)


@pytest.mark.parametrize(
    "call, arg, rule",
    [
        (lambda: nvfp4.dual_gemm(packed(8, 64, torch.float16), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64)), "`a`", "uint8 or float4"),
        (lambda: nvfp4.dual_gemm(packed(8, 64)[:, :16], packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64)), "`a`", "k/2|contiguous"),
        (lambda: nvfp4.dual_gemm(packed(8, 64).t(), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64)), "`a`", "contiguous"),
        (lambda: nvfp4.dual_gemm(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64)), "`a`", "CUDA"),
        (lambda: nvfp4.gemm(packed(8, 64), packed(64, 128), scales(8, 64), scales(64, 64)), "`b`", "k/2"),
        (lambda: nvfp4.gemm(torch.zeros(8, 32, 1, dtype=torch.uint8), packed(64, 64), scales(8, 64), scales(64, 64)), "`a`", "2-D"),
        (lambda: nvfp4.quantize(torch.zeros(4, 20)), "`x`", "multiple of 16"),
        (lambda: nvfp4.quantize(torch.zeros(4, 32, dtype=torch.int32)), "`x`", "float32, float16 or bfloat16"),
        (lambda: nvfp4.quantize(torch.zeros(32, 4).t()), "`x`", "contiguous"),
        (lambda: nvfp4.quantize(torch.zeros(4, 32)), "`x`", "CUDA"),
        (lambda: nvfp4.dequantize(packed(4, 64), torch.zeros(128, 4, dtype=torch.int8)), "`scales`", "float8_e4m3fn or uint8"),
        (lambda: nvfp4.dequantize(packed(4, 64), torch.zeros(64, 4, dtype=torch.uint8)), "`scales`", "swizzled form"),
        (lambda: nvfp4.dequantize(packed(4, 64), torch.zeros(4, 128, dtype=torch.uint8).t()), "`scales`", "contiguous"),
        (lambda: nvfp4.dual_gemm(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64), 1e39), "`alpha1`", "finite and positive"),
        (lambda: nvfp4.gemm(packed(8, 64), packed(64, 64), scales(8, 64), scales(64, 64), 1e-46), "`alpha`", "finite and positive"),
        (lambda: nvfp4.dual_gemm(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64), 1.0, 2e30), "`alpha2`", "2^28"),
        (lambda: nvfp4.gemm(packed(8, 64), packed(64, 64), scales(8, 64), scales(64, 64), None), "`alpha`", "number"),
        (lambda: nvfp4.grouped_gemm(packed(8, 64), torch.zeros(2, 64, 32, dtype=torch.uint8), scales(8, 64), torch.zeros(2, 128, 4, dtype=torch.uint8), torch.zeros(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int32)), "`row_offsets`", "int32"),
        (lambda: nvfp4.grouped_gemm(packed(8, 64), torch.zeros(2, 64, 32, dtype=torch.uint8), scales(8, 64), torch.zeros(2, 64, 4, dtype=torch.uint8), torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int32)), "`b_sf`", "shape"),
        (lambda: nvfp4.dequantize(torch.zeros(64, dtype=torch.uint8), scales(1, 128)), "`data`", "2-D|rows"),
        (lambda: nvfp4.grouped_gemm(packed(8, 64), torch.zeros(2, 64, 32, dtype=torch.uint8), scales(8, 64), torch.zeros((2,) + nvfp4.scale_shape(64, 64), dtype=torch.uint8), torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int32), [1.0, 1.0]), "`alpha`", "torch.Tensor"),
        (lambda: nvfp4.grouped_gemm(packed(8, 64), torch.zeros(2, 64, 32, dtype=torch.uint8), scales(8, 64), torch.zeros((2,) + nvfp4.scale_shape(64, 64), dtype=torch.uint8), torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int32), 0.5), "`alpha`", "torch.Tensor"),
        (lambda: nvfp4.grouped_dual_gemm(packed(8, 64), torch.zeros(2, 128, 32, dtype=torch.uint8), None, scales(8, 64), torch.zeros((2,) + nvfp4.scale_shape(128, 64), dtype=torch.uint8), None, torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int32)), "`b3`", "grouped_dual_gemm_w13"),
        (lambda: nvfp4.dual_gemm(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64), None), "`alpha1`", "number"),
        (lambda: nvfp4.dual_gemm_nvfp4(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64), global_scale=0.0), "`global_scale`", "finite and positive"),
        (lambda: nvfp4.dual_gemm_nvfp4(packed(8, 64), packed(64, 64), packed(64, 64), scales(8, 64), scales(64, 64), scales(64, 64), global_scale=1.0, out=(packed(8, 32), scales(8, 64))), "`data`", "shape|k/2|rows"),
        (lambda: nvfp4.swiglu_mlp(torch.zeros(4, 64, dtype=torch.bfloat16), packed(128, 64), packed(128, 64), packed(96, 128), scales(128, 64), scales(128, 64), scales(96, 128), x_scale=0.1, h_scale=0.1), "`w2`", "64 rows"),
        (lambda: nvfp4.swiglu_mlp(torch.zeros(4, 64, dtype=torch.bfloat16), packed(128, 64), packed(128, 64), packed(64, 128), scales(128, 64), scales(128, 64), scales(64, 128), x_scale=0.1, h_scale=0.0), "`h_scale`", "finite and positive"),
        (lambda: nvfp4.swiglu_mlp(torch.zeros(4, 64, dtype=torch.bfloat16), packed(128, 64), packed(64, 64), packed(64, 128), scales(128, 64), scales(128, 64), scales(64, 128), x_scale=0.1, h_scale=0.1), "`w3`", "128 rows"),
        (lambda: nvfp4.swiglu_mlp(torch.zeros(4, 64, dtype=torch.bfloat16), packed(128, 64), packed(128, 64), packed(64, 128), scales(128, 64), scales(128, 64), scales(64, 128), x_scale=0.1, h_scale=0.1), "`x`", "CUDA"),
        (lambda: nvfp4.grouped_gemm_separate([packed(8, 64)], [packed(128, 64), packed(128, 64)], [scales(8, 64)], [scales(128, 64)] * 2), "`a`", "list of 2"),
        (lambda: nvfp4.grouped_gemm_separate([packed(8, 64)], [packed(128, 128)], [scales(8, 64)], [scales(128, 128)]), "`a[0]`", "k/2"),
        (lambda: nvfp4.grouped_gemm_separate([packed(8, 64)], [packed(128, 64)], [None], [scales(128, 64)]), "`a[0]`", "together"),
        (lambda: nvfp4.grouped_gemm_separate([packed(8, 64)], [packed(128, 64)], [scales(8, 64)], [scales(128, 64)], [-1.0]), "`alpha[0]`", "finite and positive"),
        (lambda: nvfp4.grouped_gemm_separate([packed(8, 64)], [packed(128, 64)], [scales(8, 64)], [scales(128, 64)]), "`", "CUDA"),
        (lambda: nvfp4.grouped_gemm_separate([], [], [], []), "`b`", "non-empty"),
        (lambda: nvfp4.grouped_dual_gemm_separate([packed(8, 64)], [packed(128, 64)], [packed(64, 64)], [scales(8, 64)], [scales(128, 64)], [scales(64, 64)]), "`b3[0]`", "128 rows"),
        (lambda: nvfp4.batched_gemm(packed(8, 64), packed(64, 64), scales(8, 64), scales(64, 64)), "`a`", "3-D"),
        (lambda: nvfp4.gemv(packed(64, 64), scales(64, 64), packed(1, 64), scales(1, 64), out=torch.zeros(1, 64, dtype=torch.float16)), "`out`", "1-D"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_the_argument_and_the_rule(call, arg, rule):
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert arg in message, message
    assert any(r in message for r in rule.split("|")), message


def harness_tensor(shape_lmk, dtype=torch.uint8):
    """A GPU MODE harness operand: ``(l, rows, cols)`` contiguous, permuted to ``(rows, cols, l)``."""
    l, rows, cols = shape_lmk
    return torch.arange(l * rows * cols, dtype=torch.int64).remainder(251).to(dtype).reshape(l, rows, cols).permute(1, 2, 0)


def test_gpumode_batch_metadata_is_the_metadata_of_the_batch_view():
    from nvfp4.gpumode import _Batched

    for l, rows, cols in [(1, 128, 64), (4, 256, 3584), (8, 7, 32)]:
        t = harness_tensor((l, rows, cols))
        described = _Batched(t)
        for i in range(l):
            view = t[:, :, i]
            assert described.matrix(i) == (view.data_ptr(), tuple(view.shape), view.stride(), str(view.dtype), -1)
    # The 6-D permuted scale view: batch i is its last-dimension slice.
    l, rest_m, rest_k = 3, 2, 5
    scales = torch.zeros((l, rest_m, rest_k, 32, 4, 4), dtype=torch.uint8).permute(3, 4, 1, 5, 2, 0)
    described = _Batched(scales)
    for i in range(l):
        view = scales[..., i : i + 1]
        assert described.scales(i) == (view.data_ptr(), tuple(view.shape), view.stride(), str(view.dtype), -1)


def test_checkpoint_scales_permute_into_the_blocked_layout_and_back():
    import nvfp4.checkpoint as ckpt

    for rows, k in [(1, 16), (130, 320), (256, 64), (300, 2880)]:
        codes = torch.randint(0, 127, (rows, k // 16), dtype=torch.uint8)
        blocked = ckpt.to_blocked(codes.view(torch.float8_e4m3fn))
        assert tuple(blocked.shape) == nvfp4.scale_shape(rows, k)
        flat = blocked.view(torch.uint8).reshape(-1)
        k_blocks = (k + 63) // 64
        # docs/format.md: byte offset of (row, scale column c) in the blocked layout.
        for row, c in [(0, 0), (rows - 1, k // 16 - 1), (rows // 2, (k // 16) // 2)]:
            offset = ((row // 128) * k_blocks + c // 4) * 512 + (row % 32) * 16 + ((row // 32) % 4) * 4 + c % 4
            assert flat[offset] == codes[row, c]
        assert int(flat.sum()) == int(codes.sum()), "padding is zero and every code is kept"
        assert torch.equal(ckpt.from_blocked(blocked, rows, k).view(torch.uint8), codes)


def test_checkpoint_loader_rejects_malformed_layers_with_value_errors():
    import nvfp4.checkpoint as ckpt

    good = {
        "l.weight": torch.zeros(128, 32, dtype=torch.uint8),
        "l.weight_scale": torch.zeros(128, 4, dtype=torch.uint8).view(torch.float8_e4m3fn),
        "l.weight_scale_2": torch.tensor(0.5),
        "l.input_scale": torch.tensor(0.25),
    }
    layer = ckpt.load_linear(good, "l")
    assert (layer.global_scale, layer.input_scale, layer.format) == (0.5, 0.25, ckpt.MODELOPT)
    cases = [
        ({"l.weight_scale_2": torch.tensor(0.0)}, "finite, positive"),
        ({"l.input_scale": torch.tensor(float("inf"))}, "finite, positive"),
        ({"l.weight_scale_2": torch.tensor(0.5, dtype=torch.float64)}, "float32"),
        ({"l.weight": torch.zeros(128, 12, dtype=torch.uint8)}, "multiple of 16"),
        ({"l.weight_scale": torch.zeros(128, 3, dtype=torch.uint8).view(torch.float8_e4m3fn)}, "weight_scale"),
    ]
    for change, rule in cases:
        with pytest.raises(ValueError, match=rule):
            ckpt.load_linear({**good, **change}, "l")
    with pytest.raises(ValueError, match="no NVFP4 weight"):
        ckpt.load_linear({"l.weight_scale_2": torch.tensor(0.5)}, "l")
    packed = {"l.weight_packed": good["l.weight"], "l.weight_scale": good["l.weight_scale"],
              "l.weight_global_scale": torch.tensor([1e-45])}
    with pytest.raises(ValueError, match="finite, positive"):
        ckpt.load_linear(packed, "l")


def test_quantize_grouped_rejects_a_short_scale_layout_and_bad_source_rows():
    """Checked before anything runs (the placement itself is the GPU kernel's: test_nn.py)."""
    import nvfp4.nn

    sizes, k = [3, 0, 130, 1], 64
    rows = sum(sizes) + 2
    row_offsets = torch.tensor([0, 3, 3, 133, 134], dtype=torch.int32)
    scale_offsets = torch.tensor([0, 128, 128, 384, 512], dtype=torch.int32)
    scale_rows = nvfp4.nn.grouped_scale_rows(rows, len(sizes))
    with pytest.raises(ValueError, match="scale_rows"):
        nvfp4.nn.quantize_grouped(torch.zeros(rows, k), row_offsets, scale_offsets, 128, None)
    source = torch.tensor([(5 * i) % 40 for i in range(rows)])
    for bad in (source.float(), source[None, :]):
        with pytest.raises(ValueError, match="source_rows"):
            nvfp4.nn.quantize_grouped(torch.zeros(40, k), row_offsets, scale_offsets, scale_rows, None,
                                      source_rows=bad)
