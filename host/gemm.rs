//! The plain dense NVFP4 GEMM on the GPU, `C = α · A·Bᵀ` (fp16 out; α the product of the
//! operands' global scales): the down projection of a SwiGLU MLP, so that a whole MLP (dual GEMM
//! for gate/up, then this) runs on this library. Any M ≥ 1, N and K multiples of 64.
//!
//! It runs the dense dual GEMM's plan and kernels (`crate::dual_gemm::DensePlan`) with a
//! one-product epilogue: on Hopper the same tile choice, stream-K split and decode-size kernel
//! for M ≤ 16; on Blackwell the dense tcgen05 kernel whose gate and up MMAs compute the two
//! halves of each tile's outputs from B (never run: no B200 here).

use cudarc::driver::CudaSlice;
use half::f16;

use crate::dual_gemm::{DenseOut, DensePlan};
use crate::error::Result;
use crate::gpu::{DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Ref};
use crate::problem::{DualGemmShape, nvfp4_operand_bytes};

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

impl GemmShape {
    /// `2·M·N·K`: multiply-adds of the product, counted as 2 FLOPs each.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes each input and the output take once: A and B as fp4 data with their blocked scales
    /// (padding included), C as fp16.
    pub fn bytes(&self) -> usize {
        nvfp4_operand_bytes(self.m, self.k) + nvfp4_operand_bytes(self.n, self.k) + 2 * self.m * self.n
    }
}

/// A validated plain GEMM for one shape on one GPU. Launches must be stream-ordered.
pub struct GemmPlan {
    shape: GemmShape,
    dense: DensePlan,
}

impl Gpu {
    /// Plans `C = α · A·Bᵀ` for `shape` on this GPU (Hopper, or Blackwell, whose kernels have
    /// never run: no B200 here).
    pub fn plan_gemm(&self, shape: GemmShape) -> Result<GemmPlan> {
        self.check_not_capturing("planning a GEMM")?;
        let GemmShape { m, n, k } = shape;
        Ok(GemmPlan {
            shape,
            dense: self.plan_dense(DualGemmShape { m, n, k }, false)?,
        })
    }
}

impl GemmPlan {
    /// The planned shape.
    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// Tile size (tokens × outputs) and CTAs of the launch, as the dual GEMM's plan reports
    /// them.
    pub fn tile_and_grid(&self) -> ((u32, u32), u32) {
        self.dense.tile_and_grid()
    }

    /// Chooses whether the Hopper kernels are enqueued as programmatic dependent launches (the
    /// default there), as [`crate::dual_gemm::DualGemmPlan::set_programmatic_launch`].
    pub fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        self.dense.set_programmatic_launch(enabled)
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
        // The dense plan checks the operands against its shape itself.
        self.dense.launch_views(gpu, a, b, None, DenseOut::F16(c))
    }
}
