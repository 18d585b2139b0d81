//! One small `#[inline(always)]` function per PTX instruction the kernels use, grouped by family.
//!
//! Each wrapper documents its operands and contract. The text between the `asm!` quotes is copied
//! verbatim into the PTX by rustc's nvptx backend; operands become `%r`/`%rd`/`%rs` registers.

pub mod copy;
pub mod cvt;
pub mod fence;
pub mod float;
pub mod mbarrier;
pub mod mem;
pub mod mma;
pub mod reg;
pub mod simd;
pub mod smem;
pub mod sreg;
#[cfg(nvfp4_arch = "sm_100f")]
pub mod tcgen05;
pub mod warp;
pub mod wgmma;

/// The generic address of byte `offset` of kernel `$entry`'s one parameter (its arguments
/// struct): `mov` of the parameter symbol (rustc names it `<entry>_param_0`), then `cvta.param`
/// (PTX ISA 7.7+). For instructions that read parameter space through a generic address, as TMA
/// does for a [`TensorMap`](crate::launch::TensorMap) argument. Valid only inside `$entry`.
macro_rules! kernel_param_address {
    ($entry:ident, $offset:expr) => {{
        let address: u64;
        // SAFETY: reads the address of the entry's own parameter; no memory access.
        unsafe {
            core::arch::asm!(
                concat!("mov.b64 {a}, ", stringify!($entry), "_param_0;"),
                "cvta.param.u64 {a}, {a};",
                a = out(reg64) address,
                options(nomem, nostack), // not `pure`: recomputed at each use, never hoisted into a register
            )
        };
        address + $offset as u64
    }};
}
pub(crate) use kernel_param_address;
