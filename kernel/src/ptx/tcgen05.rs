//! Tensor-core generation 5 (sm_100a): tensor memory (TMEM) allocation, block-scaled MMA,
//! shared → TMEM copies, completion tracking and TMEM loads. All `cta_group::1`.
//!
//! Contracts (PTX ISA §9.7.16, ptx-facts.md §1–5): `alloc`, `relinquish`, `dealloc`, `ld` and
//! `wait_ld` are `.sync.aligned` (a whole warp, warp-uniform); `mma`, `cp` and `commit` are issued
//! by one thread. `commit` makes an mbarrier arrive once all of the issuing thread's earlier
//! asynchronous tcgen05 operations have completed. `cp` → `mma` is ordered; `mma` → `cp` is not
//! (do not overwrite scale columns an MMA in flight may read). TMEM address = (lane << 16) | column.
//! Nothing here has run on hardware; the syntax is ptxas-checked.

use core::arch::asm;

/// `tcgen05.alloc`: allocates `COLUMNS` TMEM columns and writes their base address to the shared
/// word at `slot`.
#[inline(always)]
pub fn alloc<const COLUMNS: u32>(slot: u32) {
    // SAFETY: whole-warp call by contract; `slot` is a shared word.
    unsafe {
        asm!("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [{s}], {n};", s = in(reg32) slot, n = const COLUMNS)
    };
}

/// `tcgen05.relinquish_alloc_permit`: this CTA allocates no more.
#[inline(always)]
pub fn relinquish_alloc_permit() {
    // SAFETY: whole-warp call by contract.
    unsafe { asm!("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;") };
}

/// `tcgen05.dealloc`: frees `COLUMNS` columns at `base` (after every TMEM access has finished).
#[inline(always)]
pub fn dealloc<const COLUMNS: u32>(base: u32) {
    // SAFETY: whole-warp call by contract.
    unsafe {
        asm!("tcgen05.dealloc.cta_group::1.sync.aligned.b32 {b}, {n};", b = in(reg32) base, n = const COLUMNS)
    };
}

/// `tcgen05.fence::before_thread_sync`: orders earlier tcgen05 operations before a following
/// thread synchronization (barrier, mbarrier arrive).
#[inline(always)]
pub fn fence_before_thread_sync() {
    // SAFETY: ordering only.
    unsafe { asm!("tcgen05.fence::before_thread_sync;") };
}

/// `tcgen05.fence::after_thread_sync`: orders later tcgen05 operations after a preceding thread
/// synchronization (barrier, mbarrier wait).
#[inline(always)]
pub fn fence_after_thread_sync() {
    // SAFETY: ordering only.
    unsafe { asm!("tcgen05.fence::after_thread_sync;") };
}

/// What the MMA does with its A operand's collector buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ACollector {
    /// Read A from shared memory; do not keep it (the default).
    Discard,
    /// Read A from shared memory and keep it for the next MMA (`.collector::a::fill`).
    Fill,
    /// Reuse the A kept by the previous MMA, then drop it (`.collector::a::lastuse`); the
    /// A descriptor must be the same.
    LastUse,
}

macro_rules! mxf4nvf4_mma {
    ($collector:literal, $d:expr, $a:expr, $b:expr, $i:expr, $sa:expr, $sb:expr, $acc:expr) => {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {acc}, 0;",
            concat!(
                "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16",
                $collector,
                " [{d}], {a}, {b}, {i}, [{sa}], [{sb}], p;"
            ),
            "}}",
            d = in(reg32) $d,
            a = in(reg64) $a,
            b = in(reg64) $b,
            i = in(reg32) $i,
            sa = in(reg32) $sa,
            sb = in(reg32) $sb,
            acc = in(reg32) $acc as u32,
        )
    };
}

/// `tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16{.collector::a::*}`:
/// D[128 × N] (+)= A · Bᵀ with e2m1 A and B from shared memory (descriptors), ue4m3 scales from
/// TMEM, fp32 D in TMEM.
///
/// # Safety
/// Descriptors, addresses and `idesc` must describe valid operands; single-thread issue.
#[inline(always)]
pub unsafe fn mma_mxf4nvf4(
    d: u32,
    a_desc: u64,
    b_desc: u64,
    idesc: u32,
    sfa: u32,
    sfb: u32,
    accumulate: bool,
    collector: ACollector,
) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        match collector {
            ACollector::Discard => mxf4nvf4_mma!("", d, a_desc, b_desc, idesc, sfa, sfb, accumulate),
            ACollector::Fill => mxf4nvf4_mma!(
                ".collector::a::fill",
                d,
                a_desc,
                b_desc,
                idesc,
                sfa,
                sfb,
                accumulate
            ),
            ACollector::LastUse => {
                mxf4nvf4_mma!(
                    ".collector::a::lastuse",
                    d,
                    a_desc,
                    b_desc,
                    idesc,
                    sfa,
                    sfb,
                    accumulate
                )
            }
        }
    }
}

/// `tcgen05.cp.cta_group::1.32x128b.warpx4`: one 512-byte scale atom (32 rows × 16 bytes) from
/// shared memory to TMEM lanes 0..31, 4 columns, replicated to all four lane quadrants.
///
/// # Safety
/// `desc` must describe the atom ([`crate::desc::umma_desc_scale_atom`]); single-thread issue.
#[inline(always)]
pub unsafe fn cp_32x128b_warpx4(taddr: u32, desc: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("tcgen05.cp.cta_group::1.32x128b.warpx4 [{t}], {d};", t = in(reg32) taddr, d = in(reg64) desc)
    };
}

/// `tcgen05.commit`: the mbarrier at shared address `bar` receives one arrival when all earlier
/// asynchronous tcgen05 operations of this thread have completed.
///
/// # Safety
/// `bar` must be an initialized mbarrier; single-thread issue.
#[inline(always)]
pub unsafe fn commit(bar: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [{b}];", b = in(reg32) bar)
    };
}

/// `tcgen05.ld.sync.aligned.32x32b.x16.b32`: thread `t` of the warp reads 16 consecutive
/// columns of lane (lane of `taddr`) + t. Registers are undefined until [`wait_ld`].
#[inline(always)]
pub fn ld_32x32b_x16(taddr: u32) -> [u32; 16] {
    let r: [u32; 16];
    let (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15);
    // SAFETY: whole-warp call by contract; the warp reads its own lane quadrant.
    unsafe {
        asm!(
            "tcgen05.ld.sync.aligned.32x32b.x16.b32 {{{r0}, {r1}, {r2}, {r3}, {r4}, {r5}, {r6}, {r7}, {r8}, {r9}, {r10}, {r11}, {r12}, {r13}, {r14}, {r15}}}, [{t}];",
            t = in(reg32) taddr,
            r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
            r4 = out(reg32) r4, r5 = out(reg32) r5, r6 = out(reg32) r6, r7 = out(reg32) r7,
            r8 = out(reg32) r8, r9 = out(reg32) r9, r10 = out(reg32) r10, r11 = out(reg32) r11,
            r12 = out(reg32) r12, r13 = out(reg32) r13, r14 = out(reg32) r14, r15 = out(reg32) r15,
        )
    };
    r = [
        r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15,
    ];
    r
}

/// `tcgen05.wait::ld.sync.aligned`: waits for this thread's earlier `tcgen05.ld`s.
#[inline(always)]
pub fn wait_ld() {
    // SAFETY: ordering only; whole-warp call.
    unsafe { asm!("tcgen05.wait::ld.sync.aligned;") };
}
