"""PyTorch modules over the library's ops: :class:`Linear`, :class:`SwiGLUMLP` (an LLM's
gate/up/down MLP) and :class:`Experts` (a Mixture-of-Experts layer's experts over the grouped
ops). Weights are NVFP4 (packed e2m1, 2-D swizzled e4m3 block scales, a global scale that
multiplies), from a checkpoint (:mod:`nvfp4.checkpoint`) or quantized from float weights
(``from_float``). Activations are quantized with *static* global scales (``input_scale``, a
dequantization scale as ModelOpt's: ``amax / (6 · 448)``), as serving engines run NVFP4
checkpoints, so a forward pass is a fixed sequence of kernels: no host synchronization, usable in
CUDA graphs and under ``torch.compile``. Outputs come back in the input's dtype (float16 or
bfloat16: ``Linear`` and ``SwiGLUMLP`` have the GEMM write it; ``Experts`` casts its combined
float16 result).
"""

from __future__ import annotations

from typing import Optional

import torch

from . import ROUTE_MAX_EXPERTS, gather_grouped, gemm, grouped_dual_gemm_nvfp4, grouped_gemm, \
    moe_combine, moe_route, quantize, scale_shape, swiglu_mlp

# The largest magnitude NVFP4 represents with a block scale of 448 (e4m3's largest): 6 · 448.
_NVFP4_RANGE = 6.0 * 448.0


def global_scale_for(amax: float) -> float:
    """The global (dequantization) scale that maps ``amax`` to the top of the NVFP4 range:
    ``amax / (6 · 448)`` (1 for an all-zero tensor)."""
    return amax / _NVFP4_RANGE if amax > 0 else 1.0


def _quantize_weight(weight: torch.Tensor):
    """A float ``rows × k`` weight on the GPU → (data, scales, global scale)."""
    global_scale = global_scale_for(weight.abs().max().item())
    data, scales = quantize(weight.contiguous(), global_scale)
    return data, scales, global_scale


