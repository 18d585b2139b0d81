"""NVFP4 GEMMs for PyTorch, with GPU kernels written in Rust (the `nvfp4` library).

NVFP4 operands are e2m1 values packed two to a byte (low nibble first; ``torch.uint8`` or
``torch.float4_e2m1fn_x2``) with one e4m3 scale per 16 K-elements (``torch.float8_e4m3fn`` or
``torch.uint8``) in the cuBLAS/CUTLASS *blocked* layout: 128-row × 64-K atoms of 512 bytes.
Scales are accepted as the 2-D swizzled form (shape ``(ceil(rows/128)·128, ceil(k/64)·4)``,
contiguous, whose bytes are the blocked layout, as vLLM's ``scaled_fp4_quant`` returns them)
or as the GPU MODE harness's 6-D permuted view of the same bytes (see ``nvfp4.gpumode``).

Global scales: **ours multiply on dequantization** (value = e2m1 · e4m3 · global). vLLM's and
FlashInfer's quantizers take the reciprocal (their ``global_scale`` divides: pass ``1 / theirs``
here), and their GEMMs' ``alpha`` is the product of the two operands' dequantization scales, as
ours is.

Ops (each also a PyTorch custom op under ``torch.ops.nvfp4``, with an out-variant, so they work
under ``torch.compile`` and in CUDA graphs): :func:`quantize`, :func:`dequantize`,
:func:`dual_gemm` (``silu(α1·a·b1ᵀ) ⊙ (α2·a·b2ᵀ)``), :func:`gemm` (``α·a·bᵀ``),
:func:`grouped_gemm` and :func:`grouped_dual_gemm` (Mixture-of-Experts, contiguous convention).
Every launch runs on the tensors' device and PyTorch's current stream, allocates nothing but
its output (through PyTorch) and does not synchronize. Bad input raises ``ValueError`` naming
the argument and the rule.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _nvfp4

__all__ = [
    "quantize",
    "dequantize",
    "dual_gemm",
    "gemm",
    "grouped_gemm",
    "grouped_dual_gemm",
    "scale_shape",
    "device_info",
]

_FP4 = getattr(torch, "float4_e2m1fn_x2", None)
_FP8 = torch.float8_e4m3fn
_PACKED_DTYPES = tuple(d for d in (torch.uint8, _FP4) if d is not None)
_SCALE_DTYPES = (torch.uint8, _FP8)
_VALUE_ELEMENTS = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _fail(arg: str, rule: str, got) -> None:
    raise ValueError(f"`{arg}`: {rule} (got {got})")


def _round_up(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def scale_shape(rows: int, k: int) -> tuple:
    """The 2-D swizzled shape of the blocked scales of a ``rows × k`` NVFP4 matrix."""
    return (_round_up(rows, 128), _round_up(k // 16, 4))


def _device(*named) -> torch.device:
    """Checks that every ``(name, tensor)`` (None: skipped) is on one CUDA device (after the
    structural checks, so that dtype, shape and stride errors come first); returns it."""
    device = None
    for arg, t in named:
        if t is None:
            continue
        if t.device.type != "cuda":
            _fail(arg, "must be a CUDA tensor", t.device)
        if device is None:
            device = t.device
        elif t.device != device:
            _fail(arg, f"must be on {device}, as the first operand", t.device)
    return device


def _packed(arg: str, t: torch.Tensor, rows: Optional[int], k: Optional[int]):
    """Checks packed e2m1 data (``rows × k/2`` bytes, row-major); returns ``(rows, k)``."""
    if not isinstance(t, torch.Tensor):
        _fail(arg, "must be a torch.Tensor", type(t).__name__)
    if t.dtype not in _PACKED_DTYPES:
        _fail(arg, "must be uint8 or float4_e2m1fn_x2 (two e2m1 values a byte)", t.dtype)
    if t.dim() != 2:
        _fail(arg, "must be 2-D: rows × k/2 bytes", tuple(t.shape))
    r, half_k = t.shape
    if rows is not None and r != rows:
        _fail(arg, f"must have {rows} rows", r)
    if k is not None and 2 * half_k != k:
        _fail(arg, f"must have k/2 = {k // 2} bytes a row", half_k)
    if not t.is_contiguous():
        _fail(arg, "must be contiguous (row-major)", tuple(t.stride()))
    return r, 2 * half_k


def _blocked_strides(rows: int, k: int) -> tuple:
    """Strides of the harness's 6-D view (32, 4, rest_m, 4, rest_k, 1) of the blocked bytes."""
    rest_k = _round_up(k // 16, 4) // 4
    return (16, 4, rest_k * 512, 1, 512, 1)


def _scales(arg: str, t: torch.Tensor, rows: int, k: int) -> int:
    """Checks blocked scales of a ``rows × k`` matrix; returns their address."""
    if not isinstance(t, torch.Tensor):
        _fail(arg, "must be a torch.Tensor", type(t).__name__)
    if t.dtype not in _SCALE_DTYPES:
        _fail(arg, "must be float8_e4m3fn or uint8 (e4m3 codes)", t.dtype)
    expected = scale_shape(rows, k)
    if t.dim() == 2:
        if tuple(t.shape) != expected:
            _fail(arg, f"must be the 2-D swizzled form {expected}", tuple(t.shape))
        if not t.is_contiguous():
            _fail(arg, "must be contiguous (its bytes are the blocked layout)", tuple(t.stride()))
    elif t.dim() == 6:
        rest_m, rest_k = expected[0] // 128, expected[1] // 4
        shape6 = (32, 4, rest_m, 4, rest_k, 1)
        if tuple(t.shape) != shape6:
            _fail(arg, f"as a 6-D permuted view must have shape {shape6}", tuple(t.shape))
        strides = _blocked_strides(rows, k)
        if tuple(t.stride())[:5] != strides[:5]:
            _fail(arg, f"as a 6-D permuted view must have strides {strides[:5]}+ (the blocked layout)", tuple(t.stride()))
    else:
        _fail(arg, "must be the 2-D swizzled form or the 6-D permuted view", tuple(t.shape))
    return t.data_ptr()


def _eager() -> bool:
    """Outside ``torch.compile`` the public functions call the ops' implementations directly
    (the custom-op dispatcher costs tens of µs a call); under it they go through ``torch.ops``."""
    return not torch.compiler.is_compiling()


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream


def _alpha(arg: str, value: float) -> float:
    value = float(value)
    if not (value > 0.0 and value != float("inf")):
        _fail(arg, "must be finite and positive", value)
    return value


def _out(arg: str, t: torch.Tensor, shape: tuple, dtype) -> torch.Tensor:
    if t.dtype != dtype:
        _fail(arg, f"must be {dtype}", t.dtype)
    if tuple(t.shape) != shape:
        _fail(arg, f"must have shape {shape}", tuple(t.shape))
    if not t.is_contiguous():
        _fail(arg, "must be contiguous", tuple(t.stride()))
    return t


# --- quantize / dequantize -------------------------------------------------------------------


def _quantize_out(x: torch.Tensor, data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float]) -> None:
    if x.dtype not in _VALUE_ELEMENTS:
        _fail("x", "must be float32, float16 or bfloat16", x.dtype)
    if x.dim() != 2:
        _fail("x", "must be 2-D: rows × k", tuple(x.shape))
    rows, k = x.shape
    if k % 16 != 0 or rows == 0:
        _fail("x", "must have rows ≥ 1 and k a multiple of 16", tuple(x.shape))
    if not x.is_contiguous():
        _fail("x", "must be contiguous (row-major)", tuple(x.stride()))
    _packed("data", data, rows, k)
    scales_ptr = _scales("scales", scales, rows, k)
    if global_scale is not None:
        global_scale = _alpha("global_scale", global_scale)
    device = _device(("x", x), ("data", data), ("scales", scales))
    _nvfp4.quantize(
        device.index, _stream(device), _VALUE_ELEMENTS[x.dtype], x.data_ptr(), rows, k,
        data.data_ptr(), scales_ptr, global_scale,
    )


