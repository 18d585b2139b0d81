//! The plain dense NVFP4 GEMM on the GPU, `C = α · A·Bᵀ` (fp16 out; α the product of the
//! operands' global scales): the down projection of a SwiGLU MLP, so that a whole MLP (dual GEMM
//! for gate/up, then this) runs on this library. Any M ≥ 1, N and K multiples of 64.
//!
//! On Hopper it runs the dense dual GEMM's plan and kernels (`crate::dual_gemm::DensePlan`:
//! the same tile choice, stream-K split and decode-size kernel for M ≤ 16) with a one-product
//! epilogue. On Blackwell, which has no dense plain kernel yet, it is the grouped GEMM with one
//! group (`crate::grouped`).

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4_kernel::grouped::SCALE_ROW_ALIGNMENT;

use crate::dual_gemm::{DenseOut, DensePlan};
use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{Arch, DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Ref};
use crate::grouped::{ContiguousAddresses, GroupedLayout, GroupedOp, GroupedPlan, UpWeights};
use crate::problem::DualGemmShape;
use crate::rules::{device_globals, kernel_alpha, operand_rescale};

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
    kernel: GemmKernel,
}

/// What a GEMM plan launches.
#[allow(clippy::large_enum_variant)] // one per plan, never moved in a loop
enum GemmKernel {
    /// The dense kernels (sm_90a).
    Dense(DensePlan),
    /// The grouped kernel with one group of all rows (sm_100f), and its offsets.
    Grouped {
        plan: GroupedPlan,
        row_offsets: DeviceBuffer<u32>,
        scale_offsets: DeviceBuffer<u32>,
    },
}

impl Gpu {
    /// Plans `C = α · A·Bᵀ` for `shape` on this GPU (Hopper, or Blackwell, whose kernels have
    /// never run: no B200 here).
    pub fn plan_gemm(&self, shape: GemmShape) -> Result<GemmPlan> {
        self.check_not_capturing("planning a GEMM")?;
        let GemmShape { m, n, k } = shape;
        if self.arch() == Arch::Sm90a {
            let dense = self.plan_dense(DualGemmShape { m, n, k }, false)?;
            return Ok(GemmPlan {
                shape,
                kernel: GemmKernel::Dense(dense),
            });
        }
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
            kernel: GemmKernel::Grouped {
                plan,
                row_offsets,
                scale_offsets,
            },
        })
    }
}

impl GemmPlan {
    /// The planned shape.
    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// Tile size (tokens × outputs) and CTAs of the dense launch (Hopper), or None where the
    /// GEMM runs the grouped kernel (Blackwell), whose schedule is made on the GPU.
    pub fn tile_and_grid(&self) -> Option<((u32, u32), u32)> {
        match &self.kernel {
            GemmKernel::Dense(dense) => Some(dense.tile_and_grid()),
            GemmKernel::Grouped { .. } => None,
        }
    }

    /// Chooses whether the Hopper kernels are enqueued as programmatic dependent launches (the
    /// default there), as [`crate::dual_gemm::DualGemmPlan::set_programmatic_launch`].
    pub fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        match &mut self.kernel {
            GemmKernel::Dense(dense) => dense.set_programmatic_launch(enabled),
            GemmKernel::Grouped { plan, .. } => {
                plan.set_programmatic_launch(enabled);
                Ok(())
            }
        }
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
        let (plan, row_offsets, scale_offsets) = match &self.kernel {
            // The dense plan checks the operands against its shape itself.
            GemmKernel::Dense(dense) => return dense.launch_views(gpu, a, b, None, DenseOut::F16(c)),
            GemmKernel::Grouped {
                plan,
                row_offsets,
                scale_offsets,
            } => (plan, row_offsets, scale_offsets),
        };
        let GemmShape { m, n, k } = self.shape;
        a.expect_shape("a", m, k)?;
        b.expect_shape("b", n, k)?;
        c.expect_len("c", m * n)?;
        c.expect_f16("c", "the GEMM on sm_100 (its one-group grouped launch)")?;
        let scale = a.global_scale().unwrap_or(1.0) * b.global_scale().unwrap_or(1.0);
        kernel_alpha(scale, operand_rescale(gpu.arch()))?;
        // One group of all rows: A's own blocked scales; B the one group's weights.
        plan.launch_contiguous(
            gpu,
            None,
            device_globals(&a, &b, None),
            &ContiguousAddresses {
                a: a.data_address(),
                a_scales: a.scales_address(),
                row_offsets: row_offsets.address(),
                scale_offsets: scale_offsets.address(),
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
