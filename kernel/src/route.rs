//! The Mixture-of-Experts routing in one kernel ([`RouteArgs`]): a stable counting sort of the
//! routed slots by expert, with the offset tables of the grouped ops and the combine's sources.
//! Stable (slot order within an expert) and without global atomics, so a routing always gives
//! the same rows — a row's position decides its tile and stream-K split in the grouped GEMM, so
//! an unstable order would change results in the last bits from run to run.
//!
//! A CTA of [`ROUTE_THREADS`] threads takes a run of slots in slot order (all of them, up to
//! [`ROUTE_SLOTS_PER_CTA`]; else that many each, [`route_ctas`]): a histogram of the experts in
//! shared memory (or, with several CTAs, every CTA's counts from the counting pass, summed, and
//! the earlier CTAs' counts as this CTA's start in each bin), the offsets by one warp's scans,
//! then rounds of [`ROUTE_THREADS`] slots in slot order: each slot's rank among its warp's
//! slots of the same expert (`match.any`), each warp's count per expert in a shared table, a
//! scan of that table per expert across the warps, and each slot's row = its expert's next row
//! + its warp's base + its rank. Bin `experts` collects the slots of no expert, after all
//! others.

use crate::common::{ROUTE_SLOTS_PER_CTA, ROUTE_THREADS, RouteArgs, route_ctas};
use crate::ptx::{fence, mem, smem, sreg, warp};
use crate::registry;

/// The bin of slot `i`: its expert, or `experts` for none.
///
/// # Safety
/// `i < args.slots`.
#[inline(always)]
unsafe fn bin_of(args: &RouteArgs, i: u32) -> u32 {
    // SAFETY: slot i's 8 bytes (the contract); the value's low word and its sign word.
    let [low, high] = unsafe { mem::ld_global_nc_v2_b32(args.expert_of.add(2 * i as usize)) };
    if high == 0 && low < args.experts {
        low
    } else {
        args.experts
    }
}

/// This CTA's slots: `begin..end` of the launch's.
#[inline(always)]
fn own_slots(args: &RouteArgs) -> (u32, u32) {
    if route_ctas(args.slots) == 1 {
        return (0, args.slots);
    }
    let begin = sreg::block_idx_x() * ROUTE_SLOTS_PER_CTA;
    (begin, (begin + ROUTE_SLOTS_PER_CTA).min(args.slots))
}

/// Counts the bins of slots `begin..end` into the shared table `counts` (`bins` words).
///
/// # Safety
/// Every thread of the CTA calls it; `end ≤ slots`; `counts` is `bins` words of shared memory.
#[inline(always)]
unsafe fn histogram(args: &RouteArgs, (begin, end): (u32, u32), counts: u32) {
    let (thread, bins) = (sreg::thread_idx_x(), args.experts + 1);
    let mut b = thread;
    while b < bins {
        // SAFETY: b < bins.
        unsafe { smem::st_b32(counts + 4 * b, 0) };
        b += ROUTE_THREADS;
    }
    fence::sync_threads();
    let mut i = begin + thread;
    while i < end {
        // SAFETY: i < slots; the bin is at most `experts`.
        unsafe { smem::red_add_u32(counts + 4 * bin_of(args, i), 1) };
        i += ROUTE_THREADS;
    }
    fence::sync_threads();
}

/// The counting pass of a launch of more than one CTA: CTA `c`'s count of each bin into
/// `counts[c · bins + bin]`.
///
/// # Safety
/// [`RouteArgs`]' contract; launched as [`route_ctas`] CTAs of [`ROUTE_THREADS`] threads with
/// `4 · (experts + 1)` bytes of shared memory or more.
#[inline(always)]
unsafe fn count(args: &RouteArgs) {
    let bins = args.experts + 1;
    let counts = smem::base();
    // SAFETY: the contract.
    unsafe { histogram(args, own_slots(args), counts) };
    let mut b = sreg::thread_idx_x();
    while b < bins {
        // SAFETY: this CTA's row of the count table (contract); b < bins.
        unsafe {
            mem::st_global_b32(
                args.counts.add((sreg::block_idx_x() * bins + b) as usize),
                smem::ld_b32(counts + 4 * b),
            )
        };
        b += ROUTE_THREADS;
    }
}

