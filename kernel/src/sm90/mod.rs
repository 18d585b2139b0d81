//! Hopper (sm_90a) kernels. [`config`] is pure and shared with the host; the kernel itself is
//! compiled for the device only.

pub mod config;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod dual_gemm;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_90a"))]
pub mod tokens;
