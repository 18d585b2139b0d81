"""Adapters for the four NVFP4 problems of the GPU MODE harness (public repository
gpu-mode/reference-kernels, ``problems/nvidia/nvfp4_{gemv,gemm,dual_gemm,group_gemm}/``): each
takes that problem's input tuple as handed over and returns its ``c``, written in place on the
harness's tensors (no copy of any operand). A submission is one line, e.g.
``from nvfp4.gpumode import gemm as custom_kernel``.

The harness's tensors: ``a``/``b*`` are ``float4_e2m1fn_x2`` of shape ``(rows, k/2, l)`` whose
batch slices are row-major; the ``*_permuted`` (``*_reordered``) scales are 6-D views ``(32, 4,
rest_rows, 4, rest_k, l)`` whose bytes are, per batch, exactly the blocked layout this library
reads; ``c`` is float16 ``(m, n, l)``. The harness has no global scales (``alpha = 1``).

A batch of ``l > 1`` products is one launch (:func:`nvfp4.grouped_gemm_separate` with a group
per batch); ``l = 1`` runs the dense kernels (:func:`nvfp4.gemm`, :func:`nvfp4.dual_gemm`).
"""

from . import dual_gemm as _dual_gemm
from . import gemm as _gemm
from . import grouped_dual_gemm_separate, grouped_gemm_separate


def _batch(t, i):
    """Batch ``i`` of a ``(rows, cols, l)`` operand or output: a row-major 2-D view."""
    return t[:, :, i]


def _batch_scales(t, i):
    """Batch ``i`` of a 6-D permuted scale view (the blocked bytes of that batch)."""
    return t[..., i : i + 1]


def gemv(data):
    """``nvfp4_gemv``: ``c[:, 0, i] = a_i·b_i[0]`` for every batch ``i`` (``b`` is padded to 128
    rows; row 0 is the vector). The vector is the one token of a GEMM over the weights ``a``
    (:func:`nvfp4.gemv`), written straight into ``c``'s column."""
    a, b, _, _, sfa, sfb, c = data
    batches = c.shape[2]
    tokens = [b[0:1, :, i] for i in range(batches)]
    token_scales = [_batch_scales(sfb, i) for i in range(batches)]
    weights = [_batch(a, i) for i in range(batches)]
    weight_scales = [_batch_scales(sfa, i) for i in range(batches)]
    out = [c[:, 0, i].unsqueeze(0) for i in range(batches)]
    if batches == 1:
        _gemm(tokens[0], weights[0], token_scales[0], weight_scales[0], out=out[0])
    else:
        grouped_gemm_separate(tokens, weights, token_scales, weight_scales, out=out)
    return c


def gemm(data):
    """``nvfp4_gemm``: ``c[:, :, i] = a_i·b_iᵀ`` for every batch ``i``."""
    a, b, _, _, sfa, sfb, c = data
    batches = c.shape[2]
    if batches == 1:
        _gemm(_batch(a, 0), _batch(b, 0), _batch_scales(sfa, 0), _batch_scales(sfb, 0), out=_batch(c, 0))
        return c
    grouped_gemm_separate(
        [_batch(a, i) for i in range(batches)],
        [_batch(b, i) for i in range(batches)],
        [_batch_scales(sfa, i) for i in range(batches)],
        [_batch_scales(sfb, i) for i in range(batches)],
        out=[_batch(c, i) for i in range(batches)],
    )
    return c


def dual_gemm(data):
    """``nvfp4_dual_gemm``: ``c[:, :, i] = silu(a_i·b1_iᵀ) ⊙ (a_i·b2_iᵀ)`` for every batch ``i``."""
    a, b1, b2, _, _, _, sfa, sfb1, sfb2, c = data
    batches = c.shape[2]
    if batches == 1:
        _dual_gemm(
            _batch(a, 0), _batch(b1, 0), _batch(b2, 0),
            _batch_scales(sfa, 0), _batch_scales(sfb1, 0), _batch_scales(sfb2, 0), out=_batch(c, 0),
        )
        return c
    every = range(batches)
    grouped_dual_gemm_separate(
        [_batch(a, i) for i in every], [_batch(b1, i) for i in every], [_batch(b2, i) for i in every],
        [_batch_scales(sfa, i) for i in every], [_batch_scales(sfb1, i) for i in every],
        [_batch_scales(sfb2, i) for i in every], out=[_batch(c, i) for i in every],
    )
    return c


def group_gemm(data):
    """``nvfp4_group_gemm``: ``c_g = a_g·b_gᵀ`` for every group (and batch) with its own M, N
    and K, one launch; returns the list of the groups' ``c``."""
    abc, _, scales, _ = data
    a, b, a_sf, b_sf, out = [], [], [], [], []
    for (a_g, b_g, c_g), (sfa_g, sfb_g) in zip(abc, scales):
        for i in range(c_g.shape[2]):
            a.append(_batch(a_g, i))
            b.append(_batch(b_g, i))
            a_sf.append(_batch_scales(sfa_g, i))
            b_sf.append(_batch_scales(sfb_g, i))
            out.append(_batch(c_g, i))
    grouped_gemm_separate(a, b, a_sf, b_sf, out=out)
    return [c_g for _, _, c_g in abc]


# The dual GEMM adapter under the harness's entry-point name (the first adapter's name).
custom_kernel = dual_gemm

__all__ = ["gemv", "gemm", "dual_gemm", "group_gemm", "custom_kernel"]
