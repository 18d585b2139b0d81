//! The decode-size dual GEMM and plain GEMM for Hopper (M ≤ 16 tokens): no rings, no handoff
//! between roles, the K split reduced inside the kernel.
//!
//! A CTA owns one *row group* ([`DECODE_GROUP_N`] outputs) and one K split. Its first
//! [`DECODE_WARPS_PER_MATRIX`] warps stream 16 gate rows each, the others the same rows of up;
//! in the plain GEMM both halves stream the same rows of B, the first half the split's even
//! steps and the second its odd ones, and the reduction adds the halves.
//! Per 128-K step, lane `t` of each quad loads one 16-byte chunk (two scale blocks, the tiled
//! kernel's [`stage_block`] order) of each of its two rows, decodes it with the shared shift
//! trick ([`scaled_pairs`]) into the A fragment of `mma.sync.m16n8k16` (weights are the 16-row
//! operand) and multiplies it with the tokens as the 8-column operand. The CTA first decodes
//! its split's tokens into shared memory once, for all its warps; the next step's weight loads
//! go out before a step is decoded. Nothing waits on another warp inside the loop.
//!
//! The split's reduction: every CTA stores its f32 partial sums, and the last CTA of a row group
//! to arrive (an acq_rel counter per row group, which that CTA resets to zero) adds all splits'
//! sums in split order and writes `silu(α_gate·g) ⊙ (α_up·u)` (plain: `α_gate·(g + u)`) as
//! fp16, or (the NVFP4 entries, gated) as NVFP4 through a shared staging of the row group's
//! outputs ([`Nvfp4Tile`]): the result does not depend on which CTA comes last, and no second
//! launch is needed.

use crate::epilogue::{Nvfp4Tile, half_bits, silu};
use crate::layout::{ATOM_BYTES, ATOM_SCALE_COLS, BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{copy, cvt, fence, mem, mma, smem, sreg};
use crate::sm90::config::{
    DECODE_BLOCKS_PER_STEP, DECODE_GROUP_N, DECODE_NVFP4_STAGING_OFFSET, DECODE_RECORD_WORDS,
    DECODE_ROWS_PER_WARP, DECODE_SLICES_PER_STEP, DECODE_TOKEN_TILE, DECODE_WARPS, DECODE_WARPS_PER_MATRIX,
    DecodeArgs, K_PER_SLICE, decode_steps, decode_token_pitch, decode_token_tiles, decode_verdict_offset,
    stage_block,
};
use crate::sm90::registry;
use crate::sm90::tokens::{decode_slice_block, scaled_pairs};

/// One weight row's 16-byte chunk of a decode step as loaded: the packed codes of two scale
/// blocks and the word holding their scale codes (zero when the blocks lie past K, so that they
/// decode to zeros).
#[derive(Clone, Copy)]
struct RowChunk {
    words: [u32; 4],
    codes: u32,
}

impl RowChunk {
    /// Loads the chunk at byte `data_offset` of `data` and its scale word at byte
    /// `scale_offset` of `scales`; `exists` false loads `fallback` (the row's first chunk and
    /// scale word, always there) and gives it zero scales. Branch-free.
    ///
    /// # Safety
    /// Each offset pair is that of a chunk of a row of the weight matrix and of its scale word:
    /// 16 bytes and 4 bytes, aligned, inside the matrices.
    #[inline(always)]
    unsafe fn load(
        data: *const u8,
        scales: *const u8,
        offsets: [u32; 2],
        fallback: [u32; 2],
        exists: bool,
    ) -> Self {
        let [data_offset, scale_offset] = if exists { offsets } else { fallback };
        // SAFETY: the contract above.
        let (words, codes) = unsafe {
            (
                mem::ld_global_nc_v4_b32(data.add(data_offset as usize) as *const u32),
                mem::ld_global_nc_b32(scales.add(scale_offset as usize) as *const u32),
            )
        };
        Self {
            words,
            codes: if exists { codes } else { 0 },
        }
    }

    /// Block `j` (0 or 1) of the chunk decoded: its eight scaled fp16x2 pairs. `byte` is the
    /// first block's code in `codes` (`first_block % 4`).
    #[inline(always)]
    fn pairs(&self, j: u32, byte: u32) -> [u32; 8] {
        let scale = cvt::e4m3_byte_to_f16x2_broadcast(self.codes, byte + j);
        scaled_pairs(self.words[2 * j as usize], self.words[2 * j as usize + 1], scale)
    }
}

macro_rules! decode_entry {
    ($tiles:literal, $name:ident, $gated:literal, $nvfp4:literal, $bf16:literal) => {
        /// The decode-size dual GEMM (or plain GEMM) for up to `8 · token_tiles` tokens (see
        /// the module doc).
        ///
        /// # Safety
        /// Arguments must satisfy [`DecodeArgs`]' contract with `decode_token_tiles(m)` equal
        /// to the entry's token tiles, launched with `DECODE_WARPS · 32` threads per CTA and
        /// [`crate::sm90::config::decode_shared_bytes`] of dynamic shared memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DecodeArgs) {
            // SAFETY: forwarded.
            unsafe { decode::<$tiles, $gated, $nvfp4, $bf16>(args) }
        }
    };
}