def quantize_experts(weights: torch.Tensor):
    """Quantizes a stack of experts' float weights ``E × rows × k`` (on the GPU), each with its
    own global scale: returns ``(data E × rows × k/2, scales E × swizzled(rows, k),
    global_scales E float32 on the GPU)``. (One quantization per expert: it is an offline
    step; it waits for the GPU to read each expert's amax.)"""
    if weights.dim() != 3:
        raise ValueError(f"`weights`: must be E × rows × k (got {tuple(weights.shape)})")
    experts, rows, k = weights.shape
    data = torch.empty((experts, rows, k // 2), dtype=torch.uint8, device=weights.device)
    scales = torch.empty((experts,) + scale_shape(rows, k), dtype=torch.float8_e4m3fn, device=weights.device)
    amax = weights.abs().amax(dim=(1, 2)).float().tolist()
    global_scales = [global_scale_for(a) for a in amax]
    for e in range(experts):
        d, s = quantize(weights[e].contiguous(), global_scales[e])
        data[e].copy_(d)
        scales[e].copy_(s)
    return data, scales, torch.tensor(global_scales, dtype=torch.float32, device=weights.device)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """``(..., k)`` → contiguous ``rows × k``."""
    return x.reshape(-1, x.shape[-1]).contiguous()


def _check_dtype(x: torch.Tensor) -> None:
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"`x`: must be float16, bfloat16 or float32 (got {x.dtype})")


class Linear(torch.nn.Module):
    """``y = x · Wᵀ`` with NVFP4 weights ``W`` (``out_features × in_features``) and ``x``
    quantized to NVFP4 with the static ``input_scale`` (None: block scales alone, which clips
    magnitudes beyond 2688). No bias."""

    def __init__(self, weight: torch.Tensor, weight_scales: torch.Tensor, weight_global_scale: float,
                 input_scale: Optional[float]):
        super().__init__()
        if weight.dim() != 2:
            raise ValueError(f"`weight`: must be out_features × in_features/2 packed bytes (got {tuple(weight.shape)})")
        self.out_features, self.in_features = weight.shape[0], 2 * weight.shape[1]
        self.register_buffer("weight", weight.view(torch.uint8))
        self.register_buffer("weight_scales", weight_scales)
        self.weight_global_scale = float(weight_global_scale)
        self.input_scale = None if input_scale is None else float(input_scale)

    @classmethod
    def from_float(cls, linear: torch.nn.Linear, input_scale: Optional[float]) -> "Linear":
        """Quantizes a float ``torch.nn.Linear`` (on the GPU, no bias) with the library's
        quantizer (global scale ``amax / (6 · 448)``)."""
        if linear.bias is not None:
            raise ValueError("`linear`: a bias is not supported")
        data, scales, global_scale = _quantize_weight(linear.weight.detach())
        return cls(data, scales, global_scale, input_scale)

    def alpha(self) -> float:
        """The product's dequantization scale: input and weight global scales."""
        return (self.input_scale or 1.0) * self.weight_global_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_dtype(x)
        xq, xs = quantize(_flat(x), self.input_scale)
        y = gemm(xq, self.weight, xs, self.weight_scales, self.alpha(), out_dtype=_out_dtype_for(x))
        return y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, nvfp4"


def _out_dtype_for(x: torch.Tensor) -> torch.dtype:
    """The GEMM output dtype for input ``x``: bfloat16 for bfloat16 inputs (written by the
    kernel), else float16 (cast after, for float32 inputs)."""
    return torch.bfloat16 if x.dtype == torch.bfloat16 else torch.float16


class SwiGLUMLP(torch.nn.Module):
    """``down(silu(gate(x)) ⊙ up(x))`` in one :func:`nvfp4.swiglu_mlp` call: one quantization of
    ``x``, the dual GEMM writing ``h`` as NVFP4 with ``down``'s static ``input_scale`` (no
    float16 ``h`` in memory), the plain GEMM. ``gate`` and ``up`` share one input quantization, with the larger of their input
    scales (as vLLM merges them)."""

    def __init__(self, gate: Linear, up: Linear, down: Linear):
        super().__init__()
        if down.input_scale is None:
            raise ValueError("`down`: needs a static input_scale (h is quantized inside the dual GEMM)")
        if (gate.out_features, gate.in_features) != (up.out_features, up.in_features) or down.in_features != gate.out_features:
            raise ValueError(
                f"`gate`, `up`, `down`: shapes {gate.out_features}×{gate.in_features}, {up.out_features}×{up.in_features}, "
                f"{down.out_features}×{down.in_features} do not form an MLP"
            )
        self.gate, self.up, self.down = gate, up, down
        scales = [s for s in (gate.input_scale, up.input_scale) if s is not None]
        self.input_scale = max(scales) if scales else None

    @classmethod
    def from_float(cls, gate: torch.nn.Linear, up: torch.nn.Linear, down: torch.nn.Linear,
                   input_scale: Optional[float], hidden_scale: float) -> "SwiGLUMLP":
        """From float linears (on the GPU): ``input_scale`` for ``x``, ``hidden_scale`` for
        ``h`` (calibrated: ``amax / (6 · 448)`` of each)."""
        return cls(Linear.from_float(gate, input_scale), Linear.from_float(up, input_scale),
                   Linear.from_float(down, hidden_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_dtype(x)
        g, u, d = self.gate, self.up, self.down
        y = swiglu_mlp(_flat(x), g.weight, u.weight, d.weight, g.weight_scales, u.weight_scales, d.weight_scales,
                       g.weight_global_scale, u.weight_global_scale, d.weight_global_scale,
                       x_scale=self.input_scale, h_scale=d.input_scale, out_dtype=_out_dtype_for(x))
        return y.to(x.dtype).reshape(*x.shape[:-1], d.out_features)


def grouped_scale_rows(rows: int, groups: int) -> int:
    """Rows of the grouped layout's scales for ``rows`` tokens in ``groups`` groups, each group's
    from a 128-row block: enough for any routing (at most ``min(groups, rows)`` groups have
    tokens, each padded by at most 127 rows)."""
    return (rows + 127 * min(groups, rows) + 127) // 128 * 128


def quantize_grouped(x: torch.Tensor, row_offsets: torch.Tensor, scale_offsets: torch.Tensor, scale_rows: int,
                     global_scale: Optional[float], source_rows: Optional[torch.Tensor] = None):
    """Quantizes tokens sorted by group (``rows × k``; group ``g`` is rows ``row_offsets[g] ..
    row_offsets[g + 1]``) into the grouped ops' layout: ``(data rows × k/2, scales over
    scale_rows rows)`` with group ``g``'s scale rows from ``scale_offsets[g]`` (a multiple of 128,
    as :func:`nvfp4.grouped_gemm` takes them); other scale rows zero. The offsets stay on the GPU
    (no synchronization: CUDA graphs). Two kernels: one quantization, then the library's
    grouped-layout gather (rows copied, scale rows placed on their groups' blocks).

    ``source_rows`` (optional, a 1-D integer tensor on ``x``'s device, values below
    ``x.shape[0]``): row ``i`` of the layout is row ``source_rows[i]`` of ``x`` — the same bytes
    as quantizing ``x[source_rows]`` (the quantization is row by row with a global scale of
    ``None`` or a number), but each row of ``x`` is quantized once and the packed rows are
    gathered, not the wider input rows (an MoE layer's routed copies of its tokens)."""
    k = x.shape[1]
    if source_rows is None:
        rows = x.shape[0]
    else:
        if source_rows.dim() != 1 or source_rows.dtype not in (torch.int32, torch.int64) \
                or source_rows.device != x.device:
            raise ValueError(f"`source_rows`: must be a 1-D int32 or int64 tensor on {x.device} (got "
                             f"{tuple(source_rows.shape)} {source_rows.dtype} on {source_rows.device})")
        rows = source_rows.shape[0]
    groups = row_offsets.shape[0] - 1
    if scale_rows < grouped_scale_rows(rows, groups) or scale_rows % 128:
        raise ValueError(f"`scale_rows`: must be a multiple of 128, at least grouped_scale_rows({rows}, {groups}) = "
                         f"{grouped_scale_rows(rows, groups)} (got {scale_rows})")
    data, scales = quantize(x, global_scale)
    out_data = torch.empty((rows, k // 2), dtype=torch.uint8, device=x.device)
    out_scales = torch.empty(scale_shape(scale_rows, k), dtype=scales.dtype, device=x.device)
    if source_rows is not None and source_rows.dtype != torch.int32:
        source_rows = source_rows.int()
    gather_grouped(data, scales, source_rows, row_offsets, scale_offsets, out_data, out_scales)
    return out_data, out_scales


# Router weight dtypes that `moe_combine` reads directly.
_COMBINE_WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class Experts(torch.nn.Module):
    """The experts of a Mixture-of-Experts layer: expert ``e`` computes ``down_e(silu(gate_e(x)) ⊙
    up_e(x))``, and each token's output is the router-weighted sum over its top-k experts.

    Weights: ``w13`` ``E × 2I × H/2`` (each expert's I gate rows, then its I up rows) and
    ``w2`` ``E × H × I/2``, their swizzled scales and per-expert global scales (``E`` float32 on
    the GPU). ``input_scale`` (one for all experts' inputs) and ``hidden_scales`` (``E``, for each
    expert's ``h``) are static. The forward pass sorts the routed tokens by expert, quantizes
    each token once and gathers its packed rows into the grouped layout (each expert's scale
    rows on a 128-row block; up to ``nvfp4.ROUTE_MAX_EXPERTS`` experts the routing is
    :func:`nvfp4.moe_route`, else PyTorch's sort, the same order), runs the grouped dual GEMM writing ``h`` as NVFP4 and the grouped
    GEMM, and adds each token's weighted outputs in one pass (:func:`nvfp4.moe_combine`): all on
    the GPU, no host synchronization."""

    def __init__(self, w13, w13_scales, w13_global_scales, w2, w2_scales, w2_global_scales,
                 input_scale: float, hidden_scales: torch.Tensor):
        super().__init__()
        if w13.dim() != 3 or w2.dim() != 3 or w13.shape[0] != w2.shape[0]:
            raise ValueError(f"`w13`, `w2`: must be E × 2I × H/2 and E × H × I/2 (got {tuple(w13.shape)}, {tuple(w2.shape)})")
        self.experts, self.intermediate, self.hidden = w13.shape[0], w13.shape[1] // 2, w2.shape[1]
        if w13.shape[2] * 2 != self.hidden or w2.shape[2] * 2 != self.intermediate:
            raise ValueError(f"`w13`, `w2`: shapes {tuple(w13.shape)} and {tuple(w2.shape)} do not match")
        for name, t in (("w13", w13), ("w2", w2)):
            self.register_buffer(name, t.view(torch.uint8))
        self.register_buffer("w13_scales", w13_scales)
        self.register_buffer("w2_scales", w2_scales)
        self.input_scale = float(input_scale)
        w13_global = w13_global_scales.float().reshape(self.experts, -1)
        # Gate and up rows of one expert may have their own global scales (E or E × 2).
        gate_global, up_global = (w13_global[:, 0], w13_global[:, -1])
        self.register_buffer("alpha_gate", (self.input_scale * gate_global).contiguous())
        self.register_buffer("alpha_up", (self.input_scale * up_global).contiguous())
        self.register_buffer("hidden_scales", hidden_scales.float().contiguous())
        self.register_buffer("alpha_down", (self.hidden_scales * w2_global_scales.float()).contiguous())

    @classmethod
    def from_float(cls, gate_up: torch.Tensor, down: torch.Tensor, input_scale: float, hidden_scales) -> "Experts":
        """From float weights on the GPU: ``gate_up`` ``E × 2I × H`` (gate rows, then up rows),
        ``down`` ``E × H × I``; each expert quantized with its own global scale."""
        w13, w13_sf, w13_gs = quantize_experts(gate_up)
        w2, w2_sf, w2_gs = quantize_experts(down)
        hidden_scales = torch.as_tensor(hidden_scales, dtype=torch.float32, device=gate_up.device)
        return cls(w13, w13_sf, w13_gs, w2, w2_sf, w2_gs, input_scale, hidden_scales)

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
        _check_dtype(hidden_states)
        tokens, top_k = top_k_index.shape
        experts, h = self.experts, self.hidden
        if tokens == 0:
            return hidden_states.new_zeros((0, h))
        if experts <= ROUTE_MAX_EXPERTS and top_k_index.dtype == torch.int64:
            # The library's routing: the stable sort by expert, the offsets and the combine's
            # sources (the same order and tables as the PyTorch form below).
            token_of, sources, row_offsets, scale_offsets = moe_route(top_k_index.contiguous(), experts)
        else:
            expert_of = top_k_index.reshape(-1)
            # 32-bit keys: half the radix passes of int64.
            order = torch.argsort(expert_of.int(), stable=True)
            token_of = order // top_k
            # (bincount would wait for the GPU to size its output; scatter_add does not.)
            counts = torch.zeros(experts, dtype=torch.int64, device=expert_of.device)
            counts.scatter_add_(0, expert_of.long(), torch.ones_like(expert_of, dtype=torch.int64))
            zero = counts.new_zeros(1)
            row_offsets = torch.cat([zero, torch.cumsum(counts, 0)]).int()
            padded = (counts + 127) // 128 * 128
            scale_offsets = torch.cat([zero, torch.cumsum(padded, 0)]).int()
            # Row of y holding each (token, slot): the inverse of the sort.
            sources = torch.empty_like(order, dtype=torch.int32)
            sources[order] = torch.arange(order.shape[0], dtype=torch.int32, device=order.device)
            sources = sources.view(tokens, top_k)
        scale_rows = grouped_scale_rows(tokens * top_k, experts)
        # Each token quantized once, its packed row gathered for each of its experts.
        xq, a_sf = quantize_grouped(hidden_states, row_offsets, scale_offsets, scale_rows, self.input_scale,
                                    source_rows=token_of)
        # h uninitialized (the op's own outputs are zero-filled first): the down projection reads
        # only each group's rows and their scales, which the dual GEMM writes.
        rows, i = tokens * top_k, self.intermediate
        h_out = (torch.empty((rows, i // 2), dtype=torch.uint8, device=hidden_states.device),
                 torch.empty(scale_shape(scale_rows, i), dtype=torch.float8_e4m3fn, device=hidden_states.device))
        hq, hs = grouped_dual_gemm_nvfp4(xq, self.w13, None, a_sf, self.w13_scales, None, row_offsets, scale_offsets,
                                         self.alpha_gate, self.alpha_up, global_scales=self.hidden_scales, out=h_out)
        # Every row of y is some group's (no zero fill needed).
        y = grouped_gemm(hq, self.w2, hs, self.w2_scales, row_offsets, scale_offsets, self.alpha_down,
                         out=torch.empty((tokens * top_k, h), dtype=torch.float16, device=hidden_states.device))
        # The router's weights as they come (float32, float16 or bfloat16: no conversion kernel).
        weights = top_k_weights if top_k_weights.dtype in _COMBINE_WEIGHT_DTYPES else top_k_weights.float()
        return moe_combine(y, sources, weights.contiguous(), dtype=hidden_states.dtype)


__all__ = ["Linear", "SwiGLUMLP", "Experts", "quantize_experts", "quantize_grouped", "grouped_scale_rows",
           "global_scale_for"]
