"""Adapter for the GPU MODE ``nvfp4_dual_gemm`` problem (public repository
gpu-mode/reference-kernels, ``problems/nvidia/nvfp4_dual_gemm/``): :func:`custom_kernel` takes
the harness's input tuple as handed over and returns its C, written in place (no copy).

The tuple is ``(a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c)``:
``a``/``b*`` are ``float4_e2m1fn_x2`` of shape ``(rows, k/2, l)`` whose batch slices are
row-major; the ``*_permuted`` scales are 6-D views ``(32, 4, rest_rows, 4, rest_k, l)`` whose
bytes are, per batch, exactly the blocked layout this library reads; ``c`` is float16
``(m, n, l)``. The harness has no global scales (``alpha = 1``).
"""

from . import dual_gemm


def custom_kernel(data):
    """``c[:, :, i] = silu(a_i·b1_iᵀ) ⊙ (a_i·b2_iᵀ)`` for every batch ``i``; returns ``c``."""
    a, b1, b2, _, _, _, sfa, sfb1, sfb2, c = data
    for i in range(c.shape[2]):
        dual_gemm(
            a[:, :, i],
            b1[:, :, i],
            b2[:, :, i],
            sfa[..., i : i + 1],
            sfb1[..., i : i + 1],
            sfb2[..., i : i + 1],
            out=c[:, :, i],
        )
    return c


__all__ = ["custom_kernel"]
