"""Adapters for the four NVFP4 problems of the GPU MODE harness (public repository
gpu-mode/reference-kernels, ``problems/nvidia/nvfp4_{gemv,gemm,dual_gemm,group_gemm}/``): each
takes that problem's input tuple as handed over and returns its ``c``, written in place on the
harness's tensors (no copy of any operand). A submission is one line, e.g.
``from nvfp4.gpumode import gemm as custom_kernel``.

The harness's tensors: ``a``/``b*`` are ``float4_e2m1fn_x2`` of shape ``(rows, k/2, l)`` whose
batch slices are row-major; the ``*_permuted`` (``*_reordered``) scales are 6-D views ``(32, 4,
rest_rows, 4, rest_k, l)`` whose bytes are, per batch, exactly the blocked layout this library
reads; ``c`` is float16 ``(m, n, l)``. The harness has no global scales (``alpha = 1``).

A batch of ``l > 1`` products is one launch (the separate convention of
:func:`nvfp4.grouped_gemm_separate`, a group per batch); ``l = 1`` runs the dense kernels
(:func:`nvfp4.gemm`, :func:`nvfp4.dual_gemm`). The harness times each call from the host, so
the adapters hand the native module each batch's address and shape directly (no PyTorch view
per batch); it checks every rule as for the public ops.
"""

import torch

from . import _nvfp4


class _Batched:
    """A harness tensor whose last dimension is the batch, described once per call: the native
    module's metadata of each batch (address, shape, strides, dtype, device) is then computed
    rather than sliced, because the harness times each call from the host and a PyTorch view
    (or attribute read) per batch costs microseconds. The native module checks every rule."""

    def __init__(self, t):
        self.address = t.data_ptr()
        self.batch_bytes = t.stride(-1) * t.element_size()
        self.shape, self.strides = tuple(t.shape), tuple(t.stride())
        self.dtype, self.device = str(t.dtype), t.get_device() if t.is_cuda else -1

    def view(self, i, shape, strides):
        """Batch ``i`` as a tensor of ``shape`` and ``strides`` (elements) at its start."""
        return (self.address + i * self.batch_bytes, shape, strides, self.dtype, self.device)

    def matrix(self, i):
        """Batch ``i`` of a ``(rows, cols, l)`` operand or output: ``rows × cols``."""
        return self.view(i, self.shape[:2], self.strides[:2])

    def scales(self, i):
        """Batch ``i`` of a 6-D permuted scale view (the blocked bytes of that batch)."""
        return self.view(i, self.shape[:5] + (1,), self.strides)


def _described(data, indices, batches):
    """The tensors ``data[i]`` for ``i`` in ``indices``, described (:class:`_Batched`), after
    checking that each holds ``batches`` batches (its last dimension): a shorter one would be
    read past its end."""
    described = []
    for i in indices:
        t = _Batched(data[i]) if isinstance(data[i], torch.Tensor) else None
        if t is None or len(t.shape) < 3 or t.shape[-1] != batches:
            got = t.shape if t is not None else type(data[i]).__name__
            raise ValueError(f"`data[{i}]`: must hold {batches} batches in its last dimension, as c (got {got})")
        described.append(t)
    return described


def _stream(t):
    """PyTorch's current stream on ``t``'s device (its raw handle, as ``nvfp4``'s ops read it)."""
    return torch._C._cuda_getCurrentRawStream(t.get_device())


def gemv(data):
    """``nvfp4_gemv``: ``c[:, 0, i] = a_i·b_i[0]`` for every batch ``i`` (``b`` is padded to 128
    rows; row 0 is the vector). The vector is the one token of a GEMM over the weights ``a``
    (as :func:`nvfp4.gemv`), written straight into ``c``'s column (``c[:, 0, i]`` is
    contiguous: a ``1 × m`` output)."""
    c = data[6]
    m, batches = c.shape[0], c.shape[2]
    a, b, sfa, sfb, out = _described(data, (0, 1, 4, 5, 6), batches)
    groups = []
    for i in range(batches):
        token = b.view(i, (1, b.shape[1]), b.strides[:2])
        # c[:, 0, i] as a 1 × m row: its true strides, which the native module checks.
        row = out.view(i, (1, m), (out.strides[1], out.strides[0]))
        groups.append((token, a.matrix(i), sfb.scales(i), sfa.scales(i), row))
    _plain(_stream(c), groups)
    return c


def _plain(stream, groups):
    """``out = a·bᵀ`` for every ``(a, b, a_sf, b_sf, out)`` of ``groups``: the dense kernel for
    one, one separate-convention launch for more."""
    if len(groups) == 1:
        _nvfp4.gemm(stream, *groups[0][:4], 1.0, groups[0][4], None)
    else:
        _nvfp4.grouped_separate(
            stream, False, [(a, b, None, a_sf, b_sf, None, 1.0, 1.0, out) for a, b, a_sf, b_sf, out in groups]
        )


def gemm(data):
    """``nvfp4_gemm``: ``c[:, :, i] = a_i·b_iᵀ`` for every batch ``i``."""
    c = data[6]
    a, b, sfa, sfb, out = _described(data, (0, 1, 4, 5, 6), c.shape[2])
    groups = [(a.matrix(i), b.matrix(i), sfa.scales(i), sfb.scales(i), out.matrix(i)) for i in range(c.shape[2])]
    _plain(_stream(c), groups)
    return c


def dual_gemm(data):
    """``nvfp4_dual_gemm``: ``c[:, :, i] = silu(a_i·b1_iᵀ) ⊙ (a_i·b2_iᵀ)`` for every batch ``i``."""
    c = data[9]
    stream, batches = _stream(c), c.shape[2]
    a, b1, b2, sfa, sfb1, sfb2, out = _described(data, (0, 1, 2, 6, 7, 8, 9), batches)
    if batches == 1:
        _nvfp4.dual_gemm(
            stream, a.matrix(0), b1.matrix(0), b2.matrix(0), sfa.scales(0), sfb1.scales(0), sfb2.scales(0),
            1.0, 1.0, out.matrix(0), (None, None),
        )
        return c
    groups = [
        (a.matrix(i), b1.matrix(i), b2.matrix(i), sfa.scales(i), sfb1.scales(i), sfb2.scales(i), 1.0, 1.0, out.matrix(i))
        for i in range(batches)
    ]
    _nvfp4.grouped_separate(stream, True, groups)
    return c


def group_gemm(data):
    """``nvfp4_group_gemm``: ``c_g = a_g·b_gᵀ`` for every group (and batch) with its own M, N
    and K, one launch; returns the list of the groups' ``c``."""
    abc, _, scales, _ = data
    groups = []
    for (a_g, b_g, c_g), (sfa_g, sfb_g) in zip(abc, scales):
        a, b, sfa, sfb, out = _described((a_g, b_g, sfa_g, sfb_g, c_g), range(5), c_g.shape[2])
        groups.extend((a.matrix(i), b.matrix(i), sfa.scales(i), sfb.scales(i), out.matrix(i)) for i in range(c_g.shape[2]))
    _nvfp4.grouped_separate(
        _stream(abc[0][2]), False, [(a, b, None, a_sf, b_sf, None, 1.0, 1.0, out) for a, b, a_sf, b_sf, out in groups]
    )
    return [c_g for _, _, c_g in abc]


# The dual GEMM adapter under the harness's entry-point name (the first adapter's name).
custom_kernel = dual_gemm

__all__ = ["gemv", "gemm", "dual_gemm", "group_gemm", "custom_kernel"]
