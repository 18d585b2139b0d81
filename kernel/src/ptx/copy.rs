//! Asynchronous bulk copies global → shared that complete on an mbarrier (`complete_tx`), and
//! bulk prefetches into L2.
//!
//! The destination uses the `.shared::cluster` spelling (a CTA's own shared address is valid
//! there), since `.shared::cta` destinations need PTX 8.6 and the sm_90a module is PTX 8.0.

use core::arch::asm;

/// `cp.async.bulk.tensor.2d` load of one box at coordinates `(c0, c1)` (innermost first) of the
/// tensor map at generic address `tensor_map` into shared `dst`; completes `bytes` on `bar`.
///
/// # Safety
/// `tensor_map` must point to a valid `CUtensorMap` in global memory; `dst` must be aligned as
/// the map's swizzle requires (1024 bytes for 128-byte swizzle) with room for the box; `bar` must
/// expect the box's bytes.
#[inline(always)]
pub unsafe fn tensor_2d(dst: u32, tensor_map: u64, c0: i32, c1: i32, bar: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) tensor_map,
            x = in(reg32) c0,
            y = in(reg32) c1,
            b = in(reg32) bar,
        )
    };
}

/// `cp.async.bulk` of `bytes` (a multiple of 16) from global `src` to shared `dst` (both 16-byte
/// aligned); completes `bytes` on `bar`.
///
/// # Safety
/// Both ranges must be valid; `bar` must expect the bytes.
#[inline(always)]
pub unsafe fn bulk(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) bytes,
            b = in(reg32) bar,
        )
    };
}

/// `prefetch.tensormap`: brings a tensor map into the cache ahead of its first use.
///
/// # Safety
/// `tensor_map` must be the generic address of a tensor map.
#[inline(always)]
pub unsafe fn prefetch_tensor_map(tensor_map: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) tensor_map) };
}

/// `cp.async.bulk.prefetch.L2.global`: starts loading `bytes` (a multiple of 16) at `src`
/// (16-byte aligned) into L2. Only a hint: it cannot change what any load returns (L2 is where
/// all SMs' accesses meet), so it may run before the previous kernel has finished.
///
/// # Safety
/// The range must be valid global memory.
#[inline(always)]
pub unsafe fn prefetch_bulk_l2(src: *const u8, bytes: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("cp.async.bulk.prefetch.L2.global [{s}], {n};", s = in(reg64) src, n = in(reg32) bytes) };
}
