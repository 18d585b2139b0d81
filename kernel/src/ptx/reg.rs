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

/// `mov.u32`: `v` unchanged, but opaque to LLVM, so that values derived from it are computed
/// where they are used instead of being hoisted out of loops (and held in registers across the
/// mainloop): for address arithmetic that is cheap to redo but costly to keep live.
#[inline(always)]
pub fn opaque(v: u32) -> u32 {
    let out: u32;
    // SAFETY: a register move; not `pure`, so LLVM does not move or merge it.
    unsafe { asm!("mov.u32 {o}, {i};", o = out(reg32) out, i = in(reg32) v) };
    out
}

/// `mov.u64`: [`opaque`] for 64-bit values (addresses).
#[inline(always)]
pub fn opaque_u64(v: u64) -> u64 {
    let out: u64;
    // SAFETY: a register move; not `pure`, so LLVM does not move or merge it.
    unsafe { asm!("mov.u64 {o}, {i};", o = out(reg64) out, i = in(reg64) v) };
    out
}
