"""NVFP4 checkpoints → the library's matrices: NVIDIA ModelOpt (``quant_algo: NVFP4``) and
compressed-tensors (``format: nvfp4-pack-quantized``) linear layers, from a dict of tensors
(``safetensors.torch.load_file``) and a layer's name prefix.

Both formats store what the library reads but for two conventions:
* the e4m3 block scales are row-major ``[N, K/16]``; the library reads them in the cuBLAS
  *blocked* layout (:func:`nvfp4.layout.to_blocked`, a permutation: every byte kept);
* the global scale: ModelOpt's ``weight_scale_2`` and ``input_scale`` multiply on
  dequantization, as the library's do (taken as they are); compressed-tensors'
  ``weight_global_scale`` and ``input_global_scale`` divide (``value = e2m1 · e4m3 / g``): the
  library's global scale is ``fp32(1 / g)``.
The packed e2m1 bytes are the library's (even column in the low nibble) and are taken as they
are. Loading is therefore lossless; the values the library then computes with are ``e2m1 · e4m3
· global`` (``e2m1 · e4m3`` exact in float32, one rounding). compressed-tensors' own
dequantization (``bf16(e2m1 · fp32(e4m3 / g))``) gives the same bfloat16 values whenever ``g`` is
bfloat16-representable, as llm-compressor writes it; ModelOpt's torch dequantization rounds
``e4m3 · weight_scale_2`` to float32 first and so differs from it (and from ModelOpt's own
Triton dequantization) by one bfloat16 ulp in a few values per million (``tests/test_checkpoint.py``
counts both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from .layout import from_blocked, to_blocked

MODELOPT = "modelopt"
COMPRESSED_TENSORS = "compressed-tensors"


@dataclass
class QuantizedLinear:
    """One linear layer's NVFP4 weight as the library takes it, and its static activation
    scale (a multiplying global scale for :func:`nvfp4.quantize`; None where the checkpoint has
    none, e.g. weight-only NVFP4)."""

    data: torch.Tensor
    """Packed e2m1, ``N × K/2`` uint8."""
    scales: torch.Tensor
    """Blocked e4m3 scales, the 2-D swizzled form (float8_e4m3fn)."""
    global_scale: float
    """Multiplies on dequantization."""
    input_scale: Optional[float]
    """The activations' static global scale (multiplies), or None."""
    format: str
    """:data:`MODELOPT` or :data:`COMPRESSED_TENSORS`."""

    @property
    def out_features(self) -> int:
        return self.data.shape[0]

    @property
    def in_features(self) -> int:
        return 2 * self.data.shape[1]


def _scalar(tensors: Mapping[str, torch.Tensor], name: str, divides: bool = False) -> Optional[float]:
    """A one-element float32 scale (None when absent) as the multiplying scale the library
    takes: the value itself, or (``divides``) its float32 reciprocal; finite and positive."""
    t = tensors.get(name)
    if t is None:
        return None
    if t.dtype != torch.float32 or t.numel() != 1:
        raise ValueError(f"`{name}`: must hold one float32 value (got {t.dtype} of shape {tuple(t.shape)})")
    value = t.reshape(1).cpu()
    # fp32(1 / g): an IEEE float32 division of two 1-element tensors on the CPU.
    scale = float(torch.ones(1) / value) if divides else float(value)
    if not (0.0 < scale < float("inf")):
        raise ValueError(f"`{name}`: must give a finite, positive scale (got {float(value)})")
    return scale


def detect(tensors: Mapping[str, torch.Tensor], prefix: str) -> str:
    """The format of the layer at ``prefix`` (e.g. ``model.layers.0.mlp.gate_proj``)."""
    if f"{prefix}.weight_packed" in tensors:
        return COMPRESSED_TENSORS
    if f"{prefix}.weight" in tensors and f"{prefix}.weight_scale_2" in tensors:
        return MODELOPT
    raise ValueError(f"`{prefix}`: no NVFP4 weight (neither `weight_packed` nor `weight` with `weight_scale_2`)")


def load_linear(tensors: Mapping[str, torch.Tensor], prefix: str, device=None) -> QuantizedLinear:
    """The NVFP4 linear layer at ``prefix`` of a ModelOpt or compressed-tensors checkpoint's
    tensors, moved to ``device`` (default: where the tensors are)."""
    kind = detect(tensors, prefix)
    data = tensors[f"{prefix}.weight_packed" if kind == COMPRESSED_TENSORS else f"{prefix}.weight"]
    scales = tensors.get(f"{prefix}.weight_scale")
    if scales is None:
        raise ValueError(f"`{prefix}.weight_scale`: missing")
    if data.dtype != torch.uint8 or data.dim() != 2:
        raise ValueError(f"`{prefix}`: packed weights must be 2-D uint8 (got {data.dtype} {tuple(data.shape)})")
    n, half_k = data.shape
    if n == 0 or half_k == 0 or (2 * half_k) % 16:
        raise ValueError(f"`{prefix}`: K = {2 * half_k} must be a positive multiple of 16 (and N ≥ 1: got N = {n})")
    if scales.dtype != torch.float8_e4m3fn or tuple(scales.shape) != (n, 2 * half_k // 16):
        raise ValueError(
            f"`{prefix}.weight_scale`: must be float8_e4m3fn of shape {(n, 2 * half_k // 16)} "
            f"(got {scales.dtype} {tuple(scales.shape)})"
        )
    if kind == MODELOPT:
        global_scale = _scalar(tensors, f"{prefix}.weight_scale_2")
        input_scale = _scalar(tensors, f"{prefix}.input_scale")
    else:
        global_scale = _scalar(tensors, f"{prefix}.weight_global_scale", divides=True)
        input_scale = _scalar(tensors, f"{prefix}.input_global_scale", divides=True)
    if global_scale is None:
        raise ValueError(f"`{prefix}`: no weight global scale")
    device = data.device if device is None else torch.device(device)
    return QuantizedLinear(
        data=data.to(device).contiguous(),
        scales=to_blocked(scales.to(device)),
        global_scale=global_scale,
        input_scale=input_scale,
        format=kind,
    )


def modelopt_tensors(prefix: str, data: torch.Tensor, scales: torch.Tensor, global_scale: float,
                     input_scale: Optional[float]) -> dict:
    """One layer's tensors in ModelOpt's NVFP4 layout (row-major scales, ``weight_scale_2``,
    ``input_scale``), from the library's matrix: for writing a checkpoint with
    ``safetensors.torch.save_file``."""
    rows, k = data.shape[0], 2 * data.shape[1]
    out = {
        f"{prefix}.weight": data.view(torch.uint8).contiguous(),
        f"{prefix}.weight_scale": from_blocked(scales, rows, k),
        f"{prefix}.weight_scale_2": torch.tensor(global_scale, dtype=torch.float32),
    }
    if input_scale is not None:
        out[f"{prefix}.input_scale"] = torch.tensor(input_scale, dtype=torch.float32)
    return out


def to_linear(layer: QuantizedLinear, input_scale: Optional[float] = None):
    """The layer as an :class:`nvfp4.nn.Linear` (``input_scale`` overrides the checkpoint's)."""
    from .nn import Linear

    scale = layer.input_scale if input_scale is None else input_scale
    return Linear(layer.data, layer.scales, layer.global_scale, scale)


__all__ = [
    "QuantizedLinear", "load_linear", "detect", "to_blocked", "from_blocked", "modelopt_tensors", "to_linear",
    "MODELOPT", "COMPRESSED_TENSORS",
]
