"""The blocked scale layout as PyTorch index operations (the layout itself is defined once, in
the library's ``BlockedScales``; docs/format.md): 128-row × 4-column atoms of 512 bytes, whose
bytes the 2-D swizzled form ``(ceil(rows/128)·128, ceil(k/64)·4)`` holds in order."""

from __future__ import annotations

import torch

from . import scale_shape


def to_blocked(scales: torch.Tensor) -> torch.Tensor:
    """Row-major e4m3 scales ``rows × k/16`` → the 2-D swizzled blocked form (padding rows and
    columns zero), on the same device."""
    rows, columns = scales.shape
    r, c = scale_shape(rows, 16 * columns)
    padded = torch.zeros((r, c), dtype=torch.uint8, device=scales.device)
    padded[:rows, :columns] = scales.view(torch.uint8)
    blocked = padded.view(r // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).reshape(r, c)
    return blocked.contiguous().view(torch.float8_e4m3fn)


def from_blocked(scales: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """The inverse of :func:`to_blocked`: blocked scales of a ``rows × k`` matrix → row-major
    ``rows × k/16`` e4m3 (float8_e4m3fn)."""
    r, c = scale_shape(rows, k)
    atoms = scales.reshape(-1).view(torch.uint8).view(r // 128, c // 4, 32, 4, 4)
    codes = atoms.permute(0, 3, 2, 1, 4).reshape(r, c)[:rows, : k // 16]
    return codes.contiguous().view(torch.float8_e4m3fn)


__all__ = ["to_blocked", "from_blocked"]
