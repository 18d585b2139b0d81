//! Memory fences and CTA barriers.

use core::arch::asm;

/// `fence.mbarrier_init.release.cluster`: makes mbarrier initializations visible to the async
/// proxy (TMA completions); follow it with a CTA barrier.
#[inline(always)]
pub fn mbarrier_init() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.mbarrier_init.release.cluster;") };
}

/// `fence.proxy.async.shared::cta`: orders this thread's generic-proxy shared-memory writes
/// before later async-proxy reads (wgmma operands, bulk copies).
#[inline(always)]
pub fn proxy_async_shared() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;") };
}

/// `barrier.sync 0`: all threads of the CTA. The non-`.aligned` form, so it is legal where the
/// threads of a warp arrive from divergent code (rustc marks nothing `convergent`, so nothing
/// guarantees reconvergence before an aligned barrier).
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier has no memory operands.
    unsafe { asm!("barrier.sync 0;") };
}

/// `barrier.red.or.pred 0`: [`sync_threads`] that also tells every thread whether `predicate`
/// held in any thread of the CTA (non-`.aligned`, as [`sync_threads`]).
#[inline(always)]
pub fn sync_threads_or(predicate: bool) -> bool {
    let any: u32;
    // SAFETY: a barrier has no memory operands.
    unsafe {
        asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; barrier.red.or.pred q, 0, p; selp.u32 {o}, 1, 0, q; }}",
            v = in(reg32) predicate as u32,
            o = out(reg32) any,
        )
    };
    any != 0
}

/// `bar.sync ID, COUNT`: a named barrier for the `COUNT` threads (whole warps) that use `ID`.
#[inline(always)]
pub fn named_barrier<const ID: u32, const COUNT: u32>() {
    // SAFETY: a barrier has no memory operands; callers use each ID with one thread count.
    unsafe { asm!("bar.sync {id}, {count};", id = const ID, count = const COUNT) };
}

/// `bar.arrive ID, COUNT`: arrives at named barrier `ID` of `COUNT` threads (whole warps)
/// without waiting. The threads that wait there ([`named_barrier`]) see this thread's earlier
/// shared-memory writes once the barrier completes.
#[inline(always)]
pub fn named_barrier_arrive<const ID: u32, const COUNT: u32>() {
    // SAFETY: a barrier has no memory operands; callers use each ID with one thread count.
    unsafe { asm!("bar.arrive {id}, {count};", id = const ID, count = const COUNT) };
}

/// `fence.acq_rel.gpu`: orders this thread's memory accesses at GPU scope (between CTAs).
#[inline(always)]
pub fn acq_rel_gpu() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.gpu;") };
}

/// `griddepcontrol.wait`: waits until the grids this one depends on (the previous kernel of the
/// stream, when launched as a programmatic dependent) have completed and their memory is
/// visible. A no-op for a grid launched without that dependency. Put it before the first access
/// to memory another kernel may write.
#[inline(always)]
pub fn grid_dependency_wait() {
    // SAFETY: no operands.
    unsafe { asm!("griddepcontrol.wait;") };
}

/// `griddepcontrol.launch_dependents`: lets the next kernel of the stream, if launched as a
/// programmatic dependent, start its CTAs (they wait in [`grid_dependency_wait`] for this grid to
/// finish before touching memory).
#[inline(always)]
pub fn launch_dependents() {
    // SAFETY: no operands.
    unsafe { asm!("griddepcontrol.launch_dependents;") };
}
