//! mbarrier operations on shared memory (`.shared::cta`, 32-bit shared addresses).
//!
//! Contract: a barrier is initialized once by one thread, followed by
//! [`crate::ptx::fence::mbarrier_init`] and a CTA barrier before any other use. Waiting is a
//! `try_wait.parity` loop: it returns once the phase with the given parity has completed.

use core::arch::asm;

/// `mbarrier.init.shared::cta.b64 [bar], count`.
///
/// # Safety
/// `bar` must be an 8-byte aligned shared address that no thread uses concurrently.
#[inline(always)]
pub unsafe fn init(bar: u32, count: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count) };
}

/// `mbarrier.arrive.shared::cta.b64`: one arrival (release semantics, CTA scope).
///
/// # Safety
/// `bar` must be an initialized mbarrier.
#[inline(always)]
pub unsafe fn arrive(bar: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar) };
}

/// `mbarrier.arrive.expect_tx`: one arrival that also expects `bytes` of asynchronous copies.
///
/// # Safety
/// `bar` must be an initialized mbarrier.
#[inline(always)]
pub unsafe fn arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
            b = in(reg32) bar,
            n = in(reg32) bytes
        )
    };
}

/// `mbarrier.try_wait.parity`: true once the phase of parity `parity` has completed (the
/// hardware may suspend the thread for a short, system-dependent time first).
///
/// # Safety
/// `bar` must be an initialized mbarrier.
#[inline(always)]
pub unsafe fn try_wait_parity(bar: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph};",
            "selp.u32 {d}, 1, 0, p;",
            "}}",
            b = in(reg32) bar,
            ph = in(reg32) parity,
            d = out(reg32) done,
        )
    };
    done != 0
}

/// How long (ns) [`wait_suspending`] lets a thread stay suspended in one `try_wait`: CUTLASS's
/// 10 ms, that is, until the phase completes.
pub const SUSPEND_TIME_HINT_NS: u32 = 10_000_000;

/// [`try_wait_parity`] with [`SUSPEND_TIME_HINT_NS`] as the suspend-time hint.
///
/// # Safety
/// `bar` must be an initialized mbarrier.
#[inline(always)]
pub unsafe fn try_wait_parity_suspending(bar: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}, {hint};",
            "selp.u32 {d}, 1, 0, p;",
            "}}",
            b = in(reg32) bar,
            ph = in(reg32) parity,
            hint = const SUSPEND_TIME_HINT_NS,
            d = out(reg32) done,
        )
    };
    done != 0
}

/// Waits like [`wait`], but lets the thread sleep until the phase completes: for warps that
/// would otherwise spin for long on the schedulers other warps need (at M = 16 the sm_90
/// decoders' retry loops were about 11 % of all instructions issued).
///
/// # Safety
/// `bar` must be an initialized mbarrier that eventually completes that phase.
#[inline(always)]
pub unsafe fn wait_suspending(bar: u32, parity: u32) {
    // SAFETY: guaranteed by the caller.
    while !unsafe { try_wait_parity_suspending(bar, parity) } {}
}

/// Waits until the phase of parity `parity` of `bar` has completed (acquire semantics).
///
/// # Safety
/// `bar` must be an initialized mbarrier that eventually completes that phase.
#[inline(always)]
pub unsafe fn wait(bar: u32, parity: u32) {
    // SAFETY: guaranteed by the caller.
    while !unsafe { try_wait_parity(bar, parity) } {}
}
