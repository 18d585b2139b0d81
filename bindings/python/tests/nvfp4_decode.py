"""Exact PyTorch decoding of NVFP4 tensors for the GPU tests: blocked scales ↔ plain codes, and
packed e2m1 + scales → float32 values (every e2m1 · e4m3 product is exact in float32)."""

import torch

import nvfp4

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def codes_of(sf: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """Blocked scale bytes → ``rows × k/16`` uint8 e4m3 codes (the inverse of ``to_blocked``)."""
    r, c = nvfp4.scale_shape(rows, k)
    # (row block, k block, row % 32, row / 32 % 4, col % 4) → (row block, row / 32 % 4, row % 32,
    # k block, col % 4): row = block·128 + (row/32 % 4)·32 + row % 32, col = k block·4 + col % 4.
    atoms = sf.reshape(-1).view(torch.uint8).view(r // 128, c // 4, 32, 4, 4)
    return atoms.permute(0, 3, 2, 1, 4).reshape(r, c)[:rows, : k // 16]


def reblock(codes: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """``rows × k/16`` uint8 codes → the 2-D swizzled blocked form (padding zero)."""
    r, c = nvfp4.scale_shape(rows, k)
    padded = torch.zeros((r, c), dtype=torch.uint8, device=codes.device)
    padded[:rows, : k // 16] = codes
    return padded.view(r // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).contiguous().view(r, c)


def unblock(sf: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """Blocked scale bytes → ``rows × k/16`` float32 scales."""
    return codes_of(sf, rows, k).contiguous().view(torch.float8_e4m3fn).float()


def dequant(data: torch.Tensor, sf: torch.Tensor, global_scale: float = 1.0) -> torch.Tensor:
    """Packed e2m1 + blocked scales → float32 ``rows × k`` (exact)."""
    rows, k = data.shape[0], 2 * data.shape[1]
    table = torch.tensor(E2M1, device=data.device)
    bytes_ = data.view(torch.uint8).long()
    values = torch.stack([table[bytes_ & 0xF], table[bytes_ >> 4]], dim=-1).reshape(rows, k)
    scales = unblock(sf, rows, k).repeat_interleave(16, dim=1)
    return values * scales * global_scale


