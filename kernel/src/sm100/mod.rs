//! Blackwell (sm_100f) kernels. [`config`] (tiles, plans, arguments) and [`registry`] (every
//! entry point, declared once) are pure and shared with the host; the kernels are compiled for
//! the device only:
//! * `dual_gemm`: the dense dual GEMM (its module doc holds the design);
//! * `grouped`: the grouped GEMM and grouped dual GEMM (and, through them, the plain GEMM);
//! * `roles`: the TMA, MMA and epilogue roles both share.
//!
//! Nothing here has run on hardware (no B200 available).

pub mod config;
pub mod registry;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_100f"))]
pub mod dual_gemm;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_100f"))]
pub mod grouped;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_100f"))]
pub(crate) mod roles;
