//! Blackwell (sm_100f) kernels. [`config`] is pure and shared with the host; the kernel itself
//! is compiled for the device only. Nothing here has run on hardware (no B200 available).

pub mod config;

#[cfg(all(target_arch = "nvptx64", nvfp4_arch = "sm_100f"))]
pub mod dual_gemm;
