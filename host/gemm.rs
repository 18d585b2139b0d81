//! The plain dense NVFP4 GEMM on the GPU, `C = α · A·Bᵀ` (fp16 out; α the product of the
//! operands' global scales): the down projection of a SwiGLU MLP, so that a whole MLP (dual GEMM
//! for gate/up, then this) runs on this library. It is the grouped GEMM with one group
//! (`crate::grouped`): the same kernels, validation and shape rules (any M ≥ 1, N and K
//! multiples of 64).

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4_kernel::grouped::SCALE_ROW_ALIGNMENT;

use crate::error::{Error, Result};
use crate::gpu::{DeviceNvFp4Matrix, Gpu};
use crate::grouped::{ContiguousInputs, GroupedLayout, GroupedOp, GroupedPlan, UpWeights};

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
    row_offsets: CudaSlice<u32>,
    scale_offsets: CudaSlice<u32>,
}

impl Gpu {
    /// Plans `C = α · A·Bᵀ` for `shape` on this GPU (Hopper, or Blackwell, whose kernels have
    /// never run: no B200 here).
    pub fn plan_gemm(&self, shape: GemmShape) -> Result<GemmPlan> {
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
        let row_offsets = self.stream().clone_htod(&[0u32, m as u32])?;
        let scale_offsets = self.stream().clone_htod(&[0u32, scale_rows as u32])?;
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
        let GemmShape { m, n, k } = self.shape;
        for (name, matrix, rows) in [("a", a, m), ("b", b, n)] {
            if matrix.rows() != rows || matrix.k() != k {
                return Err(Error::ShapeMismatch(format!(
                    "`{name}` is {} × {}, the plan needs {rows} × {k}",
                    matrix.rows(),
                    matrix.k()
                )));
            }
        }
        let inputs = ContiguousInputs {
            a: a.data_buffer(),
            a_scales: a.scales_buffer(),
            row_offsets: &self.row_offsets,
            scale_offsets: &self.scale_offsets,
            gate: b.as_weights(),
            up: None,
            alpha_gate: None,
            alpha_up: None,
            scale: a.global_scale().unwrap_or(1.0) * b.global_scale().unwrap_or(1.0),
        };
        self.plan.launch(gpu, &inputs, c)
    }
}
