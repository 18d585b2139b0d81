//! The plain dense NVFP4 GEMM on the GPU, `C = α · A·Bᵀ` (fp16 out; α the product of the
//! operands' global scales): the down projection of a SwiGLU MLP, so that a whole MLP (dual GEMM
//! for gate/up, then this) runs on this library. It is the grouped GEMM with one group
//! (`crate::grouped`): the same kernels, validation and shape rules (any M ≥ 1, N and K
//! multiples of 64).

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4_kernel::grouped::SCALE_ROW_ALIGNMENT;

use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Ref};
use crate::grouped::{ContiguousAddresses, GroupedLayout, GroupedOp, GroupedPlan, UpWeights};
use crate::rules::{kernel_alpha, operand_rescale};

/// `C[M × N] = α · A[M × K] · B[N × K]ᵀ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of A and C (tokens).
    pub m: usize,
    /// Rows of B, columns of C.
    pub n: usize,
    /// The reduction dimension, in fp4 elements.
    pub k: usize,
}

/// A validated plain GEMM for one shape on one GPU. Launches must be stream-ordered.
pub struct GemmPlan {
    shape: GemmShape,
    plan: GroupedPlan,
    row_offsets: DeviceBuffer<u32>,
    scale_offsets: DeviceBuffer<u32>,
}

impl Gpu {
    /// Plans `C = α · A·Bᵀ` for `shape` on this GPU (Hopper, or Blackwell, whose kernels have
    /// never run: no B200 here).
    pub fn plan_gemm(&self, shape: GemmShape) -> Result<GemmPlan> {
        self.check_not_capturing("planning a GEMM")?;
        let GemmShape { m, n, k } = shape;
        let scale_rows = m
            .checked_next_multiple_of(SCALE_ROW_ALIGNMENT as usize)
            .ok_or_else(|| Error::invalid("m", "too large", m))?;
        let plan = self.plan_grouped(
            GroupedOp::Gemm,
            GroupedLayout::Contiguous {
                groups: 1,
                rows: m,
                scale_rows,
                n,
                k,
                up: UpWeights::Separate,
            },
            Some(m),
        )?;
        // One group of all rows; its scales are A's own blocked layout (rows rounded up to 128).
        let row_offsets = DeviceBuffer::from_host(self.stream(), &[0u32, m as u32])?;
        let scale_offsets = DeviceBuffer::from_host(self.stream(), &[0u32, scale_rows as u32])?;
        Ok(GemmPlan {
            shape,
            plan,
            row_offsets,
            scale_offsets,
        })
    }
}

impl GemmPlan {
    /// The planned shape.
    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// Enqueues `c = α · a·bᵀ` (`c`: M × N fp16, row-major) on `gpu`'s stream; `α` is the
    /// product of `a`'s and `b`'s global scales.
    pub fn launch(
        &self,
        gpu: &Gpu,
        a: &DeviceNvFp4Matrix,
        b: &DeviceNvFp4Matrix,
        c: &mut CudaSlice<f16>,
    ) -> Result<()> {
        let stream = gpu.stream();
        self.launch_views(gpu, a.view(stream), b.view(stream), F16Mut::of(c, stream))
    }

    /// [`Self::launch`] on views (for example of caller-owned memory: [`NvFp4Ref::from_raw`]):
    /// no allocation, no host↔device copy, no synchronization.
    pub fn launch_views(&self, gpu: &Gpu, a: NvFp4Ref, b: NvFp4Ref, c: F16Mut) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        a.expect_shape("a", m, k)?;
        b.expect_shape("b", n, k)?;
        c.expect_len("c", m * n)?;
        let scale = a.global_scale().unwrap_or(1.0) * b.global_scale().unwrap_or(1.0);
        kernel_alpha(scale, operand_rescale(gpu.arch()))?;
        // One group of all rows: A's own blocked scales; B the one group's weights.
        self.plan.launch_contiguous(
            gpu,
            &ContiguousAddresses {
                a: a.data_address(),
                a_scales: a.scales_address(),
                row_offsets: self.row_offsets.address(),
                scale_offsets: self.scale_offsets.address(),
                gate: b.data_address(),
                gate_scales: b.scales_address(),
                up: b.data_address(),
                up_scales: b.scales_address(),
                up_rows: n,
                weight_data_bytes: n * k / 2,
                weight_scale_bytes: b.scale_bytes(),
                alpha_gate: 0,
                alpha_up: 0,
                scale,
                out: c.address(),
            },
        )
    }
}
