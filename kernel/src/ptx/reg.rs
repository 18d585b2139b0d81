//! Register reallocation between warpgroups (`setmaxnreg`, sm_90a).
//!
//! Takes effect only if the entry has `.maxntid` and `.minnctapersm` (written by build.rs from
//! `launch.rs`); every warp of a warpgroup must execute the same call.

use core::arch::asm;

/// `setmaxnreg.inc.sync.aligned.u32 N`: grows this warpgroup's per-thread registers to `N`.
#[inline(always)]
pub fn increase<const N: u32>() {
    // SAFETY: changes register allocation only; warp-uniform by contract.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N) };
}

/// `setmaxnreg.dec.sync.aligned.u32 N`: shrinks this warpgroup's per-thread registers to `N`.
#[inline(always)]
pub fn decrease<const N: u32>() {
    // SAFETY: changes register allocation only; warp-uniform by contract.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N) };
}
