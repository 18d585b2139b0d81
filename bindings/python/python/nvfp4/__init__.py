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
:func:`swiglu_mlp` (the three in one call, without their per-GEMM token passes),
:func:`grouped_gemm` and :func:`grouped_dual_gemm` (Mixture-of-Experts, contiguous convention),
:func:`grouped_gemm_separate` and :func:`grouped_dual_gemm_separate` (groups of their own M, N
and K, each in its own tensors), :func:`batched_gemm` and :func:`gemv`.
Every launch runs on the tensors' device and PyTorch's current stream, allocates nothing but
its output (through PyTorch) and does not synchronize. Plans (one per shape, with their
workspaces) are kept per device: launches of one shape on two streams at once would share
them, so order such launches (one stream per shape, or events between streams). Bad input raises ``ValueError`` naming
the argument and the rule: this layer only gathers each tensor's metadata (address, shape,
strides, dtype, device); the native module checks every rule, in Rust, before it launches.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _nvfp4

__all__ = [
    "quantize",
    "dequantize",
    "moe_combine",
    "moe_route",
    "gather_grouped",
    "dual_gemm",
    "dual_gemm_nvfp4",
    "gemm",
    "swiglu_mlp",
    "grouped_gemm",
    "grouped_dual_gemm",
    "grouped_dual_gemm_w13",
    "grouped_dual_gemm_nvfp4",
    "grouped_gemm_separate",
    "grouped_dual_gemm_separate",
    "batched_gemm",
    "gemv",
    "grouped_status",
    "scale_shape",
    "device_info",
]

_FP8 = torch.float8_e4m3fn


def _fail(arg: str, rule: str, got) -> None:
    raise ValueError(f"`{arg}`: {rule} (got {got})")


def scale_shape(rows: int, k: int) -> tuple:
    """The 2-D swizzled shape of the blocked scales of a ``rows × k`` NVFP4 matrix."""
    return tuple(_nvfp4.scale_shape(rows, k))


def _meta(arg: str, t) -> tuple:
    """The metadata the native module checks every rule on (address, shape, strides, dtype,
    CUDA device index or -1); ``None`` stays ``None``."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        _fail(arg, "must be a torch.Tensor", type(t).__name__)
    device = t.get_device() if t.is_cuda else -1
    return (t.data_ptr(), tuple(t.shape), t.stride(), str(t.dtype), device)


def _stream_of(t) -> int:
    """PyTorch's current stream on ``t``'s device (0 for a tensor elsewhere, which the native
    module rejects): its raw handle, read without making a ``torch.cuda.Stream`` (a few µs of
    host time per call otherwise)."""
    if isinstance(t, torch.Tensor) and t.is_cuda:
        return torch._C._cuda_getCurrentRawStream(t.get_device())
    return 0


def _eager() -> bool:
    """Outside ``torch.compile`` the public functions call the ops' implementations directly
    (the custom-op dispatcher costs tens of µs a call); under it they go through ``torch.ops``."""
    return not torch.compiler.is_compiling()


def _alpha(value):
    """An α argument as ``(host factor, device tensor or None)``: a number stays on the host; a
    float32 CUDA tensor of one element is read by the kernel when it runs (no host round trip:
    a scale a previous kernel wrote, or one updated between CUDA graph replays)."""
    if isinstance(value, torch.Tensor):
        return 1.0, value
    return value, None


def _out_dtype(dtype) -> torch.dtype:
    """The dense GEMMs' output dtype: float16 (the default) or bfloat16."""
    if dtype is None:
        return torch.float16
    if dtype not in (torch.float16, torch.bfloat16):
        _fail("out_dtype", "must be torch.float16 or torch.bfloat16", dtype)
    return dtype


