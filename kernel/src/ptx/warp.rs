//! Warp-wide data exchange (all 32 lanes take part: member mask `0xffffffff`).

use core::arch::asm;

/// `shfl.sync.up.b32`: lane `i` gets `v` of lane `i − delta` (lanes below `delta` keep their own).
#[inline(always)]
pub fn shuffle_up(v: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange among the full warp; every lane executes it.
    unsafe {
        asm!(
            "shfl.sync.up.b32 {o}, {v}, {d}, 0, 0xffffffff;",
            o = out(reg32) out,
            v = in(reg32) v,
            d = in(reg32) delta,
        )
    };
    out
}

/// `shfl.sync.bfly.b32`: lane `i` gets `v` of lane `i ^ mask`.
#[inline(always)]
pub fn shuffle_xor(v: u32, mask: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange among the full warp; every lane executes it.
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {o}, {v}, {m}, 31, 0xffffffff;",
            o = out(reg32) out,
            v = in(reg32) v,
            m = in(reg32) mask,
        )
    };
    out
}

/// `activemask.b32`: the lanes of the warp executing this instruction together.
#[inline(always)]
pub fn active_lanes() -> u32 {
    let out: u32;
    // SAFETY: no operands but the result.
    unsafe { asm!("activemask.b32 {o};", o = out(reg32) out) };
    out
}

/// `shfl.sync.bfly` among the lanes `members` only (each of which must execute it, and the lane
/// `lane ^ mask` of every member must be a member): lane `i` gets `v` of lane `i ^ mask`.
#[inline(always)]
pub fn shuffle_xor_among(v: u32, mask: u32, members: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange among `members`, each of which executes it (caller).
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {o}, {v}, {m}, 31, {members};",
            o = out(reg32) out,
            v = in(reg32) v,
            m = in(reg32) mask,
            members = in(reg32) members,
        )
    };
    out
}

/// `shfl.sync.idx.b32`: every lane gets `v` of lane `source`.
#[inline(always)]
pub fn shuffle_index(v: u32, source: u32) -> u32 {
    let out: u32;
    // SAFETY: as above.
    unsafe {
        asm!(
            "shfl.sync.idx.b32 {o}, {v}, {s}, 31, 0xffffffff;",
            o = out(reg32) out,
            v = in(reg32) v,
            s = in(reg32) source,
        )
    };
    out
}

/// `redux.sync.min.u32`: the smallest `v` of the warp, on every lane.
#[inline(always)]
pub fn min_u32(v: u32) -> u32 {
    let out: u32;
    // SAFETY: as above.
    unsafe { asm!("redux.sync.min.u32 {o}, {v}, 0xffffffff;", o = out(reg32) out, v = in(reg32) v) };
    out
}

/// The inclusive prefix sum of `v` over the warp's lanes.
#[inline(always)]
pub fn inclusive_sum(mut v: u32) -> u32 {
    let lane = super::sreg::lane_id();
    let mut delta = 1;
    while delta < 32 {
        let other = shuffle_up(v, delta);
        if lane >= delta {
            v += other;
        }
        delta *= 2;
    }
    v
}

/// `redux.sync.max.u32`: the largest `v` of the warp, on every lane.
#[inline(always)]
pub fn max_u32(v: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange among the full warp; every lane executes it.
    unsafe { asm!("redux.sync.max.u32 {o}, {v}, 0xffffffff;", o = out(reg32) out, v = in(reg32) v) };
    out
}

/// `vote.sync.all.pred` over the full warp: whether `predicate` holds in every lane (all 32
/// lanes must call it together).
#[inline(always)]
pub fn all(predicate: bool) -> bool {
    let out: u32;
    // SAFETY: a full-warp vote; the callers keep the warp converged.
    unsafe {
        asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; vote.sync.all.pred q, p, 0xffffffff; selp.u32 {o}, 1, 0, q; }}",
            v = in(reg32) predicate as u32,
            o = out(reg32) out,
        )
    };
    out != 0
}

/// `vote.sync.ballot.b32` over the full warp: bit `i` set where lane `i`'s `predicate` holds
/// (all 32 lanes must call it together).
#[inline(always)]
pub fn ballot(predicate: bool) -> u32 {
    let out: u32;
    // SAFETY: a full-warp vote; the callers keep the warp converged.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {o}, p, 0xffffffff; }}",
            v = in(reg32) predicate as u32,
            o = out(reg32) out,
        )
    };
    out
}

/// `match.any.sync.b32` over the full warp: the mask of the lanes whose `v` equals this lane's
/// (all 32 lanes must call it together).
#[inline(always)]
pub fn match_any(v: u32) -> u32 {
    let out: u32;
    // SAFETY: a full-warp exchange; the callers keep the warp converged.
    unsafe { asm!("match.any.sync.b32 {o}, {v}, 0xffffffff;", o = out(reg32) out, v = in(reg32) v) };
    out
}