macro_rules! decode_entries {
    ($($tiles:literal $name:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident;)*) => {$(
        decode_entry!($tiles, $name, true, false, false);
        decode_entry!($tiles, $nvfp4, true, true, false);
        decode_entry!($tiles, $plain, false, false, false);
        decode_entry!($tiles, $bf16, true, false, true);
        decode_entry!($tiles, $plain_bf16, false, false, true);
    )*};
}

registry::decode_entries!(decode_entries);

/// 128-K steps of its split's weights a decode-size CTA prefetches into L2 before it waits for
/// the previous kernel.
const DECODE_WARM_UP_STEPS: u32 = 2;

/// The kernel body for `TILES` token tiles of [`DECODE_TOKEN_TILE`] (`decode_token_tiles(m)`),
/// the dual GEMM if `GATED` (written as NVFP4 if `NVFP4`), else the plain GEMM (whose `b2` is
/// ignored).
/// One step's weight loads are in flight while a step is decoded: two (the most that fit in 64
/// registers, one tile) measured slower (perf log entry 31).
///
/// # Safety
/// As the entry points.
#[inline(always)]
unsafe fn decode<const TILES: usize, const GATED: bool, const NVFP4: bool, const BF16: bool>(
    args: DecodeArgs,
) {
    const { assert!(GATED || !NVFP4, "NVFP4 output is the gated epilogue's") };
    const { assert!(!(NVFP4 && BF16), "one output format") };
    let DecodeArgs {
        a,
        a_scales,
        b1,
        b1_scales,
        b2,
        b2_scales,
        out,
        out_scales,
        out_global_scale,
        partials,
        arrivals,
        m,
        n,
        k,
        steps_per_split,
        splits,
        alpha_gate,
        alpha_up,
        device_globals,
    } = args;
    let (groups, tiles) = (n / DECODE_GROUP_N, TILES as u32);
    if groups == 0 || splits == 0 || decode_token_tiles(m) != tiles {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (split, group) = (sreg::block_idx_x() / groups, sreg::block_idx_x() % groups);
    let gate = warp < DECODE_WARPS_PER_MATRIX;
    let (data, scales) = if gate || !GATED {
        (b1, b1_scales)
    } else {
        (b2, b2_scales)
    };
    // The steps this warp streams: all of the split's, or (plain) every other one from its
    // half's parity.
    let (step_offset, step_stride) = if GATED { (0, 1) } else { (u32::from(!gate), 2) };
    let first_row = group * DECODE_GROUP_N + (warp % DECODE_WARPS_PER_MATRIX) * DECODE_ROWS_PER_WARP;
    let rows = [first_row + g, first_row + g + 8];
    let layout = BlockedScales::new(n as usize, k as usize);
    let blocks_of_k = k / SCALE_BLOCK_K as u32;
    let first_step = split * steps_per_split;
    let end_step = (first_step + steps_per_split).min(decode_steps(k));

    // The split's first weight steps of this lane's two rows into L2 before the dependency
    // wait (as the tiled kernels' `warm_up_weights`): with a programmatic launch this overlaps
    // the previous kernel's tail (the quantizer's, in an MLP). Lane t = 0 of each quad.
    if t == 0 {
        let row_bytes = k / 2;
        let first_byte = first_step * DECODE_BLOCKS_PER_STEP * 8;
        let end_byte = ((first_step + DECODE_WARM_UP_STEPS) * DECODE_BLOCKS_PER_STEP * 8).min(row_bytes);
        for row in rows {
            // SAFETY: a range of this lane's row inside B (the contract above), 16-byte aligned
            // (`k / 2` and the step's 64 bytes are multiples of 32), a multiple of 16 bytes.
            unsafe {
                copy::prefetch_bulk_l2(
                    data.add((row * row_bytes + first_byte) as usize),
                    end_byte.saturating_sub(first_byte),
                )
            };
        }
    }

    // Step `q` is half `q % 2` of 256-K stage `q / 2`, so this lane's blocks in it are
    // `DECODE_BLOCKS_PER_STEP · q + stage_block(0, t)` and the next (`stage_block`'s order): each
    // row's chunk is 64 bytes further per step and its scale word one 512-byte atom per 4 blocks
    // further, with its first code at byte `stage_block(0, t) % 4`.
    const _: () = assert!(
        stage_block(DECODE_SLICES_PER_STEP, 1) == DECODE_BLOCKS_PER_STEP + stage_block(0, 1)
            && DECODE_BLOCKS_PER_STEP.is_multiple_of(ATOM_SCALE_COLS as u32)
    );
    let lane_block = stage_block(0, t);
    let byte = lane_block % ATOM_SCALE_COLS as u32;
    let row_bytes = k / 2;
    let (fallbacks, offsets) = (
        rows.map(|row| [row * row_bytes, layout.offset_u32(row, 0)]),
        rows.map(|row| {
            [
                row * row_bytes + 8 * lane_block,
                layout.offset_u32(row, lane_block - byte),
            ]
        }),
    );
    const CHUNK_STRIDE: u32 = DECODE_BLOCKS_PER_STEP * 8;
    const SCALE_STRIDE: u32 = DECODE_BLOCKS_PER_STEP / ATOM_SCALE_COLS as u32 * ATOM_BYTES as u32;
    // Step `q`'s chunks of rows `g` and `g + 8`.
    let load = |q: u32| {
        let exists = DECODE_BLOCKS_PER_STEP * q + lane_block < blocks_of_k;
        [0, 1].map(|r| {
            let [data_offset, scale_offset] = offsets[r];
            let at = [data_offset + CHUNK_STRIDE * q, scale_offset + SCALE_STRIDE * q];
            // SAFETY: the contract above: blocks below K are inside the row; past K the row's
            // first chunk is read instead.
            unsafe { RowChunk::load(data, scales, at, fallbacks[r], exists) }
        })
    };

    fence::grid_dependency_wait(); // A may come from the kernel before (no-op if plain)
    // The first step's weights are on their way while the tokens are decoded.
    let mut chunks = load(first_step + step_offset);

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
    let mut q = first_step + step_offset;
    while q < end_step {
        // The next step's loads go out before this one is decoded.
        let next = if q + step_stride < end_step {
            load(q + step_stride)
        } else {
            chunks
        };
        // Each slice of the step: decode its block for both rows, then four K16 MMAs per tile.
        for j in 0..DECODE_SLICES_PER_STEP {
            let weights = [chunks[0].pairs(j, byte), chunks[1].pairs(j, byte)];
            let local_slice = (q - first_step) * DECODE_SLICES_PER_STEP + j;
            let b: [[u32; 8]; TILES] = core::array::from_fn(|tile| tokens(tile as u32, local_slice));
            for step in 0..4 {
                let a = [
                    weights[0][2 * step],
                    weights[1][2 * step],
                    weights[0][2 * step + 1],
                    weights[1][2 * step + 1],
                ];
                for tile in 0..TILES {
                    sums[tile] =
                        mma::m16n8k16_f32_f16(sums[tile], a, [b[tile][2 * step], b[tile][2 * step + 1]]);
                }
            }
        }
        chunks = next;
        q += step_stride;
    }
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
    let verdict = smem::base() + decode_verdict_offset(m, steps_per_split, NVFP4);
    if thread == 0 {
        // SAFETY: the row group's counter (contract); only the last CTA of this launch writes
        // it back to zero, after every split has counted in.
        let last = unsafe { mem::atom_add_acq_rel_gpu_u32(arrivals.add(group as usize), 1) } == splits - 1;
        if last {
            // SAFETY: as above.
            unsafe { mem::st_relaxed_gpu_b32(arrivals.add(group as usize), 0) };
        }
        // SAFETY: the verdict word after the tokens, inside `decode_shared_bytes`.
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
        // The token rows are no longer read: every warp finished its loop before the arrival
        // barrier (the verdict word lies past these bytes).
        let at = smem::base() + reducer * 32;
        if half == 1 {
            // SAFETY: `reducers · 32` = `DECODE_HALVES_BYTES`, before the verdict word.
            unsafe {
                smem::st_v4(at, gate.map(f32::to_bits));
                smem::st_v4(at + 16, up.map(f32::to_bits));
            }
        }
        fence::sync_threads();
        // The second half's sums are in; only the NVFP4 output's barriers still need it.
        if half != 0 && !NVFP4 {
            return;
        }
        if half == 0 {
            // SAFETY: as above, written before the barrier.
            let (g, u) = unsafe { (smem::ld_v4(at), smem::ld_v4(at + 16)) };
            for i in 0..4 {
                gate[i] += f32::from_bits(g[i]);
                up[i] += f32::from_bits(u[i]);
            }
        }
    }
    // SAFETY: the launch contract; after the dependency wait.
    let (alpha_gate, alpha_up) = {
        let (gate_factor, up_factor) = unsafe { device_globals.factors() };
        (alpha_gate * gate_factor, alpha_up * up_factor)
    };
    // Output `i` of this thread: its token, its column in the row group and its value.
    let first_row = warp * DECODE_ROWS_PER_WARP;
    let output = |i: u32| {
        let column = first_row + g + 8 * (i / 2);
        let token = tile * DECODE_TOKEN_TILE + 2 * t + i % 2;
        let (gate, up) = (gate[i as usize], up[i as usize]);
        let value = if GATED {
            silu(alpha_gate * gate) * (alpha_up * up)
        } else {
            alpha_gate * (gate + up)
        };
        (token, column, value)
    };
    if !NVFP4 {
        for i in 0..4u32 {
            let (token, column, value) = output(i);
            if token < m {
                let row = group * DECODE_GROUP_N + column;
                // SAFETY: inside C (token < m, row < n).
                unsafe { mem::st_global_b16(out.add((token * n + row) as usize), half_bits(value, BF16)) };
            }
        }
        return;
    }
    let reducing = half == 0;
    // NVFP4 output (gated launches only): the row group's 64 outputs of every token, staged in
    // token rows no longer read (every warp passed the arrival barrier), past the halves.
    let staging = smem::base() + DECODE_NVFP4_STAGING_OFFSET;
    for i in 0..4u32 {
        let (token, column, value) = output(i);
        if reducing && token < m {
            // SAFETY: token < m ≤ 16, column < 64: inside the staging.
            unsafe { Nvfp4Tile::stage(staging, token, column, value) };
        }
    }
    fence::sync_threads();
    let data_pitch = n / 2;
    let tile_out = Nvfp4Tile {
        data: (out as *mut u8).wrapping_add((group * DECODE_GROUP_N / 2) as usize),
        data_pitch,
        scales: out_scales,
        layout: BlockedScales::new(m as usize, n as usize),
        scale_row: 0,
        first_block: group * DECODE_GROUP_N / SCALE_BLOCK_K as u32,
        tokens: m,
        padding: Nvfp4Tile::padding_rows(m, 0, m),
        global_scale: out_global_scale,
    };
    // SAFETY: every token of the row group staged above; C's buffers hold `m × n` (contract).
    unsafe { tile_out.encode(staging, thread, DECODE_WARPS * 32) };
}
