//! One small `#[inline(always)]` function per PTX instruction the kernels use, grouped by family.
//!
//! Each wrapper documents its operands and contract. The text between the `asm!` quotes is copied
//! verbatim into the PTX by rustc's nvptx backend; operands become `%r`/`%rd`/`%rs` registers.

pub mod copy;
pub mod cvt;
pub mod fence;
pub mod mbarrier;
pub mod mem;
pub mod reg;
pub mod smem;
pub mod sreg;
#[cfg(nvfp4_arch = "sm_100f")]
pub mod tcgen05;
pub mod warp;
pub mod wgmma;
