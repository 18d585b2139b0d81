//! Hopper (sm_90a) kernels. [`config`] (tiles, shared-memory plans, arguments) and [`registry`]
//! (every entry point, declared once) are pure and shared with the host; the kernels are
//! compiled for the device only:
//! * `dual_gemm`: the dense dual GEMM (its module doc holds the design and cost model);
//! * `grouped`: the grouped GEMM and grouped dual GEMM (and, through them, the plain GEMM);
//! * `mainloop`: the roles both share; `tokens`: the token operand and its pre-decoder;
//! * `decode`: the decode-size dual GEMM (M ≤ 16): warps stream weights into `mma.sync`.

pub mod config;
pub mod registry;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod decode;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod dual_gemm;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod grouped;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub(crate) mod mainloop;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod tokens;
