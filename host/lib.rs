//! NVFP4 GEMMs for the MLP and Mixture-of-Experts layers of LLMs: the SwiGLU dual GEMM
//! `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)`, the plain GEMM, their grouped forms and a quantizer, with GPU
//! kernels written in `no_std` Rust (crate `nvfp4-kernel`, built to PTX by `build.rs`).
//!
//! * [`NvFp4Matrix`], [`quantize`], [`codec`]: the format: packed e2m1 data, blocked e4m3
//!   scales, optional fp32 global scale; built from parts, from plain-layout scales, or by
//!   quantizing f32/f16/bf16 on the CPU.
//! * [`mod@reference`]: the multi-threaded CPU reference of every op, an f64 oracle and the
//!   tolerance check.
//! * [`gpu`]: the GPU runtime (device, the kernel module of its architecture, device matrices,
//!   caller-owned views) and the GPU quantizer and dequantizer.
//! * [`dual_gemm`], [`gemm`], [`grouped`]: the GEMM ops: a plan per shape, launched on the GPU's
//!   stream.
//! * [`checkpoint`]: ModelOpt and compressed-tensors NVFP4 layers (safetensors) as matrices.
//! * [`kernels`]: the embedded PTX; [`tools`]: locating the CUDA tools; [`problem`],
//!   [`progress`]: shapes, random inputs and progress reports for examples and benches.
//!
//! ```
//! use nvfp4::reference::{self, TASK_TOLERANCE};
//! use nvfp4::{GlobalScale, NvFp4Matrix};
//!
//! // Quantize 2 × 32 activations and 3 × 32 gate/up weights (K = 32: two scale blocks per row).
//! let values = |rows: usize| (0..rows * 32).map(|i| ((i * 7 % 13) as f32 - 6.0) / 4.0).collect::<Vec<_>>();
//! let a = NvFp4Matrix::quantize(2, 32, &values(2), GlobalScale::default())?;
//! let b1 = NvFp4Matrix::quantize(3, 32, &values(3), GlobalScale::Auto)?;
//! let b2 = NvFp4Matrix::quantize(3, 32, &values(3), GlobalScale::Auto)?;
//!
//! // C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ) on the CPU, checked against the f64 evaluation.
//! let c = reference::dual_gemm(&a, &b1, &b2)?;
//! let oracle = reference::dual_gemm_f64(&a, &b1, &b2)?;
//! assert_eq!(c.len(), 2 * 3);
//! assert!(reference::check(&c, &oracle, 3, TASK_TOLERANCE)?.passed());
//! # Ok::<(), nvfp4::Error>(())
//! ```
//!
//! The scale-factor layout has one definition, [`nvfp4_kernel::layout::BlockedScales`], used by
//! the host, the kernels and the tests.

pub mod checkpoint;
pub mod codec;
pub mod dequantize;
pub mod dual_gemm;
pub mod elementwise;
pub mod error;
pub mod gemm;
pub mod gpu;
pub mod grouped;
pub mod kernels;
pub mod matrix;
pub mod mlp;
pub mod problem;
pub mod progress;
pub mod quantize;
pub mod reference;
pub(crate) mod rules;
pub mod tools;

pub use error::{Error, Result};

/// The git revision this library was built from (`+dirty`: with uncommitted changes to tracked
/// files; `unknown`: not built from a git checkout). Benchmarks record it.
pub const BUILT_REVISION: &str = env!("NVFP4_BUILT_REVISION");
pub use matrix::NvFp4Matrix;
pub use nvfp4_kernel::layout::BlockedScales;
pub use problem::{Distribution, DualGemmShape, Problem};
pub use quantize::{GlobalScale, QuantizationStats};
