//! NVFP4 fused dual GEMM, `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` (the gate/up projection of a SwiGLU MLP),
//! with GPU kernels written in `no_std` Rust (crate `nvfp4-kernel`, built to PTX by `build.rs`).
//!
//! * [`NvFp4Matrix`]: packed e2m1 data, blocked e4m3 scales, optional fp32 global scale; built
//!   from parts, from plain-layout scales, or by [quantizing](NvFp4Matrix::quantize) f32/f16/bf16.
//! * [`codec`]: e2m1 and e4m3fn scalar codecs.
//! * [`reference`]: the multi-threaded CPU reference, an f64 oracle and the tolerance check.
//! * [`gpu`]: device selection (sm_90a / sm_100a), device matrices, the dequantization kernel.
//! * [`problem`]: shapes and random inputs.
//!
//! The scale-factor layout has one definition, [`nvfp4_kernel::layout::BlockedScales`], used by
//! the host, the kernels and the tests.

pub mod codec;
pub mod error;
pub mod gpu;
pub mod kernels;
pub mod matrix;
pub mod problem;
pub mod progress;
pub mod quantize;
pub mod reference;
pub mod tools;

pub use error::{Error, Result};
pub use matrix::NvFp4Matrix;
pub use nvfp4_kernel::layout::BlockedScales;
pub use problem::{Distribution, DualGemmShape, Problem};
pub use quantize::GlobalScale;
