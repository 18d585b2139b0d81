//! The decode-size dual GEMM for Hopper (M ≤ 16 tokens): no rings, no handoff between roles.
//!
//! Every warp owns 16 rows of both weights and a range of 256-K stages (a K split). Per stage
//! and row, lane `t` of each quad loads the two 16-byte chunks of scale blocks
//! `stage_block(j, t)` (the tiled kernel's K order, [`crate::sm90::config::stage_block`]),
//! decodes them with the same scaled shift trick (`tokens::scaled_pairs`) into the A fragment
//! of `mma.sync.m16n8k16` (weights are the 16-row operand), and multiplies them with the
//! tokens as the 8-column operand: each CTA first decodes its split's tokens into shared memory
//! in the same K order (`tokens::decode_slice_chunks`). The next stage's weight loads go out
//! before a stage is decoded; nothing waits on another warp. Each warp writes its
//! f32 partial sums per split; [`nvfp4_dual_gemm_reduce_sm90`] adds them in split order and
//! applies `silu(α_gate·g)·(α_up·u)`, so results do not depend on timing.

use crate::epilogue::silu;
use crate::layout::{BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{cvt, fence, mem, mma, smem, sreg};
use crate::sm90::config::{
    BLOCKS_PER_STAGE, DECODE_PARTIAL_WORDS, DECODE_ROWS_PER_WARP, DECODE_TOKEN_TILE, DECODE_WARPS,
    DecodeArgs, DecodeReduceArgs, K_PER_SLICE, K_PER_STAGE, SLICES_PER_STAGE, decode_token_pitch,
    decode_token_tiles, padded_k, stage_block,
};
use crate::sm90::tokens::{decode_slice_chunks, scaled_pairs};

/// One weight row's two scale blocks of a stage half as loaded: the 16 packed bytes (`lo`,
/// `hi` of each block) and the fp16x2 scales of both blocks (zeros past K).
#[derive(Clone, Copy)]
struct RawBlocks {
    words: [u32; 4],
    scales: [u32; 2],
}

impl RawBlocks {
    /// Loads row `row`'s blocks `first_block`, `first_block + 1`.
    ///
    /// # Safety
    /// `data`/`scales`: a weight matrix of the layout's shape with rows of `row_bytes`.
    #[inline(always)]
    unsafe fn load(
        data: *const u8,
        scales: *const u8,
        layout: BlockedScales,
        row: u32,
        row_bytes: usize,
        first_block: u32,
        blocks_of_k: u32,
    ) -> Self {
        // K is a multiple of 64: blocks come in fours, so the pair exists or not as a whole. A
        // pair past K reads block 0 (always there) and scales it by zero: branch-free.
        let exists = first_block < blocks_of_k;
        let column = if exists { first_block } else { 0 };
        // SAFETY: 16 bytes of blocks `column, column + 1` inside the row, 16-byte aligned
        // (`column` even), and the row's 4 scale codes of its atom column.
        let (words, codes) = unsafe {
            (
                mem::ld_global_nc_v4_b32(
                    data.add(row as usize * row_bytes + 8 * column as usize) as *const u32
                ),
                mem::ld_global_nc_b32(
                    scales.add(layout.offset(row as usize, (column & !3) as usize)) as *const u32
                ),
            )
        };
        let byte = column % 4;
        let scales = if exists {
            [
                cvt::e4m3_byte_to_f16x2_broadcast(codes, byte),
                cvt::e4m3_byte_to_f16x2_broadcast(codes, byte + 1),
            ]
        } else {
            [0, 0]
        };
        Self { words, scales }
    }

    /// Block `j` (0 or 1) decoded: its eight scaled fp16x2 pairs.
    #[inline(always)]
    fn pairs(&self, j: usize) -> [u32; 8] {
        scaled_pairs(self.words[2 * j], self.words[2 * j + 1], self.scales[j])
    }
}

/// The decode-size dual GEMM's main kernel (see the module doc).
///
/// # Safety
/// Arguments must satisfy [`DecodeArgs`]' contract (tokens and weights of this K and their
/// scales of `n × k`, a partial-sum buffer of `splits · n/16 · tiles` warp records), launched
/// with `DECODE_WARPS · 32` threads per CTA.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn nvfp4_dual_gemm_decode_sm90(args: DecodeArgs) {
    let DecodeArgs {
        a,
        a_scales,
        b1,
        b1_scales,
        b2,
        b2_scales,
        partials,
        m,
        n,
        k,
        stages_per_split,
        splits,
    } = args;
    let row_blocks = n / DECODE_ROWS_PER_WARP;
    let groups = row_blocks.div_ceil(DECODE_WARPS);
    if groups == 0 {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let (warp, lane) = (sreg::thread_idx_x() / 32, sreg::thread_idx_x() % 32);
    let (split, row_block) = (
        sreg::block_idx_x() / groups,
        (sreg::block_idx_x() % groups) * DECODE_WARPS + warp,
    );
    let (g, t) = (lane / 4, lane % 4);
    let rows = [
        row_block * DECODE_ROWS_PER_WARP + g,
        row_block * DECODE_ROWS_PER_WARP + g + 8,
    ];
    let tiles = decode_token_tiles(m);
    let layout = BlockedScales::new(n as usize, k as usize);
    let row_bytes = k as usize / 2;
    let blocks_of_k = k / SCALE_BLOCK_K as u32;
    let stages = padded_k(k) / K_PER_STAGE;
    let first_stage = split * stages_per_split;
    let last_stage = if first_stage + stages_per_split < stages {
        first_stage + stages_per_split
    } else {
        stages
    };
    // The split's tokens, decoded into shared memory once per CTA (rows past M zero): one
    // thread per (token row, 64-K slice).
    fence::grid_dependency_wait(); // A may come from the kernel before (no-op if plain)
    if first_stage >= last_stage {
        return; // the whole CTA (one split): never with a valid split
    }
    let pitch = decode_token_pitch(stages_per_split);
    // At least 4: the `max` only proves the divisions below cannot panic.
    let split_slices = ((last_stage - first_stage) * SLICES_PER_STAGE).max(1);
    let token_rows = tiles * DECODE_TOKEN_TILE;
    let a_layout = BlockedScales::new(m as usize, k as usize);
    let mut item = sreg::thread_idx_x();
    while item < token_rows * split_slices {
        let (token, local_slice) = (item / split_slices, item % split_slices);
        let out = smem::base() + token * pitch + local_slice * 2 * K_PER_SLICE;
        if token < m {
            // SAFETY: A's row `token` and its scales (contract); the slice's 128 bytes of shared
            // memory are inside `decode_shared_bytes`.
            unsafe {
                decode_slice_chunks(
                    a.add(token as usize * row_bytes),
                    a_scales,
                    a_layout,
                    token as usize,
                    k,
                    first_stage * SLICES_PER_STAGE + local_slice,
                    |p, chunk| smem::st_v4(out + 16 * p, chunk),
                )
            };
        } else {
            for p in 0..8 {
                // SAFETY: as above.
                unsafe { smem::st_v4(out + 16 * p, [0; 4]) };
            }
        }
        item += sreg::block_dim_x();
    }
    fence::sync_threads();
    if row_block >= row_blocks || split >= splits {
        return;
    }
    // This lane's word of each chunk of its two token rows (g, 8 + g).
    let lane_tokens = smem::base() + g * pitch + 4 * t;
    let tile_stride = DECODE_TOKEN_TILE * pitch;
    let token_pairs = |tile: u32, local_slice: u32, step: u32| {
        let at = lane_tokens + tile * tile_stride + local_slice * 2 * K_PER_SLICE + 32 * step;
        // SAFETY: inside the staged tokens.
        unsafe { [smem::ld_b32(at), smem::ld_b32(at + 16)] }
    };
    let two_tiles = tiles > 1;
    // One stage's loads: [half][gate, up][row g, row g + 8].
    let load_stage = |stage: u32| {
        let load = |h: u32, data: *const u8, scales: *const u8, row: u32| {
            let first_block = stage * BLOCKS_PER_STAGE + stage_block(2 * h, t);
            // SAFETY: the contract above.
            unsafe { RawBlocks::load(data, scales, layout, row, row_bytes, first_block, blocks_of_k) }
        };
        [
            [
                [load(0, b1, b1_scales, rows[0]), load(0, b1, b1_scales, rows[1])],
                [load(0, b2, b2_scales, rows[0]), load(0, b2, b2_scales, rows[1])],
            ],
            [
                [load(1, b1, b1_scales, rows[0]), load(1, b1, b1_scales, rows[1])],
                [load(1, b2, b2_scales, rows[0]), load(1, b2, b2_scales, rows[1])],
            ],
        ]
    };
    // The MMA's C fragments: gate and up of token tiles 0 and 1 (tile 1 only when M > 8).
    let (mut gate0, mut up0, mut gate1, mut up1) = ([0f32; 4], [0f32; 4], [0f32; 4], [0f32; 4]);
    let mut stage = first_stage;
    let mut raw = load_stage(stage);
    while stage < last_stage {
        // The next stage's loads go out before this one is decoded, so that every warp always
        // has a stage in flight (the last iteration reloads its own stage, unconditionally).
        let next = load_stage(if stage + 1 < last_stage { stage + 1 } else { stage });
        let local = stage - first_stage;
        // Slice `2h + j` of the stage: decode its block for the four rows, then four K steps
        // (pairs 2·step, 2·step + 1 of each row).
        macro_rules! slice {
            ($($h:literal $j:literal)*) => {$({
                let [gate, up] = raw[$h];
                let (gate, up) = (
                    [gate[0].pairs($j), gate[1].pairs($j)],
                    [up[0].pairs($j), up[1].pairs($j)],
                );
                let local_slice = local * SLICES_PER_STAGE + 2 * $h + $j;
                for step in 0..4usize {
                    let a = |w: &[[u32; 8]; 2]| [w[0][2 * step], w[1][2 * step], w[0][2 * step + 1], w[1][2 * step + 1]];
                    let b0 = token_pairs(0, local_slice, step as u32);
                    gate0 = mma::m16n8k16_f32_f16(gate0, a(&gate), b0);
                    up0 = mma::m16n8k16_f32_f16(up0, a(&up), b0);
                    if two_tiles {
                        let b1 = token_pairs(1, local_slice, step as u32);
                        gate1 = mma::m16n8k16_f32_f16(gate1, a(&gate), b1);
                        up1 = mma::m16n8k16_f32_f16(up1, a(&up), b1);
                    }
                }
            })*};
        }
        slice!(0 0 0 1 1 0 1 1);
        raw = next;
        stage += 1;
    }
    for (tile, gate, up) in [(0u32, gate0, up0), (1, gate1, up1)] {
        if tile < tiles {
            let record = ((split * row_blocks + row_block) * tiles + tile) * DECODE_PARTIAL_WORDS + 8 * lane;
            // SAFETY: this warp's record, inside the partial-sum buffer (contract).
            unsafe {
                mem::st_global_v4_b32(partials.add(record as usize), gate.map(f32::to_bits));
                mem::st_global_v4_b32(partials.add(record as usize + 4), up.map(f32::to_bits));
            }
        }
    }
    fence::launch_dependents();
}

/// Adds the decode kernel's partial sums in split order and writes
/// `C = silu(α_gate·gate) ⊙ (α_up·up)` as fp16: one thread per (row block, token tile, lane).
///
/// # Safety
/// Arguments must satisfy [`DecodeReduceArgs`]' contract (the partial sums of a decode launch
/// with the same `m`, `n`, `splits`; C of `m × n` fp16).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn nvfp4_dual_gemm_reduce_sm90(args: DecodeReduceArgs) {
    let DecodeReduceArgs {
        partials,
        out,
        m,
        n,
        splits,
        alpha_gate,
        alpha_up,
    } = args;
    let tiles = decode_token_tiles(m);
    let row_blocks = n / DECODE_ROWS_PER_WARP;
    let item = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    if tiles == 0 || item >= row_blocks * tiles * 32 {
        return;
    }
    fence::grid_dependency_wait();
    let (lane, record) = (item % 32, item / 32);
    let (row_block, tile) = (record / tiles, record % tiles);
    let mut sums = [0f32; 8];
    let load = |split: u32| {
        let at = ((split * row_blocks + row_block) * tiles + tile) * DECODE_PARTIAL_WORDS + 8 * lane;
        // SAFETY: a record of the decode launch (contract).
        unsafe {
            [
                mem::ld_global_v4_b32(partials.add(at as usize)),
                mem::ld_global_v4_b32(partials.add(at as usize + 4)),
            ]
        }
    };
    // Four splits' loads in flight at a time, added in split order (deterministic).
    let mut split = 0;
    while split < splits {
        let group = [0, 1, 2, 3].map(|i| {
            if split + i < splits {
                load(split + i)
            } else {
                [[0; 4]; 2]
            }
        });
        for [gate, up] in group {
            for i in 0..4 {
                sums[i] += f32::from_bits(gate[i]);
                sums[4 + i] += f32::from_bits(up[i]);
            }
        }
        split += 4;
    }
    let (g, t) = (lane / 4, lane % 4);
    for i in 0..4u32 {
        let row = row_block * DECODE_ROWS_PER_WARP + g + 8 * (i / 2);
        let token = tile * DECODE_TOKEN_TILE + 2 * t + i % 2;
        if token < m {
            let value = silu(alpha_gate * sums[i as usize]) * (alpha_up * sums[4 + i as usize]);
            // SAFETY: inside C (token < m, row < n).
            unsafe { mem::st_global_b16(out.add((token * n + row) as usize), cvt::f32_to_f16_rn(value)) };
        }
    }
}