/// The kernel body (see the module doc).
///
/// # Safety
/// [`RouteArgs`]' contract; launched as [`route_ctas`] CTAs of [`ROUTE_THREADS`] threads with
/// `route_shared_bytes(experts)` bytes of shared memory, after the counting pass when that is
/// more than one.
#[inline(always)]
unsafe fn route(args: &RouteArgs) {
    let (thread, lane, warp_index) = (sreg::thread_idx_x(), sreg::lane_id(), sreg::thread_idx_x() / 32);
    let bins = args.experts + 1;
    // Shared tables, a word per bin: counts, next rows, then one per warp.
    let counts = smem::base();
    let next = counts + 4 * bins;
    let table = next + 4 * bins;
    let warps = ROUTE_THREADS / 32;
    let (begin, end) = own_slots(args);
    let (cta, ctas) = (sreg::block_idx_x(), route_ctas(args.slots));
    // SAFETY (shared accesses below): every address is inside the three tables (bins words
    // each, and `warps` rows of bins words), the launch's shared memory.
    if ctas == 1 {
        // SAFETY: the contract.
        unsafe { histogram(args, (begin, end), counts) };
    } else {
        // All CTAs' counts summed, and the earlier CTAs' (this CTA's start in each bin) in the
        // first row of `table` until the offsets are known.
        let mut b = thread;
        while b < bins {
            let (mut total, mut before) = (0, 0);
            for c in 0..ctas {
                // SAFETY: CTA c's count of bin b (contract: written by the counting pass).
                let n = unsafe { mem::ld_global_b32(args.counts.add((c * bins + b) as usize)) };
                total += n;
                if c < cta {
                    before += n;
                }
            }
            unsafe {
                smem::st_b32(counts + 4 * b, total);
                smem::st_b32(table + 4 * b, before);
            }
            b += ROUTE_THREADS;
        }
        fence::sync_threads();
    }
    // Offsets: warp 0 scans the bins 32 at a time (rows, and rows rounded up to 128).
    if warp_index == 0 {
        let (mut rows, mut padded) = (0u32, 0u32);
        let mut first = 0;
        while first < bins {
            let b = first + lane;
            let count = if b < bins {
                unsafe { smem::ld_b32(counts + 4 * b) }
            } else {
                0
            };
            let rounded = if b < args.experts {
                count.div_ceil(128) * 128
            } else {
                0
            };
            let (row_end, scale_end) = (warp::inclusive_sum(count), warp::inclusive_sum(rounded));
            if b < bins {
                let (row, scale) = (rows + row_end - count, padded + scale_end - rounded);
                // SAFETY: b ≤ experts: inside both offset tables and the next-row table.
                unsafe {
                    smem::st_b32(next + 4 * b, row);
                    if cta == 0 {
                        mem::st_global_b32(args.row_offsets.add(b as usize), row);
                        mem::st_global_b32(args.scale_offsets.add(b as usize), scale);
                    }
                }
            }
            rows += warp::shuffle_index(row_end, 31);
            padded += warp::shuffle_index(scale_end, 31);
            first += 32;
        }
    }
    fence::sync_threads();
    if ctas > 1 {
        // This CTA's rows in each bin start after the earlier CTAs'.
        let mut b = thread;
        while b < bins {
            unsafe {
                smem::st_b32(
                    next + 4 * b,
                    smem::ld_b32(next + 4 * b) + smem::ld_b32(table + 4 * b),
                )
            };
            b += ROUTE_THREADS;
        }
        fence::sync_threads();
    }
    // Rounds of ROUTE_THREADS slots, in slot order.
    // Slots past the end take bin `bins` (counted nowhere); each round loads the next one's.
    // SAFETY: i < end ≤ slots.
    let load_bin = |i: u32| {
        if i < end { unsafe { bin_of(args, i) } } else { bins }
    };
    let mut round = begin;
    let mut next_bin = load_bin(begin + thread);
    while round < end {
        let i = round + thread;
        let bin = next_bin;
        next_bin = load_bin(i + ROUTE_THREADS);
        let peers = warp::match_any(bin);
        let rank = (peers & ((1u32 << lane) - 1)).count_ones();
        let mut b = thread;
        while b < bins * warps {
            unsafe { smem::st_b32(table + 4 * b, 0) };
            b += ROUTE_THREADS;
        }
        fence::sync_threads();
        if rank == 0 && bin < bins {
            unsafe { smem::st_b32(table + 4 * (warp_index * bins + bin), peers.count_ones()) };
        }
        fence::sync_threads();
        // Each bin's warp counts become bases (an exclusive scan across the warps, lane `w`
        // holding warp `w`'s count: one warp per bin at a time); its total goes to `counts`
        // (the histogram is no longer needed).
        const _: () = assert!(ROUTE_THREADS / 32 == 32, "one lane per warp of the CTA");
        let mut b = warp_index;
        while b < bins {
            let at = table + 4 * (lane * bins + b);
            let count = unsafe { smem::ld_b32(at) };
            let inclusive = warp::inclusive_sum(count);
            unsafe { smem::st_b32(at, inclusive - count) };
            if lane == 31 {
                unsafe { smem::st_b32(counts + 4 * b, inclusive) };
            }
            b += warps;
        }
        fence::sync_threads();
        if bin < bins {
            let row =
                unsafe { smem::ld_b32(next + 4 * bin) + smem::ld_b32(table + 4 * (warp_index * bins + bin)) }
                    + rank;
            // SAFETY: i < slots (its bin is a real one) and row < slots: inside both outputs.
            unsafe {
                mem::st_global_b32(args.token_rows.add(row as usize), i / args.top_k.max(1));
                mem::st_global_b32(
                    args.sources.add(i as usize),
                    if bin < args.experts { row } else { u32::MAX },
                );
            }
        }
        fence::sync_threads();
        if thread < bins {
            unsafe {
                smem::st_b32(
                    next + 4 * thread,
                    smem::ld_b32(next + 4 * thread) + smem::ld_b32(counts + 4 * thread),
                )
            };
        }
        fence::sync_threads();
        round += ROUTE_THREADS;
    }
}

macro_rules! route_entry {
    ($name:ident) => {
        /// The Mixture-of-Experts routing (see the module doc).
        ///
        /// # Safety
        /// [`RouteArgs`]' contract, [`route_ctas`] CTAs of [`ROUTE_THREADS`] threads (after the
        /// counting pass when more than one).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: RouteArgs) {
            // SAFETY: forwarded contract.
            unsafe { route(&args) }
        }
    };
}

registry::route_entry!(route_entry);

macro_rules! route_count_entry {
    ($name:ident) => {
        /// The routing's counting pass (see the module doc).
        ///
        /// # Safety
        /// [`RouteArgs`]' contract, [`route_ctas`] CTAs of [`ROUTE_THREADS`] threads.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: RouteArgs) {
            // SAFETY: forwarded contract.
            unsafe { count(&args) }
        }
    };
}

registry::route_count_entry!(route_count_entry);