torch.library.custom_op("nvfp4::quantize_out", _quantize_out, mutates_args=("data", "scales"))


def quantize(x: torch.Tensor, global_scale: Optional[float] = None, check_finite: bool = False):
    """Quantizes ``x`` (``rows × k`` float32/float16/bfloat16, CUDA, contiguous; k a multiple of
    16) to NVFP4: returns ``(data, scales)`` — ``rows × k/2`` uint8 and the 2-D swizzled
    float8_e4m3fn scales — bit-identical to the library's CPU quantizer. ``global_scale``: None
    (block scales alone) or a fixed scale that multiplies on dequantization. Non-finite inputs
    are not checked unless ``check_finite`` (which waits for the GPU and raises ``ValueError``
    with the first such index)."""
    return _quantize(x, global_scale, check_finite)


def _quantize_op_impl(x: torch.Tensor, global_scale: Optional[float]) -> tuple[torch.Tensor, torch.Tensor]:
    rows = x.shape[0] if x.dim() == 2 else 1
    k = x.shape[-1]
    data = torch.empty((rows, k // 2), dtype=torch.uint8, device=x.device)
    # Scale padding (rows past `rows`, columns past k/16) is never written: zeros, as the host's.
    scales = torch.zeros(scale_shape(rows, k), dtype=_FP8, device=x.device)
    _quantize_out(x, data, scales, global_scale)
    return data, scales


_quantize_op = torch.library.custom_op("nvfp4::quantize", _quantize_op_impl, mutates_args=())


@_quantize_op.register_fake
def _(x, global_scale):
    rows, k = x.shape
    return x.new_empty((rows, k // 2), dtype=torch.uint8), x.new_empty(scale_shape(rows, k), dtype=_FP8)


def _quantize(x, global_scale, check_finite):
    if _eager():
        data, scales = _quantize_op_impl(x, global_scale)
    else:
        data, scales = torch.ops.nvfp4.quantize(x, global_scale)
    if check_finite:
        index = _nvfp4.first_non_finite(x.device.index, _stream(x.device))
        if index is not None:
            value = x.reshape(-1)[index].item()
            _fail("x", "must hold finite values only", f"{value} at index {index}")
    return data, scales


def _dequantize_out(data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float], out: torch.Tensor) -> None:
    rows, k = _packed("data", data, None, None)
    scales_ptr = _scales("scales", scales, rows, k)
    if out.dtype not in (torch.float16, torch.bfloat16):
        _fail("out", "must be float16 or bfloat16", out.dtype)
    _out("out", out, (rows, k), out.dtype)
    if global_scale is not None:
        global_scale = _alpha("global_scale", global_scale)
    device = _device(("data", data), ("scales", scales), ("out", out))
    _nvfp4.dequantize(
        device.index, _stream(device), data.data_ptr(), scales_ptr, rows, k, global_scale,
        out.data_ptr(), "f16" if out.dtype == torch.float16 else "bf16",
    )


torch.library.custom_op("nvfp4::dequantize_out", _dequantize_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::dequantize", mutates_args=())
def _dequantize_op(data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty((data.shape[0], 2 * data.shape[1]), dtype=dtype, device=data.device)
    _dequantize_out(data, scales, global_scale, out)
    return out


@_dequantize_op.register_fake
def _(data, scales, global_scale, dtype):
    return data.new_empty((data.shape[0], 2 * data.shape[1]), dtype=dtype)


def dequantize(data, scales, global_scale: Optional[float] = None, dtype=torch.float16, out=None):
    """NVFP4 (``data``, ``scales``, optional ``global_scale``) → ``rows × k`` float16/bfloat16."""
    if _eager():
        if out is None:
            out = torch.empty((data.shape[0], 2 * data.shape[1]), dtype=dtype, device=data.device)
        _dequantize_out(data, scales, global_scale, out)
        return out
    if out is not None:
        torch.ops.nvfp4.dequantize_out(data, scales, global_scale, out)
        return out
    return torch.ops.nvfp4.dequantize(data, scales, global_scale, dtype)


# --- dual GEMM and GEMM -------------------------------------------------------------------------


def _dual_gemm_out(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float, out: torch.Tensor,
) -> None:
    m, k = _packed("a", a, None, None)
    n, _ = _packed("b1", b1, None, k)
    _packed("b2", b2, n, k)
    sf = (_scales("a_sf", a_sf, m, k), _scales("b1_sf", b1_sf, n, k), _scales("b2_sf", b2_sf, n, k))
    _out("out", out, (m, n), torch.float16)
    device = _device(("a", a), ("b1", b1), ("b2", b2), ("a_sf", a_sf), ("b1_sf", b1_sf), ("b2_sf", b2_sf), ("out", out))
    _nvfp4.dual_gemm(
        device.index, _stream(device), (a.data_ptr(), sf[0]), (b1.data_ptr(), sf[1]),
        (b2.data_ptr(), sf[2]), (m, n, k), _alpha("alpha1", alpha1), _alpha("alpha2", alpha2),
        out.data_ptr(),
    )


torch.library.custom_op("nvfp4::dual_gemm_out", _dual_gemm_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::dual_gemm", mutates_args=())
def _dual_gemm_op(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float,
) -> torch.Tensor:
    out = torch.empty((a.shape[0], b1.shape[0]), dtype=torch.float16, device=a.device)
    _dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out)
    return out


@_dual_gemm_op.register_fake
def _(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2):
    return a.new_empty((a.shape[0], b1.shape[0]), dtype=torch.float16)


def dual_gemm(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1: float = 1.0, alpha2: float = 1.0, out=None):
    """``out = silu(alpha1 · a·b1ᵀ) ⊙ (alpha2 · a·b2ᵀ)``, float16 ``m × n`` (SwiGLU gate/up).
    ``a``: ``m × k/2``, ``b1``/``b2``: ``n × k/2`` packed e2m1; ``*_sf`` their blocked scales;
    ``alpha*`` the products of the operands' global (dequantization) scales. Any m ≥ 1, n and k
    multiples of 64."""
    if _eager():
        if out is None:
            out = torch.empty((a.shape[0], b1.shape[0]), dtype=torch.float16, device=a.device)
        _dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out)
        return out
    if out is not None:
        torch.ops.nvfp4.dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out)
        return out
    return torch.ops.nvfp4.dual_gemm(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2)


def _gemm_out(a: torch.Tensor, b: torch.Tensor, a_sf: torch.Tensor, b_sf: torch.Tensor, alpha: float, out: torch.Tensor) -> None:
    m, k = _packed("a", a, None, None)
    n, _ = _packed("b", b, None, k)
    sf = (_scales("a_sf", a_sf, m, k), _scales("b_sf", b_sf, n, k))
    _out("out", out, (m, n), torch.float16)
    device = _device(("a", a), ("b", b), ("a_sf", a_sf), ("b_sf", b_sf), ("out", out))
    _nvfp4.gemm(
        device.index, _stream(device), (a.data_ptr(), sf[0]), (b.data_ptr(), sf[1]), (m, n, k),
        _alpha("alpha", alpha), out.data_ptr(),
    )


torch.library.custom_op("nvfp4::gemm_out", _gemm_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::gemm", mutates_args=())
def _gemm_op(a: torch.Tensor, b: torch.Tensor, a_sf: torch.Tensor, b_sf: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty((a.shape[0], b.shape[0]), dtype=torch.float16, device=a.device)
    _gemm_out(a, b, a_sf, b_sf, alpha, out)
    return out


@_gemm_op.register_fake
def _(a, b, a_sf, b_sf, alpha):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=torch.float16)


def gemm(a, b, a_sf, b_sf, alpha: float = 1.0, out=None):
    """``out = alpha · a·bᵀ``, float16 ``m × n`` (e.g. a down projection); operands as for
    :func:`dual_gemm`."""
    if _eager():
        if out is None:
            out = torch.empty((a.shape[0], b.shape[0]), dtype=torch.float16, device=a.device)
        _gemm_out(a, b, a_sf, b_sf, alpha, out)
        return out
    if out is not None:
        torch.ops.nvfp4.gemm_out(a, b, a_sf, b_sf, alpha, out)
        return out
    return torch.ops.nvfp4.gemm(a, b, a_sf, b_sf, alpha)


# --- grouped (Mixture-of-Experts, contiguous convention) ----------------------------------------


def _stacked(arg: str, t: torch.Tensor, groups: Optional[int], rows: Optional[int], k: int):
    """Checks stacked packed weights ``G × rows × k/2``; returns ``(G, rows)``."""
    if t.dtype not in _PACKED_DTYPES:
        _fail(arg, "must be uint8 or float4_e2m1fn_x2", t.dtype)
    if t.dim() != 3:
        _fail(arg, "must be 3-D: groups × rows × k/2 bytes", tuple(t.shape))
    g, r, half_k = t.shape
    if groups is not None and g != groups:
        _fail(arg, f"must hold {groups} groups", g)
    if rows is not None and r != rows:
        _fail(arg, f"must have {rows} rows a group", r)
    if 2 * half_k != k:
        _fail(arg, f"must have k/2 = {k // 2} bytes a row", half_k)
    if not t.is_contiguous():
        _fail(arg, "must be contiguous", tuple(t.stride()))
    return g, r


def _stacked_scales(arg: str, t: torch.Tensor, groups: int, rows: int, k: int) -> int:
    if t.dtype not in _SCALE_DTYPES:
        _fail(arg, "must be float8_e4m3fn or uint8", t.dtype)
    expected = (groups,) + scale_shape(rows, k)
    if tuple(t.shape) != expected:
        _fail(arg, f"must have shape {expected} (each group's 2-D swizzled scales)", tuple(t.shape))
    if not t.is_contiguous():
        _fail(arg, "must be contiguous", tuple(t.stride()))
    return t.data_ptr()


_OFFSET_DTYPES = tuple(d for d in (torch.int32, getattr(torch, "uint32", None)) if d is not None)


def _offsets(arg: str, t: torch.Tensor, groups: int) -> int:
    if t.dtype not in _OFFSET_DTYPES:
        _fail(arg, "must be int32 (or uint32)", t.dtype)
    if tuple(t.shape) != (groups + 1,):
        _fail(arg, f"must hold groups + 1 = {groups + 1} offsets", tuple(t.shape))
    if not t.is_contiguous():
        _fail(arg, "must be contiguous", tuple(t.stride()))
    return t.data_ptr()


def _alphas(arg: str, t: Optional[torch.Tensor], groups: int) -> int:
    if t is None:
        return 0
    if t.dtype != torch.float32 or tuple(t.shape) != (groups,) or not t.is_contiguous():
        _fail(arg, f"must be a contiguous float32 tensor of {groups} per-group scales", f"{t.dtype} {tuple(t.shape)}")
    return t.data_ptr()


def _grouped_out(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], gated: bool, n: int, out: torch.Tensor,
) -> None:
    rows, k = _packed("a", a, None, None)
    if a_sf.dim() != 2 or a_sf.shape[1] != scale_shape(1, k)[1] or a_sf.shape[0] % 128 != 0:
        _fail("a_sf", f"must be 2-D swizzled scales of (a multiple of 128) rows × {scale_shape(1, k)[1]}", tuple(a_sf.shape))
    scale_rows = a_sf.shape[0]
    a_sf_ptr = _scales("a_sf", a_sf, scale_rows, k)
    concatenated = gated and b3 is None
    weight_rows = 2 * n if concatenated else n
    groups, _ = _stacked("b1", b1, None, weight_rows, k)
    b1_sf_ptr = _stacked_scales("b1_sf", b1_sf, groups, weight_rows, k)
    if gated and b3 is not None:
        _stacked("b3", b3, groups, n, k)
        if b3_sf is None:
            _fail("b3_sf", "must be given with b3", None)
        up = (b3.data_ptr(), _stacked_scales("b3_sf", b3_sf, groups, n, k))
    elif b3 is not None or b3_sf is not None:
        _fail("b3", "only a dual GEMM with separate up weights takes b3", "a tensor")
    else:
        up = (b1.data_ptr(), b1_sf_ptr)
    offsets = (_offsets("row_offsets", row_offsets, groups), _offsets("scale_offsets", scale_offsets, groups))
    alphas = (_alphas("alpha1", alpha1, groups), _alphas("alpha3", alpha3, groups))
    if not gated and alpha3 is not None:
        _fail("alpha3", "a plain grouped GEMM has one α per group", "a tensor")
    _out("out", out, (rows, n), torch.float16)
    device = _device(
        ("a", a), ("a_sf", a_sf), ("b1", b1), ("b1_sf", b1_sf), ("b3", b3), ("b3_sf", b3_sf),
        ("row_offsets", row_offsets), ("scale_offsets", scale_offsets), ("alpha1", alpha1),
        ("alpha3", alpha3), ("out", out),
    )
    stride = (weight_rows * k // 2, _nvfp4.scale_bytes(weight_rows, k))
    _nvfp4.grouped(
        device.index, _stream(device), gated, concatenated, (groups, rows, scale_rows, n, k),
        (a.data_ptr(), a_sf_ptr), offsets, (b1.data_ptr(), b1_sf_ptr), up, stride, alphas, out.data_ptr(),
    )


torch.library.custom_op("nvfp4::grouped_out", _grouped_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::grouped", mutates_args=())
def _grouped_op(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], gated: bool, n: int,
) -> torch.Tensor:
    # Rows past the last group's end are not written: zeros, not garbage.
    out = torch.zeros((a.shape[0], n), dtype=torch.float16, device=a.device)
    _grouped_out(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, gated, n, out)
    return out


@_grouped_op.register_fake
def _(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, gated, n):
    return a.new_empty((a.shape[0], n), dtype=torch.float16)


def grouped_gemm(a, b, a_sf, b_sf, row_offsets, scale_offsets, alpha=None, out=None):
    """Per group ``g``: ``out[rows_g] = alpha[g] · a[rows_g]·b[g]ᵀ`` (float16), one launch over
    all groups. ``a``: all groups' tokens (``rows × k/2``, sorted by group); ``a_sf``: their
    2-D swizzled scales where group ``g``'s rows start at row ``scale_offsets[g]`` (a multiple
    of 128); ``row_offsets``/``scale_offsets``: ``G + 1`` int32 on the GPU (never read by the
    host; invalid ones make the launch write nothing); ``b``: ``G × n × k/2``; ``b_sf``:
    ``G ×`` 2-D swizzled scales; ``alpha``: ``G`` float32 on the GPU or None. Rows past
    ``row_offsets[G]`` are not written (zeros in a new output)."""
    return _grouped_call((a, b, None, a_sf, b_sf, None, row_offsets, scale_offsets, alpha, None, False, b.shape[1]), out)


def grouped_dual_gemm(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1=None, alpha3=None, out=None):
    """Per group: ``silu(alpha1[g] · a·b1[g]ᵀ) ⊙ (alpha3[g] · a·b3[g]ᵀ)`` (an expert's gate/up),
    as :func:`grouped_gemm`. ``b3=None`` (and ``b3_sf=None``): ``b1`` is a concatenated
    ``w13`` of ``2n`` rows a group (gate rows, then up rows)."""
    n = b1.shape[1] if b3 is not None else b1.shape[1] // 2
    return _grouped_call((a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, True, n), out)


def _grouped_call(args, out):
    """The grouped ops' dispatch: ``args`` as ``nvfp4::grouped`` takes them (``n`` last); eager
    calls go to the implementation directly, traced ones through the custom ops."""
    if _eager():
        if out is None:
            a, n = args[0], args[-1]
            out = torch.zeros((a.shape[0], n), dtype=torch.float16, device=a.device)
        _grouped_out(*args, out)
        return out
    if out is not None:
        torch.ops.nvfp4.grouped_out(*args, out)
        return out
    return torch.ops.nvfp4.grouped(*args)


def device_info(device=None) -> tuple:
    """``(architecture, name, multiprocessors)`` of a CUDA device (default: the current one)."""
    index = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    return _nvfp4.device_info(index.index or 0)
