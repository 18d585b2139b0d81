//! The decode-size dual GEMM for Hopper (M ≤ 16 tokens): no rings between roles, no handoff,
//! the K split reduced inside the kernel.
//!
//! A CTA owns one *row group* ([`DECODE_GROUP_N`] outputs) and one K split. Its first
//! [`DECODE_WARPS_PER_MATRIX`] warps stream 16 gate rows each, the others the same rows of up.
//! Each warp copies its rows with `cp.async` into a ring of its own in shared memory
//! ([`DecodeRing`]): one copy group per *line* (two 128-K steps, a 128-byte run of each row),
//! each copy instruction reading four whole lines (8 lanes per row), the scale words beside
//! them; the bytes in flight hold no registers, and nothing waits on another warp. Per step,
//! lane `t` of each quad reads one 16-byte chunk (two scale blocks, the tiled kernel's
//! [`stage_block`] order) of each of its two rows, decodes it with the shared shift trick
//! ([`scaled_pairs`]) into the A fragment of `mma.sync.m16n8k16` (weights are the 16-row
//! operand) and multiplies it with the tokens as the 8-column operand. The CTA first decodes
//! its split's tokens into shared memory once, for all its warps, while the first lines are
//! on their way.
//!
//! The split's reduction: every CTA stores its f32 partial sums, and the last CTA of a row group
//! to arrive (an acq_rel counter per row group, which that CTA resets to zero) adds all splits'
//! sums in split order and writes `silu(α_gate·g) ⊙ (α_up·u)` as fp16: the result does not
//! depend on which CTA comes last, and no second launch is needed.

use crate::epilogue::silu;
use crate::layout::{ATOM_BYTES, ATOM_SCALE_COLS, BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{copy, cvt, fence, mem, mma, smem, sreg};
use crate::sm90::config::{
    DECODE_ATOMS_PER_STEP, DECODE_BLOCKS_PER_STEP, DECODE_GROUP_N, DECODE_LINE_BYTES, DECODE_RECORD_WORDS,
    DECODE_RING_SLOTS, DECODE_ROW_STEP_BYTES, DECODE_ROWS_PER_WARP, DECODE_SCALE_SLOT_BYTES,
    DECODE_SLICES_PER_STEP, DECODE_SLOT_PITCH, DECODE_TOKEN_TILE, DECODE_WARPS, DECODE_WARPS_PER_MATRIX,
    DecodeArgs, DecodeRing, K_PER_SLICE, decode_line_copy, decode_ring_offset, decode_row_groups,
    decode_scale_copy, decode_scale_ring_offset, decode_steps, decode_token_pitch, decode_token_tiles,
    decode_verdict_offset, stage_block,
};
use crate::sm90::tokens::{decode_slice_block, scaled_pairs};

/// One weight row's 16-byte chunk of a decode step as read from the ring: the packed codes of
/// two scale blocks and the word holding their scale codes (zeros where the blocks lie past K:
/// both were zero-filled by the copies, so they decode to zeros).
#[derive(Clone, Copy)]
struct RowChunk {
    words: [u32; 4],
    codes: u32,
}

impl RowChunk {
    /// Block `j` (0 or 1) of the chunk decoded: its eight scaled fp16x2 pairs. `byte` is the
    /// first block's code in `codes` (`first_block % 4`).
    #[inline(always)]
    fn pairs(&self, j: u32, byte: u32) -> [u32; 8] {
        let scale = cvt::e4m3_byte_to_f16x2_broadcast(self.codes, byte + j);
        scaled_pairs(self.words[2 * j as usize], self.words[2 * j as usize + 1], scale)
    }
}

/// The decode-size dual GEMM for up to 8 tokens (see the module doc).
///
/// # Safety
/// Arguments must satisfy [`DecodeArgs`]' contract with `m ≤ 8`, launched with
/// `DECODE_WARPS · 32` threads per CTA and [`crate::sm90::config::decode_shared_bytes`] of
/// dynamic shared memory.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn nvfp4_dual_gemm_decode_sm90_m8(args: DecodeArgs) {
    // SAFETY: forwarded.
    unsafe { decode::<1>(args) }
}

