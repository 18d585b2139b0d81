//! Tensor-core generation 5 (sm_100f): tensor memory (TMEM) allocation, block-scaled MMA,
//! shared → TMEM copies, completion tracking and TMEM loads. All `cta_group::1`.
//!
//! Contracts (PTX ISA §9.7.16, docs/ptx-facts.md §1–5): `alloc`, `relinquish`, `dealloc`, `ld` and
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

/// Two `tcgen05.ld.sync.aligned.32x32b.x16.b32` (thread `t` of the warp reads 16 consecutive
/// columns of lane (lane of the address) + t, from `first` and from `second`), then
/// `tcgen05.wait::ld`, in one asm block: the loaded registers are undefined until the wait, and
/// only a single block ties them to it (separate blocks would let the compiler move a use above
/// the wait).
#[inline(always)]
pub fn ld_32x32b_x16_pair(first: u32, second: u32) -> ([u32; 16], [u32; 16]) {
    let (mut a, mut b) = ([0u32; 16], [0u32; 16]);
    // SAFETY: whole-warp call by contract; the warp reads its own lane quadrant.
    unsafe {
        asm!(
            "tcgen05.ld.sync.aligned.32x32b.x16.b32 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}}}, [{x}];",
            "tcgen05.ld.sync.aligned.32x32b.x16.b32 {{{16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}}}, [{y}];",
            "tcgen05.wait::ld.sync.aligned;",
            out(reg32) a[0], out(reg32) a[1], out(reg32) a[2], out(reg32) a[3],
            out(reg32) a[4], out(reg32) a[5], out(reg32) a[6], out(reg32) a[7],
            out(reg32) a[8], out(reg32) a[9], out(reg32) a[10], out(reg32) a[11],
            out(reg32) a[12], out(reg32) a[13], out(reg32) a[14], out(reg32) a[15],
            out(reg32) b[0], out(reg32) b[1], out(reg32) b[2], out(reg32) b[3],
            out(reg32) b[4], out(reg32) b[5], out(reg32) b[6], out(reg32) b[7],
            out(reg32) b[8], out(reg32) b[9], out(reg32) b[10], out(reg32) b[11],
            out(reg32) b[12], out(reg32) b[13], out(reg32) b[14], out(reg32) b[15],
            x = in(reg32) first,
            y = in(reg32) second,
        )
    };
    (a, b)
}
