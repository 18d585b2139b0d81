//! Asynchronous bulk copies global → shared that complete on an mbarrier (`complete_tx`), bulk
//! stores shared → global that complete in bulk groups, bulk prefetches into L2, and the
//! per-thread asynchronous copies (`cp.async`) that complete in groups the thread waits for.
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

/// `cp.async.bulk.global.shared::cta.bulk_group` of `bytes` (a multiple of 16) from shared `src`
/// to global `dst` (both 16-byte aligned), issued by lane 0 of the calling warp only (the other
/// lanes skip it); it joins that lane's next bulk group ([`bulk_commit`]). Every lane of the warp
/// calls it with the same operands, so that they can stay in uniform registers.
///
/// # Safety
/// Both ranges must be valid; the shared bytes were written before, and made visible to the
/// async proxy ([`crate::ptx::fence::proxy_async_shared`] and a barrier).
#[inline(always)]
pub unsafe fn bulk_store_lane0(dst: *mut u8, src: u32, bytes: u32, lane: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.eq.u32 p, {l}, 0; @p cp.async.bulk.global.shared::cta.bulk_group [{d}], [{s}], {n}; }}",
            l = in(reg32) lane,
            d = in(reg64) dst,
            s = in(reg32) src,
            n = in(reg32) bytes,
        )
    };
}

/// `cp.async.bulk.commit_group`: closes this thread's bulk group of stores issued since the last
/// commit.
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: only closes this thread's group.
    unsafe { asm!("cp.async.bulk.commit_group;") };
}

/// `cp.async.bulk.wait_group.read 0`: waits until every bulk store this thread committed has read
/// its shared source (the source may then be written again).
#[inline(always)]
pub fn bulk_wait_read_all() {
    // SAFETY: only waits.
    unsafe { asm!("cp.async.bulk.wait_group.read 0;", options(nostack)) };
}

/// `cp.async.bulk.wait_group 0`: waits until every bulk store this thread committed is complete.
#[inline(always)]
pub fn bulk_wait_all() {
    // SAFETY: only waits.
    unsafe { asm!("cp.async.bulk.wait_group 0;", options(nostack)) };
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

/// `cp.async.ca.shared.global` of 4 bytes from global `src` to shared `dst`, or with
/// `src_bytes = 0` four zero bytes without reading `src`; it joins the thread's next group
/// ([`async_commit`]).
///
/// # Safety
/// `dst` must be a 4-byte aligned shared address inside the allocation and `src` a 4-byte
/// aligned global address; `src_bytes` is 0 or 4, and 4 only where `src` is readable.
#[inline(always)]
pub unsafe fn async_4(dst: u32, src: *const u32, src_bytes: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{d}], [{s}], 4, {n};",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) src_bytes,
        )
    };
}

/// `cp.async.ca.shared.global` of 16 bytes from global `src` to shared `dst`, or with
/// `src_bytes = 0` sixteen zero bytes without reading `src`; it joins the thread's next group
/// ([`async_commit`]).
///
/// # Safety
/// `dst` must be a 16-byte aligned shared address inside the allocation and `src` a 16-byte
/// aligned global address; `src_bytes` is 0 or 16, and 16 only where `src` is readable.
#[inline(always)]
pub unsafe fn async_16(dst: u32, src: *const u8, src_bytes: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{d}], [{s}], 16, {n};",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) src_bytes,
        )
    };
}

/// `cp.async.commit_group`: closes the thread's group of [`async_4`] and [`async_16`] copies
/// issued since the last commit (an empty group if none).
#[inline(always)]
pub fn async_commit() {
    // SAFETY: only closes this thread's group of copies.
    unsafe { asm!("cp.async.commit_group;") };
}

/// `cp.async.wait_all`: waits until every copy this thread issued has written shared memory.
/// Other threads see the bytes after a barrier that follows their writers' waits.
#[inline(always)]
pub fn async_wait_all() {
    // SAFETY: only waits.
    unsafe { asm!("cp.async.wait_all;") };
}