/// The decode-size dual GEMM for 9 to 16 tokens (see the module doc).
///
/// # Safety
/// As [`nvfp4_dual_gemm_decode_sm90_m8`], with `8 < m ≤ 16`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn nvfp4_dual_gemm_decode_sm90_m16(args: DecodeArgs) {
    // SAFETY: forwarded.
    unsafe { decode::<2>(args) }
}

/// The kernel body for `TILES` token tiles of [`DECODE_TOKEN_TILE`] (`decode_token_tiles(m)`).
///
/// # Safety
/// As the entry points.
#[inline(always)]
unsafe fn decode<const TILES: usize>(args: DecodeArgs) {
    let DecodeArgs {
        a,
        a_scales,
        b1,
        b1_scales,
        b2,
        b2_scales,
        out,
        partials,
        arrivals,
        m,
        n,
        k,
        steps_per_split,
        splits,
        alpha_gate,
        alpha_up,
    } = args;
    let (groups, tiles) = (decode_row_groups(n), TILES as u32);
    if groups == 0 || splits == 0 || decode_token_tiles(m) != tiles {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (split, group) = (sreg::block_idx_x() / groups, sreg::block_idx_x() % groups);
    let gate = warp < DECODE_WARPS_PER_MATRIX;
    let (data, scales) = if gate { (b1, b1_scales) } else { (b2, b2_scales) };
    let first_row = group * DECODE_GROUP_N + (warp % DECODE_WARPS_PER_MATRIX) * DECODE_ROWS_PER_WARP;
    let layout = BlockedScales::new(n as usize, k as usize);
    let blocks_of_k = k / SCALE_BLOCK_K as u32;
    let first_step = split * steps_per_split;
    let end_step = (first_step + steps_per_split).min(decode_steps(k));

    // Each warp streams its rows through its own ring of step slots ([`DecodeRing`]), a whole
    // line (two steps, 128 bytes of each row) per copy group, so that each copy instruction
    // requests whole 128-byte lines ([`decode_line_copy`]) and the bytes in flight hold no
    // registers; the scale words follow per step ([`decode_scale_copy`]). Chunks and atoms past
    // K are zero-filled (not read), so they decode to zeros.
    const _: () = assert!(
        stage_block(DECODE_SLICES_PER_STEP, 1) == DECODE_BLOCKS_PER_STEP + stage_block(0, 1)
            && DECODE_ROW_STEP_BYTES == 4 * 16
            && DECODE_ROWS_PER_WARP * DECODE_ATOMS_PER_STEP == 32
    );
    // A warp whose rows lie past N (in a partial last row group) copies and reads nothing: its
    // ring is empty, its sums stay zero, and the reduction stores none of its rows.
    let active = first_row < n;
    let ring = DecodeRing::new(
        DECODE_RING_SLOTS,
        first_step,
        if active { end_step } else { first_step },
    );
    let warp_ring =
        smem::base() + decode_ring_offset(m, steps_per_split) + warp * ring.slots * DECODE_SLOT_PITCH;
    let warp_scale_ring = smem::base()
        + decode_scale_ring_offset(m, steps_per_split)
        + warp * ring.slots * DECODE_SCALE_SLOT_BYTES;
    let row_bytes = k / 2;
    let (scale_atom, scale_row) = decode_scale_copy(lane);
    let scale_at = layout.offset_u32(first_row + scale_row, 0);
    let in_split = |step: u32| step >= ring.first && step < ring.end;
    // Commits relative line `line`'s copies as one group of this lane.
    let copy_line = |line: u32| {
        let absolute = ring.base / 2 + line;
        let (_, chunk) = decode_line_copy(lane, 0);
        let step = 2 * line + chunk / 4;
        if in_split(step) {
            let exists = 2 * DECODE_BLOCKS_PER_STEP * absolute + 2 * chunk < blocks_of_k;
            for copy in 0..4 {
                let (row, chunk) = decode_line_copy(lane, copy);
                let at = (first_row + row) * row_bytes;
                let at = if exists {
                    at + DECODE_LINE_BYTES * absolute + 16 * chunk
                } else {
                    at
                };
                // SAFETY: a chunk of one of this warp's rows (inside B; past K the row's first
                // chunk, not read: zero-filled), into this warp's slot of its step, which no
                // lane reads until this group completes and the warp has synchronized.
                unsafe {
                    copy::async_16(
                        warp_ring + ring.data_offset(step, row, chunk % 4),
                        data.add(at as usize),
                        if exists { 16 } else { 0 },
                    )
                };
            }
        }
        for half in 0..2 {
            let step = 2 * line + half;
            if in_split(step) {
                let atom = DECODE_ATOMS_PER_STEP * (ring.base + step) + scale_atom;
                let exists = atom * (ATOM_SCALE_COLS as u32) < blocks_of_k;
                let at = if exists {
                    scale_at + atom * ATOM_BYTES as u32
                } else {
                    scale_at
                };
                // SAFETY: the row's scale word of an atom inside the scales (past K the row's
                // first word, not read: zero-filled), into this warp's scale slot of the step.
                unsafe {
                    copy::async_4(
                        warp_scale_ring + ring.scale_offset(step, scale_atom, scale_row),
                        scales.add(at as usize),
                        if exists { 4 } else { 0 },
                    )
                };
            }
        }
        copy::async_commit();
    };
    // This lane's chunks of rows `g` and `g + 8` in a step (chunk `t`: [`stage_block`] order),
    // with their scale words (atom `t / 2` of the step).
    let lane_block = stage_block(0, t);
    let byte = lane_block % ATOM_SCALE_COLS as u32;
    let read = |step: u32| {
        [0, 1].map(|r| {
            let row = g + 8 * r;
            // SAFETY: this warp's slot of the step, complete and synchronized (the loop).
            unsafe {
                RowChunk {
                    words: smem::ld_v4(warp_ring + ring.data_offset(step, row, t)),
                    codes: smem::ld_b32(warp_scale_ring + ring.scale_offset(step, lane_block / 4, row)),
                }
            }
        })
    };

    fence::grid_dependency_wait(); // A may come from the kernel before (no-op if plain)
    // The first lines' weights are on their way while the tokens are decoded.
    let mut issued = 0;
    while ring.issuable(issued, ring.first) {
        copy_line(issued);
        issued += 1;
    }

    // The split's tokens, decoded into shared memory once per CTA (rows past M zero), one item
    // per (64-K slice, token row), token fastest. A token row holds, per slice, four 32-byte
    // runs: run `w` holds the eight pairs of quad lane `w`'s block (word `w` of the slice's
    // chunks 0..8 in `decode_slice_chunks`), so that a lane reads them with two 16-byte loads.
    let pitch = decode_token_pitch(steps_per_split);
    // At least 1: the `max`es only prove the divisions below cannot panic.
    let token_rows = (tiles * DECODE_TOKEN_TILE).max(1);
    let split_slices = (end_step.saturating_sub(first_step) * DECODE_SLICES_PER_STEP).max(1);
    let a_layout = BlockedScales::new(m as usize, k as usize);
    let mut item = thread;
    while item < token_rows * split_slices {
        let (token, local_slice) = (item % token_rows, item / token_rows);
        let at = smem::base() + token * pitch + local_slice * 2 * K_PER_SLICE;
        for w in 0..4 {
            let pairs = if token < m {
                // SAFETY: A's row `token` and its scales (contract).
                unsafe {
                    decode_slice_block(
                        a.add(token as usize * row_bytes as usize),
                        a_scales,
                        a_layout,
                        token as usize,
                        k,
                        first_step * DECODE_SLICES_PER_STEP + local_slice,
                        w,
                    )
                }
            } else {
                [0; 8]
            };
            // SAFETY: run `w` of the slice's 128 bytes of this token row, inside
            // `decode_shared_bytes`.
            unsafe {
                smem::st_v4(at + 32 * w, [pairs[0], pairs[1], pairs[2], pairs[3]]);
                smem::st_v4(at + 32 * w + 16, [pairs[4], pairs[5], pairs[6], pairs[7]]);
            }
        }
        item += sreg::block_dim_x();
    }
    fence::sync_threads();

    // This lane's eight token pairs of a slice: token row `g` of tile `tile`, quad lane `t`'s run.
    let lane_tokens = smem::base() + g * pitch + 32 * t;
    let tokens = |tile: u32, local_slice: u32| {
        let at = lane_tokens + tile * DECODE_TOKEN_TILE * pitch + local_slice * 2 * K_PER_SLICE;
        // SAFETY: inside the staged tokens.
        let (lo, hi) = unsafe { (smem::ld_v4(at), smem::ld_v4(at + 16)) };
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
    };
    // The MMA's C fragments, one per token tile.
    let mut sums = [[0f32; 4]; TILES];
    let mut step = ring.first;
    while step < ring.end {
        // This step's line complete for the whole warp (which has also read every earlier
        // step), then the next line goes out into the slots of steps already read.
        if ring.pending(issued, step) == 0 {
            copy::async_wait::<0>();
        } else {
            copy::async_wait::<1>();
        }
        fence::sync_warp();
        if ring.issuable(issued, step) {
            copy_line(issued);
            issued += 1;
        }
        let chunks = read(step);
        // Each slice of the step: decode its block for both rows, then four K16 MMAs per tile.
        for j in 0..DECODE_SLICES_PER_STEP {
            let weights = [chunks[0].pairs(j, byte), chunks[1].pairs(j, byte)];
            let local_slice = (step - ring.first) * DECODE_SLICES_PER_STEP + j;
            let b: [[u32; 8]; TILES] = core::array::from_fn(|tile| tokens(tile as u32, local_slice));
            for k16 in 0..4 {
                let a = [
                    weights[0][2 * k16],
                    weights[1][2 * k16],
                    weights[0][2 * k16 + 1],
                    weights[1][2 * k16 + 1],
                ];
                for tile in 0..TILES {
                    sums[tile] =
                        mma::m16n8k16_f32_f16(sums[tile], a, [b[tile][2 * k16], b[tile][2 * k16 + 1]]);
                }
            }
        }
        step += 1;
    }
    // Nothing is in flight here (the last step waited for every group), but the reduction may
    // reuse the rings' bytes: make that independent of the schedule's arithmetic.
    copy::async_wait::<0>();
    fence::launch_dependents();

    // Publish this warp's partial sums, then count the CTA in.
    let record = |split: u32, warp: u32, tile: u32| {
        (((split * groups + group) * DECODE_WARPS + warp) * tiles + tile) * DECODE_RECORD_WORDS + 4 * lane
    };
    for (tile, sums) in sums.iter().enumerate() {
        // SAFETY: this warp's record, inside the partial-sum buffer (contract).
        unsafe {
            mem::st_global_v4_b32(
                partials.add(record(split, warp, tile as u32) as usize),
                sums.map(f32::to_bits),
            )
        };
    }
    fence::acq_rel_gpu();
    fence::sync_threads();
    let verdict = smem::base() + decode_verdict_offset(m, steps_per_split);
    if thread == 0 {
        // SAFETY: the row group's counter (contract); only the last CTA of this launch writes
        // it back to zero, after every split has counted in.
        let last = unsafe { mem::atom_add_acq_rel_gpu_u32(arrivals.add(group as usize), 1) } == splits - 1;
        if last {
            // SAFETY: as above.
            unsafe { mem::st_relaxed_gpu_b32(arrivals.add(group as usize), 0) };
        }
        // SAFETY: the verdict word after the tokens and rings, inside `decode_shared_bytes`.
        unsafe { smem::st_b32(verdict, last as u32) };
    }
    fence::sync_threads();
    // SAFETY: as above.
    if unsafe { smem::ld_b32(verdict) } == 0 {
        return;
    }
    // No fence here: thread 0's acq_rel RMW acquired every split's release, and the barrier
    // above orders this CTA's loads after it (the loads bypass L1).

    // The last CTA: each reducer (warp of a matrix, token tile, lane) adds the splits in order.
    // With one token tile the CTA has two threads per reducer: each adds half of the splits
    // (all of a half's loads in flight at once up to 4 splits), then the second half's sums go
    // through shared memory to the first: a fixed order, so still deterministic.
    let reducers = DECODE_WARPS_PER_MATRIX * tiles * 32;
    let halves = (DECODE_WARPS * 32 / reducers).max(1);
    let (half, reducer) = (thread / reducers, thread % reducers);
    let (tile, warp) = ((reducer / 32) % tiles, reducer / 32 / tiles);
    let load = |split: u32, warp: u32| {
        // SAFETY: a record of this launch, published before the arrival count (acquired).
        unsafe { mem::ld_global_cg_v4_b32(partials.add(record(split, warp, tile) as usize)) }
    };
    let per_half = splits.div_ceil(halves);
    let (mut split, end_split) = (half * per_half, ((half + 1) * per_half).min(splits));
    let (mut gate, mut up) = ([0f32; 4], [0f32; 4]);
    // Four splits' loads in flight at a time, added in split order.
    while split < end_split {
        let group = [0, 1, 2, 3].map(|i| {
            if split + i < end_split {
                [
                    load(split + i, warp),
                    load(split + i, warp + DECODE_WARPS_PER_MATRIX),
                ]
            } else {
                [[0; 4]; 2]
            }
        });
        for [g, u] in group {
            for i in 0..4 {
                gate[i] += f32::from_bits(g[i]);
                up[i] += f32::from_bits(u[i]);
            }
        }
        split += 4;
    }
    if halves > 1 {
        // The token rows and rings (these bytes may cover both) are no longer read or written:
        // every warp finished its loop, and its copies, before the arrival barrier (the verdict
        // word lies past these bytes).
        let at = smem::base() + reducer * 32;
        if half == 1 {
            // SAFETY: `reducers · 32` = `DECODE_HALVES_BYTES`, before the verdict word.
            unsafe {
                smem::st_v4(at, gate.map(f32::to_bits));
                smem::st_v4(at + 16, up.map(f32::to_bits));
            }
        }
        fence::sync_threads();
        if half != 0 {
            return;
        }
        // SAFETY: as above, written before the barrier.
        let (g, u) = unsafe { (smem::ld_v4(at), smem::ld_v4(at + 16)) };
        for i in 0..4 {
            gate[i] += f32::from_bits(g[i]);
            up[i] += f32::from_bits(u[i]);
        }
    }
    let first_row = group * DECODE_GROUP_N + warp * DECODE_ROWS_PER_WARP;
    for i in 0..4u32 {
        let row = first_row + g + 8 * (i / 2);
        let token = tile * DECODE_TOKEN_TILE + 2 * t + i % 2;
        if token < m && row < n {
            let value = silu(alpha_gate * gate[i as usize]) * (alpha_up * up[i as usize]);
            // SAFETY: inside C (token < m, row < n).
            unsafe { mem::st_global_b16(out.add((token * n + row) as usize), cvt::f32_to_f16_rn(value)) };
        }
    }
}