def _float(arg: str, value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        _fail(arg, "must be a number", type(value).__name__)


# --- quantize / dequantize -------------------------------------------------------------------


def _quantize_out(x: torch.Tensor, data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float]) -> None:
    if global_scale is not None:
        global_scale = _float("global_scale", global_scale)
    _nvfp4.quantize(_stream_of(x), _meta("x", x), (_meta("data", data), _meta("scales", scales)), global_scale)


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
    # The inputs' rules first (nothing launched), then the outputs, then the launch.
    checked = None if global_scale is None else _float("global_scale", global_scale)
    rows, k = _nvfp4.quantize(_stream_of(x), _meta("x", x), None, checked)
    data = torch.empty((rows, k // 2), dtype=torch.uint8, device=x.device)
    # The kernel writes the scale padding (rows past `rows`, columns past k/16) as zeros.
    scales = torch.empty(scale_shape(rows, k), dtype=_FP8, device=x.device)
    _quantize_out(x, data, scales, global_scale)
    return data, scales


_quantize_op = torch.library.custom_op("nvfp4::quantize", _quantize_op_impl, mutates_args=())


@_quantize_op.register_fake
def _(x, global_scale):
    rows, k = x.shape
    return x.new_empty((rows, k // 2), dtype=torch.uint8), x.new_empty(scale_shape(rows, k), dtype=_FP8)


def _quantize(x, global_scale, check_finite):
    if check_finite and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        _fail("check_finite", "waits for the GPU, which a CUDA graph capture cannot hold: check before capturing", True)
    if _eager():
        data, scales = _quantize_op_impl(x, global_scale)
    else:
        data, scales = torch.ops.nvfp4.quantize(x, global_scale)
    if check_finite:
        index = _nvfp4.first_non_finite(x.device.index, _stream_of(x))
        if index is not None:
            value = x.reshape(-1)[index].item()
            _fail("x", "must hold finite values only", f"{value} at index {index}")
    return data, scales


def _dequantize_out(data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float], out: torch.Tensor) -> None:
    if global_scale is not None:
        global_scale = _float("global_scale", global_scale)
    _nvfp4.dequantize(_stream_of(data), _meta("data", data), _meta("scales", scales), global_scale, _meta("out", out))


def _dequantize_shape(data, scales, global_scale) -> tuple:
    """Checks the inputs (nothing launched) and returns the output's shape."""
    if global_scale is not None:
        global_scale = _float("global_scale", global_scale)
    return _nvfp4.dequantize(_stream_of(data), _meta("data", data), _meta("scales", scales), global_scale, None)


torch.library.custom_op("nvfp4::dequantize_out", _dequantize_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::dequantize", mutates_args=())
def _dequantize_op(data: torch.Tensor, scales: torch.Tensor, global_scale: Optional[float], dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty(_dequantize_shape(data, scales, global_scale), dtype=dtype, device=data.device)
    _dequantize_out(data, scales, global_scale, out)
    return out


@_dequantize_op.register_fake
def _(data, scales, global_scale, dtype):
    return data.new_empty((data.shape[0], 2 * data.shape[1]), dtype=dtype)


def dequantize(data, scales, global_scale: Optional[float] = None, dtype=torch.float16, out=None):
    """NVFP4 (``data``, ``scales``, optional ``global_scale``) → ``rows × k`` float16/bfloat16."""
    if _eager():
        if out is None:
            out = torch.empty(_dequantize_shape(data, scales, global_scale), dtype=dtype, device=data.device)
        _dequantize_out(data, scales, global_scale, out)
        return out
    if out is not None:
        torch.ops.nvfp4.dequantize_out(data, scales, global_scale, out)
        return out
    return torch.ops.nvfp4.dequantize(data, scales, global_scale, dtype)


# --- Mixture-of-Experts combine --------------------------------------------------------------------


def _moe_combine_out(rows: torch.Tensor, sources: torch.Tensor, weights: torch.Tensor, out: torch.Tensor) -> None:
    _nvfp4.moe_combine(_stream_of(rows), _meta("rows", rows), _meta("sources", sources), _meta("weights", weights),
                       _meta("out", out))


torch.library.custom_op("nvfp4::moe_combine_out", _moe_combine_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::moe_combine", mutates_args=())
def _moe_combine_op(rows: torch.Tensor, sources: torch.Tensor, weights: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty((sources.shape[0], rows.shape[1]), dtype=dtype, device=rows.device)
    _moe_combine_out(rows, sources, weights, out)
    return out


@_moe_combine_op.register_fake
def _(rows, sources, weights, dtype):
    return rows.new_empty((sources.shape[0], rows.shape[1]), dtype=dtype)


def moe_combine(rows, sources, weights, dtype=torch.float16, out=None):
    """The router-weighted sum of each token's expert outputs, in one pass: ``out[t] = Σ_j
    weights[t, j] · rows[sources[t, j]]`` (float32 sums in slot order, then ``dtype``, float16 or
    bfloat16). ``rows``: the experts' float16 output rows (say the grouped GEMM's, sorted by
    expert); ``sources`` (int32) and ``weights`` (float32, float16 or bfloat16, each widened to
    float32 exactly): ``tokens × top_k``, the row of each token's ``j``-th expert and its router
    weight; a source outside ``rows`` (-1 for an expert on another GPU) adds nothing."""
    if _eager():
        if out is None:
            for arg, t in (("rows", rows), ("sources", sources)):
                if not isinstance(t, torch.Tensor) or t.dim() != 2:
                    _fail(arg, "must be a 2-D torch.Tensor", getattr(t, "shape", type(t).__name__))
            out = torch.empty((sources.shape[0], rows.shape[1]), dtype=dtype, device=rows.device)
        _moe_combine_out(rows, sources, weights, out)
        return out
    if out is not None:
        torch.ops.nvfp4.moe_combine_out(rows, sources, weights, out)
        return out
    return torch.ops.nvfp4.moe_combine(rows, sources, weights, dtype)


def _moe_route_out(top_k_index: torch.Tensor, token_rows: torch.Tensor, sources: torch.Tensor,
                   row_offsets: torch.Tensor, scale_offsets: torch.Tensor, counts: torch.Tensor) -> None:
    _nvfp4.moe_route(_stream_of(top_k_index), _meta("top_k_index", top_k_index), _meta("token_rows", token_rows),
                     _meta("sources", sources), _meta("row_offsets", row_offsets), _meta("scale_offsets", scale_offsets),
                     _meta("counts", counts))


# `counts` is the kernels' scratch (each CTA's count of each expert, above 4096 slots).
torch.library.custom_op("nvfp4::moe_route_out", _moe_route_out,
                        mutates_args=("token_rows", "sources", "row_offsets", "scale_offsets", "counts"))


def _gather_grouped_out(data: torch.Tensor, scales: torch.Tensor, source_rows: Optional[torch.Tensor],
                        row_offsets: torch.Tensor, scale_offsets: torch.Tensor, out_data: torch.Tensor,
                        out_scales: torch.Tensor) -> None:
    _nvfp4.gather_grouped(_stream_of(data), _meta("data", data), _meta("scales", scales), _meta("source_rows", source_rows),
                          _meta("row_offsets", row_offsets), _meta("scale_offsets", scale_offsets),
                          _meta("out_data", out_data), _meta("out_scales", out_scales))


torch.library.custom_op("nvfp4::gather_grouped_out", _gather_grouped_out, mutates_args=("out_data", "out_scales"))


def gather_grouped(data, scales, source_rows, row_offsets, scale_offsets, out_data, out_scales):
    """The grouped ops' token layout from an NVFP4 matrix (``data``, ``scales``) in one kernel:
    row ``i`` of ``out_data`` is row ``source_rows[i]`` (int32, or ``None`` for row ``i``), and
    group ``g``'s scale rows go to ``out_scales`` from row ``scale_offsets[g]`` (2-D swizzled,
    its rows a multiple of 128), every other scale row zero; bytes copied, so the result is
    the gathered rows' quantization bit for bit. No host synchronization."""
    (_gather_grouped_out if _eager() else torch.ops.nvfp4.gather_grouped_out)(
        data, scales, source_rows, row_offsets, scale_offsets, out_data, out_scales)


# The most experts `moe_route` sorts by (the routing kernel's shared-memory tables).
ROUTE_MAX_EXPERTS = _nvfp4.ROUTE_MAX_EXPERTS


def moe_route(top_k_index, experts: int):
    """The routing of a Mixture-of-Experts layer in one kernel: the routed slots (token ``t``'s
    ``j``-th expert is slot ``t·top_k + j``) of ``top_k_index`` (int64, ``tokens × top_k``, as
    ``torch.topk`` returns it) sorted by expert, stably (slot order within an expert). Returns
    ``(token_rows, sources, row_offsets, scale_offsets)``: the token of each sorted row (int32,
    ``tokens·top_k``: ``source_rows`` of :func:`nvfp4.nn.quantize_grouped`), each slot's sorted
    row (int32, ``tokens × top_k``: ``sources`` of :func:`moe_combine`), and the grouped ops'
    ``experts + 1`` int32 row and scale offsets (each expert's rows rounded up to 128). An index
    outside ``0..experts`` (an expert on another GPU) sorts last, in no group, with source -1.
    ``experts`` at most ``ROUTE_MAX_EXPERTS``; no host synchronization (CUDA graphs)."""
    if not isinstance(top_k_index, torch.Tensor) or top_k_index.dim() != 2:
        _fail("top_k_index", "must be a 2-D torch.Tensor", getattr(top_k_index, "shape", type(top_k_index).__name__))
    tokens, top_k = top_k_index.shape
    device = top_k_index.device
    token_rows = torch.empty(tokens * top_k, dtype=torch.int32, device=device)
    sources = torch.empty((tokens, top_k), dtype=torch.int32, device=device)
    row_offsets = torch.empty(experts + 1, dtype=torch.int32, device=device)
    scale_offsets = torch.empty(experts + 1, dtype=torch.int32, device=device)
    counts = torch.empty(max(_nvfp4.route_count_words(tokens * top_k, max(experts, 0)), 1), dtype=torch.int32,
                         device=device)
    (_moe_route_out if _eager() else torch.ops.nvfp4.moe_route_out)(top_k_index, token_rows, sources, row_offsets,
                                                                    scale_offsets, counts)
    return token_rows, sources, row_offsets, scale_offsets


# --- dual GEMM and GEMM -------------------------------------------------------------------------


def _dual_gemm_out(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float, out: torch.Tensor,
    alpha1_t: Optional[torch.Tensor] = None, alpha2_t: Optional[torch.Tensor] = None,
) -> None:
    _nvfp4.dual_gemm(
        _stream_of(a), _meta("a", a), _meta("b1", b1), _meta("b2", b2), _meta("a_sf", a_sf),
        _meta("b1_sf", b1_sf), _meta("b2_sf", b2_sf), _float("alpha1", alpha1), _float("alpha2", alpha2),
        _meta("out", out), (_meta("alpha1", alpha1_t), _meta("alpha2", alpha2_t)),
    )


def _dual_gemm_shape(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, alpha1_t=None, alpha2_t=None) -> tuple:
    """Checks the inputs (nothing launched) and returns the output's shape."""
    return _nvfp4.dual_gemm(
        _stream_of(a), _meta("a", a), _meta("b1", b1), _meta("b2", b2), _meta("a_sf", a_sf),
        _meta("b1_sf", b1_sf), _meta("b2_sf", b2_sf), _float("alpha1", alpha1), _float("alpha2", alpha2), None,
        (_meta("alpha1", alpha1_t), _meta("alpha2", alpha2_t)),
    )


torch.library.custom_op("nvfp4::dual_gemm_out", _dual_gemm_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::dual_gemm", mutates_args=())
def _dual_gemm_op(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float,
    alpha1_t: Optional[torch.Tensor] = None, alpha2_t: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    shape = _dual_gemm_shape(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, alpha1_t, alpha2_t)
    out = torch.empty(shape, dtype=_out_dtype(out_dtype), device=a.device)
    _dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out, alpha1_t, alpha2_t)
    return out


@_dual_gemm_op.register_fake
def _(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, alpha1_t=None, alpha2_t=None, out_dtype=None):
    return a.new_empty((a.shape[0], b1.shape[0]), dtype=_out_dtype(out_dtype))


def dual_gemm(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1=1.0, alpha2=1.0, out=None, *, out_dtype=torch.float16):
    """``out = silu(alpha1 · a·b1ᵀ) ⊙ (alpha2 · a·b2ᵀ)``, float16 ``m × n`` (SwiGLU gate/up).
    ``a``: ``m × k/2``, ``b1``/``b2``: ``n × k/2`` packed e2m1; ``*_sf`` their blocked scales;
    ``alpha*`` the products of the operands' global (dequantization) scales: numbers, or
    float32 CUDA tensors of one element that the kernel reads when it runs (no host
    synchronization; a CUDA graph replays with their values of the moment); on Hopper
    ``alpha1 · alpha2`` at most 2^70 (2^126 with the kernels' 2^28 rescale of each; larger raise
    ``ValueError``, tensors are not checked). ``out_dtype`` (or ``out``'s dtype): float16, or
    bfloat16 (the kernel rounds to it: no cast pass). Any m ≥ 1, n and k multiples of 64."""
    (alpha1, alpha1_t), (alpha2, alpha2_t) = _alpha(alpha1), _alpha(alpha2)
    if _eager():
        if out is None:
            shape = _dual_gemm_shape(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, alpha1_t, alpha2_t)
            out = torch.empty(shape, dtype=_out_dtype(out_dtype), device=a.device)
        _dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out, alpha1_t, alpha2_t)
        return out
    if out is not None:
        torch.ops.nvfp4.dual_gemm_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, out, alpha1_t, alpha2_t)
        return out
    return torch.ops.nvfp4.dual_gemm(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, alpha1_t, alpha2_t, out_dtype)


def _dual_gemm_nvfp4_out(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float, global_scale: float, data: torch.Tensor,
    scales: torch.Tensor, alpha1_t: Optional[torch.Tensor] = None, alpha2_t: Optional[torch.Tensor] = None,
) -> None:
    _nvfp4.dual_gemm_nvfp4(
        _stream_of(a), _meta("a", a), _meta("b1", b1), _meta("b2", b2), _meta("a_sf", a_sf),
        _meta("b1_sf", b1_sf), _meta("b2_sf", b2_sf), _float("alpha1", alpha1), _float("alpha2", alpha2),
        _float("global_scale", global_scale), (_meta("data", data), _meta("scales", scales)),
        (_meta("alpha1", alpha1_t), _meta("alpha2", alpha2_t)),
    )


def _dual_gemm_nvfp4_op_impl(
    a: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b2_sf: torch.Tensor, alpha1: float, alpha2: float, global_scale: float,
    alpha1_t: Optional[torch.Tensor] = None, alpha2_t: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    # The inputs' rules first (nothing launched), then the outputs, then the launch.
    m, n = _nvfp4.dual_gemm_nvfp4(
        _stream_of(a), _meta("a", a), _meta("b1", b1), _meta("b2", b2), _meta("a_sf", a_sf),
        _meta("b1_sf", b1_sf), _meta("b2_sf", b2_sf), _float("alpha1", alpha1), _float("alpha2", alpha2),
        _float("global_scale", global_scale), None, (_meta("alpha1", alpha1_t), _meta("alpha2", alpha2_t)),
    )
    data = torch.empty((m, n // 2), dtype=torch.uint8, device=a.device)
    # The kernel writes every scale byte, padding rows as zeros.
    scales = torch.empty(scale_shape(m, n), dtype=_FP8, device=a.device)
    _dual_gemm_nvfp4_out(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, global_scale, data, scales, alpha1_t, alpha2_t)
    return data, scales


torch.library.custom_op("nvfp4::dual_gemm_nvfp4_out", _dual_gemm_nvfp4_out, mutates_args=("data", "scales"))
_dual_gemm_nvfp4_op = torch.library.custom_op("nvfp4::dual_gemm_nvfp4", _dual_gemm_nvfp4_op_impl, mutates_args=())


@_dual_gemm_nvfp4_op.register_fake
def _(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, global_scale, alpha1_t=None, alpha2_t=None):
    m, n = a.shape[0], b1.shape[0]
    return a.new_empty((m, n // 2), dtype=torch.uint8), a.new_empty(scale_shape(m, n), dtype=_FP8)


def dual_gemm_nvfp4(a, b1, b2, a_sf, b1_sf, b2_sf, alpha1=1.0, alpha2=1.0, *, global_scale: float, out=None):
    """:func:`dual_gemm` with its result written as NVFP4: returns ``(data, scales)`` of
    ``h = silu(alpha1 · a·b1ᵀ) ⊙ (alpha2 · a·b2ᵀ)`` (``m × n/2`` uint8 and the 2-D swizzled
    float8_e4m3fn scales), bit-identical to ``quantize(dual_gemm(...), global_scale)`` but
    without the float16 result in memory or the quantization pass — the activations of the
    MLP's down projection (:func:`gemm` with ``alpha = global_scale · its weights' scale``).
    ``global_scale`` is static (calibrated, as serving engines calibrate ``input_scale``):
    values beyond ``2688 · global_scale`` saturate; no non-finite check (an fp16 overflow
    saturates its block). ``alpha*`` as for :func:`dual_gemm` (numbers or one-element tensors).
    ``out``: an optional ``(data, scales)`` pair to write. Verified on Hopper; the Blackwell
    kernel is written but has never run."""
    (alpha1, alpha1_t), (alpha2, alpha2_t) = _alpha(alpha1), _alpha(alpha2)
    args = (a, b1, b2, a_sf, b1_sf, b2_sf, alpha1, alpha2, global_scale)
    if _eager():
        if out is None:
            return _dual_gemm_nvfp4_op_impl(*args, alpha1_t, alpha2_t)
        _dual_gemm_nvfp4_out(*args, *out, alpha1_t, alpha2_t)
        return out
    if out is not None:
        torch.ops.nvfp4.dual_gemm_nvfp4_out(*args, *out, alpha1_t, alpha2_t)
        return out
    return torch.ops.nvfp4.dual_gemm_nvfp4(*args, alpha1_t, alpha2_t)


def _gemm_out(
    a: torch.Tensor, b: torch.Tensor, a_sf: torch.Tensor, b_sf: torch.Tensor, alpha: float, out: torch.Tensor,
    alpha_t: Optional[torch.Tensor] = None,
) -> None:
    _nvfp4.gemm(
        _stream_of(a), _meta("a", a), _meta("b", b), _meta("a_sf", a_sf), _meta("b_sf", b_sf),
        _float("alpha", alpha), _meta("out", out), _meta("alpha", alpha_t),
    )


def _gemm_shape(a, b, a_sf, b_sf, alpha, alpha_t=None) -> tuple:
    """Checks the inputs (nothing launched) and returns the output's shape."""
    return _nvfp4.gemm(
        _stream_of(a), _meta("a", a), _meta("b", b), _meta("a_sf", a_sf), _meta("b_sf", b_sf),
        _float("alpha", alpha), None, _meta("alpha", alpha_t),
    )


torch.library.custom_op("nvfp4::gemm_out", _gemm_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::gemm", mutates_args=())
def _gemm_op(
    a: torch.Tensor, b: torch.Tensor, a_sf: torch.Tensor, b_sf: torch.Tensor, alpha: float,
    alpha_t: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    out = torch.empty(_gemm_shape(a, b, a_sf, b_sf, alpha, alpha_t), dtype=_out_dtype(out_dtype), device=a.device)
    _gemm_out(a, b, a_sf, b_sf, alpha, out, alpha_t)
    return out


@_gemm_op.register_fake
def _(a, b, a_sf, b_sf, alpha, alpha_t=None, out_dtype=None):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=_out_dtype(out_dtype))


def gemm(a, b, a_sf, b_sf, alpha=1.0, out=None, *, out_dtype=torch.float16):
    """``out = alpha · a·bᵀ``, ``m × n`` float16 or bfloat16 (``out_dtype``, or ``out``'s) (e.g.
    a down projection); operands as for :func:`dual_gemm`, ``alpha`` a number or a float32 CUDA
    tensor of one element."""
    alpha, alpha_t = _alpha(alpha)
    if _eager():
        if out is None:
            out = torch.empty(_gemm_shape(a, b, a_sf, b_sf, alpha, alpha_t), dtype=_out_dtype(out_dtype), device=a.device)
        _gemm_out(a, b, a_sf, b_sf, alpha, out, alpha_t)
        return out
    if out is not None:
        torch.ops.nvfp4.gemm_out(a, b, a_sf, b_sf, alpha, out, alpha_t)
        return out
    return torch.ops.nvfp4.gemm(a, b, a_sf, b_sf, alpha, alpha_t, out_dtype)


def _optional_float(arg: str, value) -> Optional[float]:
    return None if value is None else _float(arg, value)


def _mlp_out(
    x: torch.Tensor, w1: torch.Tensor, w3: torch.Tensor, w2: torch.Tensor, w1_sf: torch.Tensor,
    w3_sf: torch.Tensor, w2_sf: torch.Tensor, w1_scale: float, w3_scale: float, w2_scale: float,
    x_scale: Optional[float], h_scale: float, out: torch.Tensor,
) -> None:
    _nvfp4.mlp(
        _stream_of(x), _meta("x", x), _meta("w1", w1), _meta("w3", w3), _meta("w2", w2),
        _meta("w1_sf", w1_sf), _meta("w3_sf", w3_sf), _meta("w2_sf", w2_sf),
        (_float("w1_scale", w1_scale), _float("w3_scale", w3_scale), _float("w2_scale", w2_scale)),
        _optional_float("x_scale", x_scale), _float("h_scale", h_scale), _meta("out", out),
    )


def _mlp_shape(x, w1, w3, w2, w1_sf, w3_sf, w2_sf, w1_scale, w3_scale, w2_scale, x_scale, h_scale) -> tuple:
    """Checks the inputs (nothing launched) and returns the output's shape."""
    return _nvfp4.mlp(
        _stream_of(x), _meta("x", x), _meta("w1", w1), _meta("w3", w3), _meta("w2", w2),
        _meta("w1_sf", w1_sf), _meta("w3_sf", w3_sf), _meta("w2_sf", w2_sf),
        (_float("w1_scale", w1_scale), _float("w3_scale", w3_scale), _float("w2_scale", w2_scale)),
        _optional_float("x_scale", x_scale), _float("h_scale", h_scale), None,
    )


torch.library.custom_op("nvfp4::swiglu_mlp_out", _mlp_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::swiglu_mlp", mutates_args=())
def _mlp_op(
    x: torch.Tensor, w1: torch.Tensor, w3: torch.Tensor, w2: torch.Tensor, w1_sf: torch.Tensor,
    w3_sf: torch.Tensor, w2_sf: torch.Tensor, w1_scale: float, w3_scale: float, w2_scale: float,
    x_scale: Optional[float], h_scale: float, out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    args = (x, w1, w3, w2, w1_sf, w3_sf, w2_sf, w1_scale, w3_scale, w2_scale, x_scale, h_scale)
    out = torch.empty(_mlp_shape(*args), dtype=_out_dtype(out_dtype), device=x.device)
    _mlp_out(*args, out)
    return out


@_mlp_op.register_fake
def _(x, w1, w3, w2, w1_sf, w3_sf, w2_sf, w1_scale, w3_scale, w2_scale, x_scale, h_scale, out_dtype=None):
    return x.new_empty((x.shape[0], w2.shape[0]), dtype=_out_dtype(out_dtype))


def swiglu_mlp(x, w1, w3, w2, w1_sf, w3_sf, w2_sf, w1_scale=1.0, w3_scale=1.0, w2_scale=1.0, *,
               x_scale: Optional[float], h_scale: float, out=None, out_dtype=torch.float16):
    """The SwiGLU MLP block ``out = (silu(x·w1ᵀ) ⊙ (x·w3ᵀ)) · w2ᵀ`` with NVFP4 weights, in one
    call: ``x`` (``tokens × hidden`` float32, float16 or bfloat16) quantized with the static
    global scale ``x_scale`` (None: none), the dual GEMM writing ``h`` as NVFP4 with the static
    ``h_scale``, the GEMM writing ``out`` (``tokens × hidden``, float16 or bfloat16:
    ``out_dtype`` or ``out``'s). ``w1``, ``w3`` (``intermediate × hidden/2`` packed) and ``w2``
    (``hidden × intermediate/2``), their scales as for :func:`dual_gemm`, ``w*_scale`` their
    global scales (numbers). Bit for bit :func:`quantize`, :func:`dual_gemm_nvfp4` and
    :func:`gemm` called in turn with the same scales (each α the float32 product of its two
    global scales, as the op forms it); faster from 64 to 256 tokens, because on Hopper the quantizer (and up to 64 tokens the
    dual GEMM) hands the next GEMM its tokens already decoded (no pre-decoding pass there). No non-finite
    check of ``x``; values of ``h`` beyond ``2688 · h_scale`` saturate. The plan per shape
    holds ``x``'s and ``h``'s NVFP4 buffers: order launches of one shape on two streams."""
    args = (x, w1, w3, w2, w1_sf, w3_sf, w2_sf, w1_scale, w3_scale, w2_scale, x_scale, h_scale)
    if _eager():
        if out is None:
            out = torch.empty(_mlp_shape(*args), dtype=_out_dtype(out_dtype), device=x.device)
        _mlp_out(*args, out)
        return out
    if out is not None:
        torch.ops.nvfp4.swiglu_mlp_out(*args, out)
        return out
    return torch.ops.nvfp4.swiglu_mlp(*args, out_dtype)


# --- grouped (Mixture-of-Experts, contiguous convention) ----------------------------------------


def _grouped_native(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, gated, n, out, h=None):
    """Launches into ``out`` (fp16) or ``h`` (``(data, scales, global_scales)``, NVFP4); with
    neither checks the inputs (nothing launched) and returns the output's shape. The plain
    grouped GEMM's arguments are named ``b``, ``b_sf``, ``alpha``."""
    b, b_sf, alpha = ("b1", "b1_sf", "alpha1") if gated else ("b", "b_sf", "alpha")
    h_meta = None if h is None else tuple(_meta(name, t) for name, t in zip(("h_data", "h_scales", "global_scales"), h))
    return _nvfp4.grouped(
        _stream_of(a), gated, _meta("a", a), _meta(b, b1), _meta("b3", b3), _meta("a_sf", a_sf),
        _meta(b_sf, b1_sf), _meta("b3_sf", b3_sf), _meta("row_offsets", row_offsets),
        _meta("scale_offsets", scale_offsets), _meta(alpha, alpha1), _meta("alpha3", alpha3), n,
        _meta("out", out), h_meta,
    )


def _grouped_out(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], gated: bool, n: int, out: torch.Tensor,
) -> None:
    _grouped_native(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, gated, n, out)


torch.library.custom_op("nvfp4::grouped_out", _grouped_out, mutates_args=("out",))


@torch.library.custom_op("nvfp4::grouped", mutates_args=())
def _grouped_op(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], gated: bool, n: int,
) -> torch.Tensor:
    # Rows past the last group's end are not written: zeros, not garbage.
    shape = _grouped_native(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, gated, n, None)
    out = torch.zeros(shape, dtype=torch.float16, device=a.device)
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
    n = b.shape[1] if isinstance(b, torch.Tensor) and b.dim() == 3 else 0  # else the native check names `b`
    return _grouped_call((a, b, None, a_sf, b_sf, None, row_offsets, scale_offsets, alpha, None, False, n), out)


def grouped_dual_gemm(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1=None, alpha3=None, out=None):
    """Per group: ``silu(alpha1[g] · a·b1[g]ᵀ) ⊙ (alpha3[g] · a·b3[g]ᵀ)`` (an expert's gate/up),
    as :func:`grouped_gemm`, with gate weights ``b1`` and up weights ``b3`` (``G × n × k/2``
    each, and their scales). For one concatenated ``w13`` use :func:`grouped_dual_gemm_w13`."""
    if b3 is None or b3_sf is None:
        _fail("b3" if b3 is None else "b3_sf", "must be given (for a concatenated w13 call grouped_dual_gemm_w13)", None)
    n = b1.shape[1] if isinstance(b1, torch.Tensor) and b1.dim() == 3 else 0
    return _grouped_call((a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, True, n), out)


def grouped_dual_gemm_w13(a, w13, a_sf, w13_sf, row_offsets, scale_offsets, alpha1=None, alpha3=None, out=None):
    """:func:`grouped_dual_gemm` with gate and up weights concatenated: ``w13`` is ``G × 2n ×
    k/2`` (each group's n gate rows, then its n up rows; vLLM's ``w13``) with its scales
    ``w13_sf`` (``G ×`` the 2-D swizzled scales of ``2n × k``)."""
    n = w13.shape[1] // 2 if isinstance(w13, torch.Tensor) and w13.dim() == 3 else 0
    return _grouped_call((a, w13, None, a_sf, w13_sf, None, row_offsets, scale_offsets, alpha1, alpha3, True, n), out)


# --- grouped, separate convention (groups with their own M, N, K and tensors) -----------------


def _separate_native(gated, a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out) -> None:
    groups = []
    b, b_sf, alpha = ("b1", "b1_sf", "alpha1") if gated else ("b", "b_sf", "alpha")
    for g in range(len(b1)):
        groups.append((
            _meta(f"a[{g}]", a[g]), _meta(f"{b}[{g}]", b1[g]), _meta(f"b3[{g}]", b3[g] if gated else None),
            _meta(f"a_sf[{g}]", a_sf[g]), _meta(f"{b_sf}[{g}]", b1_sf[g]),
            _meta(f"b3_sf[{g}]", b3_sf[g] if gated else None),
            _float(f"{alpha}[{g}]", alpha1[g]), _float(f"alpha3[{g}]", alpha3[g]) if gated else 1.0,
            _meta(f"out[{g}]", out[g]),
        ))
    stream = next((_stream_of(t) for t in b1 if isinstance(t, torch.Tensor)), 0)
    _nvfp4.grouped_separate(stream, gated, groups)


def _grouped_separate_out(
    a: list[Optional[torch.Tensor]], b1: list[torch.Tensor], b3: list[torch.Tensor], a_sf: list[Optional[torch.Tensor]],
    b1_sf: list[torch.Tensor], b3_sf: list[torch.Tensor], alpha1: list[float], alpha3: list[float],
    out: list[Optional[torch.Tensor]],
) -> None:
    _separate_native(len(b3) > 0, a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out)


torch.library.custom_op("nvfp4::grouped_separate_out", _grouped_separate_out, mutates_args=("out",))


def _separate_lists(names, lists, groups):
    """Each argument as a list of ``groups`` entries (a tuple or list of them), or a ValueError."""
    result = []
    for name, value in zip(names, lists):
        if not isinstance(value, (list, tuple)) or len(value) != groups:
            _fail(name, f"must be a list of {groups} entries (one per group, as `b`)", type(value).__name__ if not isinstance(value, (list, tuple)) else len(value))
        result.append(list(value))
    return result


def _separate_call(gated, a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out):
    if not isinstance(b1, (list, tuple)) or not b1:
        _fail("b1" if gated else "b", "must be a non-empty list of weight tensors, one per group", type(b1).__name__)
    groups = len(b1)
    alpha1 = [1.0] * groups if alpha1 is None else alpha1
    alpha3 = [1.0] * groups if alpha3 is None else alpha3
    names = ["a", "a_sf", "b1_sf" if gated else "b_sf", "alpha1" if gated else "alpha"]
    a, a_sf, b1_sf, alpha1 = _separate_lists(names, [a, a_sf, b1_sf, alpha1], groups)
    if gated:
        b3, b3_sf, alpha3 = _separate_lists(["b3", "b3_sf", "alpha3"], [b3, b3_sf, alpha3], groups)
    else:
        b3, b3_sf, alpha3 = [], [], []
    if out is None:
        out = []
        for g in range(groups):
            rows_and_n = None
            if isinstance(a[g], torch.Tensor) and isinstance(b1[g], torch.Tensor) and a[g].dim() == 2 and b1[g].dim() == 2:
                rows_and_n = (a[g].shape[0], b1[g].shape[0])
            # Shapes that are not 2-D get no output; the native check then names the input.
            out.append(None if rows_and_n is None else torch.empty(rows_and_n, dtype=torch.float16, device=a[g].device))
    else:
        (out,) = _separate_lists(["out"], [out], groups)
    if _eager():
        _separate_native(gated, a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out)
    else:
        torch.ops.nvfp4.grouped_separate_out(a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out)
    return out


def grouped_gemm_separate(a, b, a_sf, b_sf, alpha=None, out=None):
    """Per group ``g``: ``out[g] = alpha[g] · a[g]·b[g]ᵀ`` (float16 ``m_g × n_g``), one launch
    over all groups, each with its own M, N and K (n_g a multiple of 128, k_g of 64) in its own
    tensors — the GPU MODE ``nvfp4_group_gemm`` convention, on the tensors' memory (no copy).
    ``a``, ``b``, ``a_sf``, ``b_sf``: lists of the groups' operands as for :func:`gemm` (a group
    without tokens has ``a[g]``, ``a_sf[g]`` and ``out[g]`` None); ``alpha``: a list of numbers
    or None (ones); ``out``: a list of outputs or None (allocated). Returns ``out``. The group
    table comes from the host with each call, so this op is not for CUDA graphs."""
    return _separate_call(False, a, b, None, a_sf, b_sf, None, alpha, None, out)


def grouped_dual_gemm_separate(a, b1, b3, a_sf, b1_sf, b3_sf, alpha1=None, alpha3=None, out=None):
    """:func:`grouped_gemm_separate` for dual GEMMs: ``out[g] = silu(alpha1[g] · a[g]·b1[g]ᵀ) ⊙
    (alpha3[g] · a[g]·b3[g]ᵀ)``."""
    return _separate_call(True, a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out)


def batched_gemm(a, b, a_sf, b_sf, alpha: float = 1.0, out=None):
    """``out[i] = alpha · a[i]·b[i]ᵀ`` for every batch ``i``, one launch: ``a`` ``L × m × k/2``,
    ``b`` ``L × n × k/2`` (each batch row-major; any batch stride), ``a_sf``/``b_sf`` ``L ×``
    the 2-D swizzled scales of one batch (or a list of ``L`` scale tensors in any accepted
    form), ``out`` float16 ``L × m × n`` (allocated when None). With ``L = 1`` it is
    :func:`gemm`; with more, a separate-convention grouped launch of ``L`` groups."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            _fail(name, "must be a 3-D tensor: batch × rows × k/2 bytes", getattr(t, "shape", type(t).__name__))
    batches = a.shape[0]
    if b.shape[0] != batches:
        _fail("b", f"must have {batches} batches (as `a`)", b.shape[0])
    if out is None:
        out = torch.empty((batches, a.shape[1], b.shape[1]), dtype=torch.float16, device=a.device)
    if batches == 1:
        gemm(a[0], b[0], a_sf[0], b_sf[0], alpha, out=out[0])
        return out
    grouped_gemm_separate(list(a), list(b), list(a_sf), list(b_sf), [alpha] * batches, list(out))
    return out


def gemv(w, w_sf, x, x_sf, alpha: float = 1.0, out=None):
    """The matrix-vector product ``out = alpha · w·x`` (float16, ``m`` values): ``w`` ``m × k/2``
    packed e2m1 with its scales, ``x`` one row of k values (``1 × k/2``, or ``k/2``) with the
    scales of a 1-row matrix. It is :func:`gemm` with ``x`` as the one token and ``w`` as the
    weights (the decode-size kernel streams ``w`` once)."""
    if isinstance(x, torch.Tensor) and x.dim() == 1:
        x = x.unsqueeze(0)
    if out is None:
        m = w.shape[0] if isinstance(w, torch.Tensor) and w.dim() == 2 else 0
        out = torch.empty((m,), dtype=torch.float16, device=getattr(w, "device", "cpu"))
    if not isinstance(out, torch.Tensor) or out.dim() != 1:
        _fail("out", "must be a 1-D float16 tensor of m values", getattr(out, "shape", type(out).__name__))
    gemm(x, w, x_sf, w_sf, alpha, out=out.unsqueeze(0))
    return out


def _grouped_nvfp4_out(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], n: int, global_scales: torch.Tensor,
    data: torch.Tensor, scales: torch.Tensor,
) -> None:
    _grouped_native(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, True, n, None,
                    (data, scales, global_scales))


torch.library.custom_op("nvfp4::grouped_nvfp4_out", _grouped_nvfp4_out, mutates_args=("data", "scales"))


def _grouped_nvfp4_op_impl(
    a: torch.Tensor, b1: torch.Tensor, b3: Optional[torch.Tensor], a_sf: torch.Tensor, b1_sf: torch.Tensor,
    b3_sf: Optional[torch.Tensor], row_offsets: torch.Tensor, scale_offsets: torch.Tensor,
    alpha1: Optional[torch.Tensor], alpha3: Optional[torch.Tensor], n: int, global_scales: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    rows, _ = _grouped_native(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, True, n, None)
    # Rows past the last group and blocks of no group are not written: zeros, not garbage.
    data = torch.zeros((rows, n // 2), dtype=torch.uint8, device=a.device)
    scales = torch.zeros(scale_shape(a_sf.shape[0], n), dtype=_FP8, device=a.device)
    _grouped_nvfp4_out(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, n, global_scales, data, scales)
    return data, scales


_grouped_nvfp4_op = torch.library.custom_op("nvfp4::grouped_nvfp4", _grouped_nvfp4_op_impl, mutates_args=())


@_grouped_nvfp4_op.register_fake
def _(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, n, global_scales):
    return a.new_empty((a.shape[0], n // 2), dtype=torch.uint8), a.new_empty(scale_shape(a_sf.shape[0], n), dtype=_FP8)


def grouped_dual_gemm_nvfp4(a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1=None, alpha3=None, *,
                            global_scales, out=None):
    """:func:`grouped_dual_gemm` (or, with ``b3`` and ``b3_sf`` None, :func:`grouped_dual_gemm_w13`
    on a concatenated ``w13`` in ``b1``) with its result written as NVFP4 in ``a``'s layout:
    returns ``(data, scales)`` — ``rows × n/2`` uint8 and the 2-D swizzled float8_e4m3fn scales
    over ``a_sf``'s rows, group ``g``'s from the 128-row block at ``scale_offsets[g]`` — with
    group ``g`` quantized with ``global_scales[g]`` (``G`` float32 on the GPU, static, as for
    :func:`dual_gemm_nvfp4`): the tokens of the down projection's :func:`grouped_gemm` with the
    same offsets (its α: ``global_scales · the down weights' scales``). Bit-identical to quantizing
    each group's fp16 result. Hopper only (Blackwell raises: no such kernel yet)."""
    if (b3 is None) != (b3_sf is None):
        _fail("b3" if b3 is None else "b3_sf", "b3 and b3_sf are given together (or both None for a concatenated w13)", None)
    if b3 is None:
        n = b1.shape[1] // 2 if isinstance(b1, torch.Tensor) and b1.dim() == 3 else 0
    else:
        n = b1.shape[1] if isinstance(b1, torch.Tensor) and b1.dim() == 3 else 0
    args = (a, b1, b3, a_sf, b1_sf, b3_sf, row_offsets, scale_offsets, alpha1, alpha3, n, global_scales)
    if _eager():
        if out is None:
            return _grouped_nvfp4_op_impl(*args)
        _grouped_nvfp4_out(*args, *out)
        return out
    if out is not None:
        torch.ops.nvfp4.grouped_nvfp4_out(*args, *out)
        return out
    return torch.ops.nvfp4.grouped_nvfp4(*args)


def grouped_status(device=None) -> None:
    """Waits for the current stream and raises ``ValueError`` naming the rule and the group if
    the last grouped launch on ``device`` (default: the current one) found invalid device-side
    offsets — decreasing, past the capacity, or misaligned scale offsets — and so wrote
    nothing. Not inside a CUDA graph capture (it waits)."""
    index = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    _nvfp4.grouped_status(index.index or 0, torch.cuda.current_stream(index).cuda_stream)


def _grouped_call(args, out):
    """The grouped ops' dispatch: ``args`` as ``nvfp4::grouped`` takes them (``n`` last); eager
    calls go to the implementation directly, traced ones through the custom ops."""
    if _eager():
        if out is None:
            out = torch.zeros(_grouped_native(*args, None), dtype=torch.float16, device=args[0].device)
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
