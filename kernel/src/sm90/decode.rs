//! The decode-size dual GEMM and plain GEMM for Hopper (M ≤ 16 tokens): no rings, no handoff
//! between roles, the K split reduced inside the kernel.
//!
//! A CTA owns one *row group* ([`DECODE_GROUP_N`] outputs; the two-token-tile *wide* entries
//! twice that, with [`DECODE_WIDE_WARPS_PER_MATRIX`] warps a matrix, so that a split's staged
//! token rows serve twice the weight rows) and one K split. Its first `WARPS_PER_MATRIX` warps
//! ([`DECODE_WARPS_PER_MATRIX`] or the wide count) stream 16 gate rows each, the others the same
//! rows of up;
//! in the plain GEMM both halves stream the same rows of B, the first half the split's even
//! steps and the second its odd ones, and the CTA adds the halves before it publishes its sums.
//! Per 128-K step, lane `t` of each quad loads one 16-byte chunk (two scale blocks, the tiled
//! kernel's [`stage_block`] order) of each of its two rows, decodes it ([`scaled_pairs`] with
//! [`Codec`], tokens alike) into the A fragment of `mma.sync.m16n8k16` (weights are the 16-row
//! operand) and multiplies it with the tokens as the 8-column operand. The CTA first decodes
//! its split's tokens into shared memory once, for all its warps; the next step's weight loads
//! go out before a step is decoded (for a one-tile dual GEMM's long splits two steps an
//! iteration: the paired entries). Nothing waits on another warp inside the loop.
//!
//! The split's reduction: every CTA stores its f32 partial sums, and the last CTA of a row group
//! to arrive (an acq_rel counter per row group, which that CTA resets to zero) adds all splits'
//! sums in split order and writes `silu(α_gate·g) ⊙ (α_up·u)` (plain: `α_gate·(g + u)`) as
//! fp16, or (the NVFP4 entries, gated) as NVFP4 through a shared staging of the row group's
//! outputs ([`Nvfp4Tile`]): the result does not depend on which CTA comes last, and no second
//! launch is needed.
//!
//! The whole-K entries ([`decode_whole_k`], one token tile) split K inside the CTA instead: a
//! CTA owns 16 outputs over all of K, its warps (the host picks 4, 8 or 16; the dual GEMM's
//! 4-warp CTAs also as small-CTA entries of 56 registers, nine an SM) stream every `parts`-th
//! step, and it adds their sums in shared memory — no partial sums in global memory, no
//! arrival and no last CTA, where its CTAs fill the SMs in one wave.
//!
//! The grouped entries ([`grouped_decode`]) run the same weight stream ([`RowPair`], [`stream`])
//! for routed decode: one CTA per group and row group over all of K, the preparation pass's
//! decoded tokens copied window by window into two buffers in turn, no split and no reduction;
//! their weights decode with that pass's codec ([`GroupedCodec`]) instead of [`Codec`].

use crate::common::NVFP4_TILE_COLUMNS;
use crate::epilogue::{GatedProduct, NVFP4_TILE_BLOCKS, Nvfp4Tile, half_bits};
use crate::fp4::{PairCodec, PermuteCodec};
use crate::grouped::{GroupDesc, GroupedHeader, MAX_GROUPS, STATUS_OK};
use crate::layout::{ATOM_BYTES, ATOM_LINE_BYTES, ATOM_SCALE_COLS, BlockedScales, SCALE_BLOCK_K};
use crate::prepare;
use crate::ptx::{copy, cvt, fence, mem, mma, reg, smem, sreg};
use crate::sm90::config::{
    BLOCKS_PER_STAGE, DECODE_BLOCKS_PER_STEP, DECODE_GROUP_N, DECODE_HALVES_BYTES, DECODE_K_PER_STEP,
    DECODE_MAX_TOKENS, DECODE_NVFP4_STAGING_OFFSET, DECODE_NVFP4_TILE_STAGING_BYTES, DECODE_PAIRED_MIN_STEPS,
    DECODE_RECORD_WORDS, DECODE_ROWS_PER_WARP, DECODE_SLICES_PER_STEP, DECODE_TOKEN_TILE, DECODE_WARPS,
    DECODE_WARPS_PER_MATRIX, DECODE_WIDE_WARPS_PER_MATRIX, DecodeArgs, GROUPED_DECODE_TOKEN_BUFFERS,
    GROUPED_DECODE_WARM_UP_STEPS, GroupedDecodeArgs, GroupedDecodeWarmUp, K_PER_SLICE, SLICES_PER_STAGE,
    balanced_window_steps, decode_copied_codes_pitch, decode_copied_scales_pitch,
    decode_copied_tokens_offset, decode_group_n, decode_halves_bytes, decode_nvfp4_staging_offset,
    decode_steps, decode_token_pitch, decode_token_tiles, decode_verdict_offset,
    decode_whole_k_records_offset, grouped_decode_buffer_bytes, grouped_decode_outputs, stage_block,
};
use crate::sm90::registry;
use crate::sm90::tokens::{GroupedCodec, SliceBlock, scaled_pairs};

/// The dense decode-size kernel's codec, for its weights and the tokens it stages alike. Its loop
/// is bound by issue and by the ALU pipe as much as by memory (Nsight Compute on an H200: ALU pipe
/// 56–64 % busy, issue 58–64 %), and the byte-permute codec takes 13 % of the loop's ALU
/// instructions and 17 % of all its instructions off the shift codec's
/// ([`crate::fp4::ShiftCodec`]): on an H200 the one-token calls 2–9 % faster, the 16-token
/// ones 0–4 % (perf log entry 131; on an H100, before the loop took step addresses, it had made
/// the 16-token GEMM 2.6 % slower). The grouped entries decode their weights with
/// [`GroupedCodec`], the codec of the preparation pass that decoded their tokens.
type Codec = PermuteCodec;

/// One weight row's 16-byte chunk of a decode step as loaded: the packed codes of two scale
/// blocks and their two scale codes (the low 16 bits of `codes`: adjacent bytes of the blocked
/// layout; zero when the blocks lie past K, so that they decode to zeros).
#[derive(Clone, Copy)]
struct RowChunk {
    words: [u32; 4],
    codes: u32,
}

impl RowChunk {
    /// The streamed chunk at `data` and scale codes at `scales` if `load`; else nothing is
    /// read: `old`'s registers, zero scales.
    ///
    /// # Safety
    /// `load` only where the chunk and codes lie inside the matrix and its scales.
    #[inline(always)]
    unsafe fn load_streamed_if(data: *const u8, scales: *const u8, load: bool, old: RowChunk) -> Self {
        // SAFETY: the contract; nothing is read unless `load`.
        let (words, codes) = unsafe {
            mem::ld_global_stream_chunk_and_u16_if(data as *const u32, scales as *const u16, load, old.words)
        };
        Self { words, codes }
    }

    /// Loads the chunk at byte `data_offset` of `data` and its two scale codes at byte
    /// `scale_offset` of `scales`; `exists` false loads `fallback` (the row's first chunk and
    /// scale codes, always there) and gives it zero scales. Branch-free. `STREAMED`: the chunk
    /// bypasses L1 (`.L1::no_allocate`, read once: the dense loop's chunks, 1–5 % faster there
    /// on an H100); otherwise L1 keeps it (the paired loop re-reads its last step's chunks,
    /// and streamed it was up to 10 % slower).
    ///
    /// # Safety
    /// Each offset pair is that of a chunk of a row of the weight matrix and of its scale codes:
    /// 16 bytes and 2 bytes, aligned, inside the matrices.
    #[inline(always)]
    unsafe fn load<const STREAMED: bool>(
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
                if STREAMED {
                    mem::ld_global_stream_v4_b32(data.add(data_offset as usize) as *const u32)
                } else {
                    mem::ld_global_nc_v4_b32(data.add(data_offset as usize) as *const u32)
                },
                mem::ld_global_nc_u16(scales.add(scale_offset as usize) as *const u16) as u32,
            )
        };
        Self {
            words,
            codes: if exists { codes } else { 0 },
        }
    }

    /// Block `j` (0 or 1) of the chunk decoded: its eight scaled fp16x2 pairs. Both blocks'
    /// scales come from one conversion (the same for both `j`, so made once), each block's
    /// half broadcast in the multiply's operand.
    #[inline(always)]
    fn pairs<C: PairCodec>(&self, j: u32) -> [u32; 8] {
        let scales = cvt::e4m3x2_to_f16x2(self.codes as u16);
        let scale = cvt::f16x2_broadcast_half_folded(scales, j == 1);
        scaled_pairs::<C>(self.words[2 * j as usize], self.words[2 * j as usize + 1], scale)
    }
}

/// One lane's two weight rows (`g` and `g + 8` of its warp's 16) of one weight matrix, streamed
/// one decode step at a time.
///
/// Step `q` is half `q % 2` of 256-K stage `q / 2`, so the lane's blocks in it are
/// `DECODE_BLOCKS_PER_STEP · q + stage_block(0, t)` and the next (`stage_block`'s order): each
/// row's chunk is 64 bytes further per step and its scale codes one 512-byte atom per 4 blocks
/// further, bytes `stage_block(0, t) % 4` and the next of the row's word.
#[derive(Clone, Copy)]
struct RowPair {
    data: *const u8,
    scales: *const u8,
    /// Each row's step-0 chunk and scale-code offsets (its first chunk and scale codes, loaded
    /// with zero scales for blocks past K, lie `lane_shift` before them: [`RowPair::load`]).
    offsets: [[u32; 2]; 2],
    /// The lane's first scale block of step 0.
    lane_block: u32,
    /// Scale blocks of K.
    blocks_of_k: u32,
}

const _: () = assert!(
    stage_block(DECODE_SLICES_PER_STEP, 1) == DECODE_BLOCKS_PER_STEP + stage_block(0, 1)
        && DECODE_BLOCKS_PER_STEP.is_multiple_of(ATOM_SCALE_COLS as u32)
);

impl RowPair {
    /// Bytes between a row's chunks of consecutive steps.
    const CHUNK_STRIDE: u32 = DECODE_BLOCKS_PER_STEP * 8;
    /// Bytes between a row's scale codes of consecutive steps.
    const SCALE_STRIDE: u32 = DECODE_BLOCKS_PER_STEP / ATOM_SCALE_COLS as u32 * ATOM_BYTES as u32;

    /// Step `q`'s chunk and scale codes of the row whose step-0 chunk is at `data` and scale codes
    /// at `scales` (addresses only: nothing is read).
    #[inline(always)]
    fn step_addresses(data: *const u8, scales: *const u8, q: u32) -> (*const u8, *const u8) {
        (
            data.wrapping_add(q as usize * Self::CHUNK_STRIDE as usize),
            scales.wrapping_add(q as usize * Self::SCALE_STRIDE as usize),
        )
    }

    /// Rows `rows` of the matrix at `data` (`k / 2` bytes a row) with blocked scales `scales`
    /// of `layout`, as quad lane `t` loads them.
    #[inline(always)]
    fn new(
        data: *const u8,
        scales: *const u8,
        layout: BlockedScales,
        rows: [u32; 2],
        k: u32,
        t: u32,
    ) -> Self {
        let lane_block = stage_block(0, t);
        let row_bytes = k / 2;
        Self {
            data,
            scales,
            // The lane's two scale codes: bytes `lane_block % 4` and the next of the row's word
            // (`BlockedScales::offset_u32` is the byte of each code).
            offsets: rows.map(|row| {
                [
                    row * row_bytes + 8 * lane_block,
                    layout.offset_u32(row, lane_block),
                ]
            }),
            lane_block,
            blocks_of_k: k / SCALE_BLOCK_K as u32,
        }
    }

    /// The rows as [`RowCursor`] addresses (wrapping: a lane's step-0 block may lie past a
    /// short K, and then it is never loaded).
    #[inline(always)]
    fn cursor(&self) -> RowCursor {
        let [[data0, scales0], [data8, _]] = self.offsets;
        RowCursor {
            data: self.data.wrapping_add(data0 as usize),
            scales: self.scales.wrapping_add(scales0 as usize),
            row8_bytes: data8 - data0,
            lane_steps: self
                .blocks_of_k
                .saturating_sub(self.lane_block)
                .div_ceil(DECODE_BLOCKS_PER_STEP),
        }
    }

    /// Step `q`'s chunks of both rows (of any step: past K the rows' first chunks, with zero
    /// scales); `STREAMED` as [`RowChunk::load`].
    ///
    /// # Safety
    /// Both rows lie inside the matrix and its scales.
    #[inline(always)]
    unsafe fn load<const STREAMED: bool>(&self, q: u32) -> [RowChunk; 2] {
        let exists = DECODE_BLOCKS_PER_STEP * q + self.lane_block < self.blocks_of_k;
        // The lane's step-0 chunk and scale codes lie this far past the row's first ones (its
        // codes `lane_block / 4` atoms on and `lane_block % 4` bytes into the row's word:
        // `BlockedScales::offset_u32`'s column term).
        let lane_shift = [
            8 * self.lane_block,
            self.lane_block / ATOM_SCALE_COLS as u32 * ATOM_BYTES as u32
                + self.lane_block % ATOM_SCALE_COLS as u32,
        ];
        [0, 1].map(|r| {
            let [data_offset, scale_offset] = self.offsets[r];
            let at = [
                data_offset + Self::CHUNK_STRIDE * q,
                scale_offset + Self::SCALE_STRIDE * q,
            ];
            let fallback = [data_offset - lane_shift[0], scale_offset - lane_shift[1]];
            // SAFETY: the contract above: blocks below K are inside the row; past K the row's
            // first chunk is read instead.
            unsafe { RowChunk::load::<STREAMED>(self.data, self.scales, at, fallback, exists) }
        })
    }
}

/// Bytes from row `r`'s scale codes to row `r + 8`'s in the blocked layout, for `r % 32 < 24`
/// (a warp's 16 rows start on a multiple of 16).
const ROW8_SCALE_BYTES: u32 = 8 * ATOM_LINE_BYTES as u32;

/// A [`RowPair`] as the loop of one step an iteration streams it: row `g`'s step-0 chunk and
/// scale codes as addresses (row `g + 8`'s a fixed distance further), each step's addresses
/// one wide multiply-add from the step, and steps past K not loaded at all (predicated loads
/// into the registers of the chunks two steps back, which no longer hold anything needed). In
/// the loop of one step an iteration, two register sets in turn, this took ≈ 15 % fewer
/// instructions a step than [`RowPair::load`]'s offsets and selects, and those loops ran
/// 2–8 % faster on an H100 (32-bit offsets instead of the step addresses: the same). In the
/// long paired and grouped loops it measured 4–28 % slower, with either address form and in
/// two or three register sets, and so did unpredicated loads from step addresses, while
/// dropping only [`RowPair::load`]'s selects gained nothing (perf log entry 85): they keep
/// [`RowPair::load`].
#[derive(Clone, Copy)]
struct RowCursor {
    data: *const u8,
    scales: *const u8,
    /// Bytes from row `g`'s chunk to row `g + 8`'s.
    row8_bytes: u32,
    /// Steps whose blocks of this lane lie below K.
    lane_steps: u32,
}

impl RowCursor {
    /// A chunk pair that decodes to zeros: the registers of the first conditional load.
    const NOTHING: [RowChunk; 2] = [RowChunk {
        words: [0; 4],
        codes: 0,
    }; 2];

    /// Step `q`'s streamed chunks and scale codes of both rows if `load` (a step below K),
    /// else zero scale codes, nothing read and `old`'s chunks (whose registers the loads go
    /// into).
    ///
    /// # Safety
    /// The rows lie inside the matrix and its scales; `load` only for a step below K.
    #[inline(always)]
    unsafe fn load_if(&self, q: u32, load: bool, old: [RowChunk; 2]) -> [RowChunk; 2] {
        let (data, scales) = RowPair::step_addresses(self.data, self.scales, q);
        let rows = [
            (data, scales),
            (
                data.wrapping_add(self.row8_bytes as usize),
                scales.wrapping_add(ROW8_SCALE_BYTES as usize),
            ),
        ];
        // SAFETY: the contract; nothing is read unless `load`.
        [0, 1].map(|r| unsafe { RowChunk::load_streamed_if(rows[r].0, rows[r].1, load, old[r]) })
    }
}

/// The staged token rows of a CTA as one lane reads them: token row `g` of each 8-token tile,
/// quad lane `t`'s 32-byte run of each 64-K slice (see [`stage_dense_tokens`]).
#[derive(Clone, Copy)]
struct StagedTokens {
    /// Shared address of the lane's run of slice 0 of tile 0.
    lane: u32,
    /// Bytes between token rows.
    pitch: u32,
}

impl StagedTokens {
    #[inline(always)]
    fn new(pitch: u32, g: u32, t: u32) -> Self {
        Self {
            lane: smem::base() + g * pitch + 32 * t,
            pitch,
        }
    }

    /// The same rows staged `offset` bytes further into shared memory.
    #[inline(always)]
    fn shifted(self, offset: u32) -> Self {
        Self {
            lane: self.lane + offset,
            ..self
        }
    }

    /// The lane's eight token pairs of staged slice `local_slice` of tile `tile`.
    #[inline(always)]
    fn pairs(&self, tile: u32, local_slice: u32) -> [u32; 8] {
        let at = self.lane + tile * DECODE_TOKEN_TILE * self.pitch + local_slice * 2 * K_PER_SLICE;
        // SAFETY: inside the staged tokens (the kernels size their shared memory for them).
        let (lo, hi) = unsafe { (smem::ld_v4(at), smem::ld_v4(at + 16)) };
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
    }
}

/// One lane's token row of A (one token tile: the lane's column `g`, or the last real row),
/// streamed a step at a time as [`RowCursor`] streams a weight row: the same blocks of K, so its
/// decoded pairs are the lane's B fragment. For the plain whole-K GEMM, whose every step belongs
/// to one warp: staging decodes no token fewer times, and costs a round trip and a barrier.
#[derive(Clone, Copy)]
struct TokenRow {
    /// The row's step-0 chunk of this lane.
    data: *const u8,
    /// Its step-0 scale codes (the lane's two bytes).
    scales: *const u8,
    /// Steps whose blocks of this lane lie below K.
    lane_steps: u32,
}

impl TokenRow {
    /// Row `row` of A (`k / 2` bytes a row, blocked scales of `layout`) as quad lane `t` loads
    /// it.
    #[inline(always)]
    fn new(a: *const u8, a_scales: *const u8, layout: BlockedScales, row: u32, k: u32, t: u32) -> Self {
        // The row as a weight row pair of it twice, whose first row's cursor is this one.
        let pair = RowPair::new(a, a_scales, layout, [row, row], k, t);
        let cursor = pair.cursor();
        Self {
            data: cursor.data,
            scales: cursor.scales,
            lane_steps: cursor.lane_steps,
        }
    }

    /// A chunk that decodes to zeros: the registers before the first load.
    const NOTHING: RowChunk = RowChunk {
        words: [0; 4],
        codes: 0,
    };

    /// Step `q`'s chunk and scale codes if `load` and the lane's blocks of it lie below K
    /// (else nothing read: `old`'s registers, zero scales).
    ///
    /// # Safety
    /// The row lies inside A and its scales.
    #[inline(always)]
    unsafe fn load_if(&self, q: u32, load: bool, old: RowChunk) -> RowChunk {
        // SAFETY: the contract; read only for a step whose blocks lie below K.
        let (data, scales) = RowPair::step_addresses(self.data, self.scales, q);
        // SAFETY: the contract; read only for a step whose blocks lie below K.
        unsafe { RowChunk::load_streamed_if(data, scales, load && q < self.lane_steps, old) }
    }
}

/// The four K16 MMAs of one 64-K slice: the decoded pairs of a lane's two weight rows (`g`,
/// `g + 8`) as the A fragments, each tile's token pairs as its B fragments, into `sums`.
#[inline(always)]
fn multiply_slice<const TILES: usize>(
    sums: &mut [[f32; 4]; TILES],
    weights: &[[u32; 8]; 2],
    b: &[[u32; 8]; TILES],
) {
    for step in 0..4 {
        let a = [
            weights[0][2 * step],
            weights[1][2 * step],
            weights[0][2 * step + 1],
            weights[1][2 * step + 1],
        ];
        for tile in 0..TILES {
            sums[tile] = mma::m16n8k16_f32_f16(sums[tile], a, [b[tile][2 * step], b[tile][2 * step + 1]]);
        }
    }
}

/// Multiplies steps `first, first + stride, … < end` of `pair` with the staged tokens (step `q`
/// at staged slice `(q − origin) · DECODE_SLICES_PER_STEP`) into `sums`, the MMAs' C fragments
/// per token tile. `chunks` holds step `first`'s loads; each next step's loads go out before a
/// step is decoded. Nothing waits on another warp.
///
/// `PAIRED`: [`RowPair::load`]'s loads (offsets and selects, the last step's loads repeated
/// as L1 hits instead of a conditional next load), two steps per iteration in two register sets
/// used in turn; the compiler issues both next steps' loads at once. Paired, the grouped
/// kernel's long loops ran 12–21 % faster on an H100 than the old loop of one step, the dense
/// kernel's short splits 0–4 % slower (perf log entry 52), so the dense kernel uses it only for
/// the one-tile dual GEMM's splits of [`DECODE_PAIRED_MIN_STEPS`] or more (its paired entries,
/// entry 84). Otherwise: [`RowCursor`]'s predicated loads, also into two register sets in turn
/// but each loaded one step ahead (entry 85). `C`: the codec the staged tokens were decoded with.
///
/// # Safety
/// As [`RowPair::load`]; the steps' slices are staged.
#[inline(always)]
unsafe fn stream<C: PairCodec, const TILES: usize, const PAIRED: bool>(
    pair: &RowPair,
    chunks: [RowChunk; 2],
    [first, end, stride]: [u32; 3],
    origin: u32,
    tokens: StagedTokens,
    sums: &mut [[f32; 4]; TILES],
) {
    // Step `q` with its loads `chunks`: each slice's block decoded for both rows, then four K16
    // MMAs per tile.
    let mut multiply = |chunks: &[RowChunk; 2], q: u32| {
        for j in 0..DECODE_SLICES_PER_STEP {
            let weights = [chunks[0].pairs::<C>(j), chunks[1].pairs::<C>(j)];
            let local_slice = (q - origin) * DECODE_SLICES_PER_STEP + j;
            let b: [[u32; 8]; TILES] = core::array::from_fn(|tile| tokens.pairs(tile as u32, local_slice));
            multiply_slice(sums, &weights, &b);
        }
    };
    if !PAIRED {
        // Two register sets in turn, each loaded into once the other is being decoded; steps
        // past the range or K are not loaded.
        let cursor = pair.cursor();
        let stop = end.min(cursor.lane_steps);
        // SAFETY (both): forwarded; loaded only below K.
        let load = |q: u32, old| unsafe { cursor.load_if(q, q < stop, old) };
        let (mut even, mut odd, mut q) = (chunks, RowCursor::NOTHING, first);
        while q < end {
            odd = load(q + stride, odd);
            multiply(&even, q);
            q += stride;
            if q >= end {
                break;
            }
            even = load(q + stride, even);
            multiply(&odd, q);
            q += stride;
        }
        return;
    }
    if first >= end || stride == 0 {
        return;
    }
    // The last step of this warp's: the next loads never go past it.
    let last = first + (end - 1 - first) / stride * stride;
    // SAFETY: forwarded; every step up to `last` may be loaded.
    let load_after = |q: u32| unsafe { pair.load::<false>((q + stride).min(last)) };
    let (mut even, mut q) = (chunks, first);
    loop {
        let odd = load_after(q);
        multiply(&even, q);
        q += stride;
        if q >= end {
            break;
        }
        even = load_after(q);
        multiply(&odd, q);
        q += stride;
        if q >= end {
            break;
        }
    }
}

/// [`stream`]'s loop of one step an iteration for one token tile whose tokens are not staged:
/// each step's chunk of the lane's token row ([`TokenRow`]) is loaded beside the weights' and
/// decoded into the lane's B fragment (the same blocks of K as its weight chunks, so the same
/// pairs). `first_loads` holds step `first`'s weight and token loads.
///
/// # Safety
/// As [`RowPair::load`] and [`TokenRow::load_if`].
#[inline(always)]
unsafe fn stream_own_tokens<C: PairCodec>(
    pair: &RowPair,
    first_loads: ([RowChunk; 2], RowChunk),
    [first, end, stride]: [u32; 3],
    token: TokenRow,
    sums: &mut [[f32; 4]; 1],
) {
    let mut multiply = |(chunks, tokens): &([RowChunk; 2], RowChunk)| {
        let mut slice = |j: u32| {
            let weights = [chunks[0].pairs::<C>(j), chunks[1].pairs::<C>(j)];
            multiply_slice(sums, &weights, &[tokens.pairs::<C>(j)]);
        };
        // Written out: as a loop, the chunks' words went to local memory, indexed by the slice.
        const { assert!(DECODE_SLICES_PER_STEP == 2) };
        slice(0);
        slice(1);
    };
    let cursor = pair.cursor();
    let stop = end.min(cursor.lane_steps);
    // SAFETY (both): forwarded; loaded only below K.
    let load = |q: u32, (old, old_token): ([RowChunk; 2], RowChunk)| unsafe {
        (
            cursor.load_if(q, q < stop, old),
            token.load_if(q, q < end, old_token),
        )
    };
    let (mut even, mut odd, mut q) = (first_loads, (RowCursor::NOTHING, TokenRow::NOTHING), first);
    while q < end {
        odd = load(q + stride, odd);
        multiply(&even);
        q += stride;
        if q >= end {
            break;
        }
        even = load(q + stride, even);
        multiply(&odd);
        q += stride;
    }
}

/// Stages `slices` 64-K slices of `token_rows` token rows into shared memory (the CTA's
/// threads together): a token row holds, per slice, four 32-byte runs at `pitch` bytes between
/// rows, run `w` the eight pairs of quad lane `w`'s block (word `w` of the slice's chunks 0..8
/// in `decode_slice_chunks`), so that a lane reads them with two 16-byte loads.
/// `block(token, local_slice, w)` loads run `w`'s block for the first `real_rows` rows; the
/// rows after them are zeros.
///
/// `HALVES`: an item is half a row's slice (two runs), both loads in flight before either is
/// decoded, and the real rows' items come first, so that at M ≤ 8 with splits of up to 8 steps
/// every thread waits for one round trip of token loads; else an item is a whole slice (token
/// row fastest), its four runs loaded and decoded in turn — a round trip each (with half
/// slices the two-tile entries' loops spilled or ran up to 5 % slower; all four runs' loads at
/// once spilled beside the stream's first loads). Two token tiles take that path only where
/// the copy of [`stage_copied_tokens`], one round trip, would crowd CTAs off the SMs.
///
/// # Safety
/// `token_rows` rows of `slices` slices at `pitch` fit the kernel's shared memory;
/// `real_rows ≤ token_rows`.
#[inline(always)]
unsafe fn stage_tokens<const HALVES: bool>(
    [real_rows, token_rows]: [u32; 2],
    slices: u32,
    pitch: u32,
    block: impl Fn(u32, u32, u32) -> SliceBlock,
) {
    // At least 1: the `max` only proves the divisions below cannot panic.
    let (real_rows, token_rows) = (real_rows.max(1), token_rows.max(1));
    // SAFETY: a run of a row's slice inside the token rows (contract).
    let store = |at: u32, pairs: [u32; 8]| unsafe { store_run(at, pairs) };
    let mut item = sreg::thread_idx_x();
    if !HALVES {
        while item < token_rows * slices {
            let (token, local_slice) = (item % token_rows, item / token_rows);
            let at = smem::base() + token * pitch + local_slice * 2 * K_PER_SLICE;
            for w in 0..4 {
                store(
                    at + 32 * w,
                    if token < real_rows {
                        block(token, local_slice, w).decode::<Codec>()
                    } else {
                        [0; 8]
                    },
                );
            }
            item += sreg::block_dim_x();
        }
        return;
    }
    let zero_rows = token_rows.saturating_sub(real_rows).max(1);
    let real_items = real_rows * slices * 2;
    while item < token_rows * slices * 2 {
        let real = item < real_items;
        let index = if real { item } else { item - real_items };
        let rows = if real { real_rows } else { zero_rows };
        let (row, rest) = (index % rows, index / rows);
        let (token, half, local_slice) = (if real { row } else { real_rows + row }, rest % 2, rest / 2);
        let at = smem::base() + token * pitch + local_slice * 2 * K_PER_SLICE + 64 * half;
        let run = |w: u32| {
            if real {
                block(token, local_slice, 2 * half + w)
            } else {
                SliceBlock::ZERO
            }
        };
        let (first, second) = (run(0), run(1));
        store(at, first.decode::<Codec>());
        store(at + 32, second.decode::<Codec>());
        item += sreg::block_dim_x();
    }
}

/// The dense kernels' staging straight from global memory: `token_rows` token rows of steps
/// `first..end` decoded from A (`m` rows of `k / 2` bytes, blocked scales), rows past `m`
/// zeros.
///
/// # Safety
/// A's rows and scales are readable; the rows fit the kernel's shared memory.
#[inline(always)]
unsafe fn stage_dense_tokens(
    a: *const u8,
    a_scales: *const u8,
    m: u32,
    k: u32,
    token_rows: u32,
    [first, end]: [u32; 2],
    pitch: u32,
) {
    let layout = BlockedScales::new(m as usize, k as usize);
    let slices = (end.saturating_sub(first) * DECODE_SLICES_PER_STEP).max(1);
    let real_rows = m.min(token_rows);
    let block = |token: u32, local_slice: u32, w: u32| {
        // SAFETY: A's row `token` < m and its scales (contract).
        unsafe {
            SliceBlock::load(
                a.add(token as usize * (k / 2) as usize),
                a_scales,
                layout,
                token as usize,
                k,
                first * DECODE_SLICES_PER_STEP + local_slice,
                w,
            )
        }
    };
    // SAFETY (both): forwarded; `stage_tokens` calls `block` for the first `real_rows` (< m)
    // rows only. Half slices for one token tile (M ≤ 8), whole ones for two (see there).
    if token_rows <= DECODE_TOKEN_TILE {
        unsafe { stage_tokens::<true>([real_rows, token_rows], slices, pitch, block) }
    } else {
        unsafe { stage_tokens::<false>([real_rows, token_rows], slices, pitch, block) }
    }
}

/// Stores one decoded run (a block's eight pairs, 32 bytes) at shared address `at`.
///
/// # Safety
/// `at..at + 32` lies in the token rows, 16-byte aligned.
#[inline(always)]
unsafe fn store_run(at: u32, pairs: [u32; 8]) {
    // SAFETY: the contract above.
    unsafe {
        smem::st_v4(at, [pairs[0], pairs[1], pairs[2], pairs[3]]);
        smem::st_v4(at + 16, [pairs[4], pairs[5], pairs[6], pairs[7]]);
    }
}

/// The dense kernels' staging for two token tiles (M = 9…16): the `m.min(16)` real token rows'
/// packed codes and scale words of steps `first..end` copied from A into shared memory at
/// `copied` first (`cp.async`: every copy of the CTA in flight at once, no registers held;
/// layout `config::decode_copied_token_bytes`), then decoded from there into the token rows at `pitch`
/// as [`stage_tokens`] lays them out (an item a whole slice, token row fastest), the rows up to
/// 16 past `m` zeros. Decoding straight from global memory took a round trip for each of an
/// item's four runs here: with all four in flight the entries spilled beside the stream's first
/// loads.
///
/// # Safety
/// A's rows and scales as the decode-size contract states; the token rows at `pitch` and the
/// copy at `copied` (for `end − first` steps) fit the kernel's shared memory; every thread of
/// the CTA calls it.
#[inline(always)]
unsafe fn stage_copied_tokens(
    a: *const u8,
    a_scales: *const u8,
    [m, k]: [u32; 2],
    [first, end]: [u32; 2],
    pitch: u32,
    copied: u32,
) {
    const TOKEN_ROWS: u32 = DECODE_MAX_TOKENS;
    let steps = end.saturating_sub(first);
    let real_rows = m.min(TOKEN_ROWS);
    let (codes_pitch, scales_pitch) = (
        decode_copied_codes_pitch(steps),
        decode_copied_scales_pitch(steps),
    );
    let scales_at = copied + real_rows * codes_pitch;
    let (thread, threads) = (sreg::thread_idx_x(), sreg::block_dim_x());
    let row_bytes = k / 2;
    // Codes: 16-byte chunks (four a step), those past K zeros.
    let chunks = steps * DECODE_K_PER_STEP / 32;
    let mut i = thread;
    while i < real_rows * chunks {
        // At least 1: the `max` only proves the divisions cannot panic (chunks > 0 here).
        let chunks = chunks.max(1);
        let (row, chunk) = (i / chunks, i % chunks);
        let byte = first * DECODE_K_PER_STEP / 2 + 16 * chunk;
        let inside = byte < row_bytes;
        let src = if inside {
            // SAFETY: 16 bytes inside A's row `row` < m (K/2 is a multiple of 32).
            unsafe { a.add((row * row_bytes + byte) as usize) }
        } else {
            a
        };
        // SAFETY: inside the copy (contract); `src` read only when inside A.
        unsafe {
            copy::async_16(
                copied + row * codes_pitch + 16 * chunk,
                src,
                if inside { 16 } else { 0 },
            )
        };
        i += threads;
    }
    // Scale words: one per row and atom (64 K), those past K zeros.
    let layout = BlockedScales::new(m as usize, k as usize);
    let words = steps * DECODE_K_PER_STEP / K_PER_SLICE;
    let mut i = thread;
    while i < real_rows * words {
        let words = words.max(1);
        let (row, word) = (i / words, i % words);
        let atom = first * DECODE_K_PER_STEP / K_PER_SLICE + word;
        let inside = atom * K_PER_SLICE < k;
        let src = if inside {
            // SAFETY: the atom's word of row `row` < m inside A's scales.
            unsafe { a_scales.add(layout.offset(row as usize, (atom * ATOM_SCALE_COLS as u32) as usize)) }
        } else {
            a_scales
        };
        // SAFETY: inside the copy (contract); `src` (4-aligned) read only when inside.
        unsafe {
            copy::async_4(
                scales_at + row * scales_pitch + 4 * word,
                src as *const u32,
                if inside { 4 } else { 0 },
            )
        };
        i += threads;
    }
    copy::async_commit();
    copy::async_wait_all();
    fence::sync_threads();

    let slices = (steps * DECODE_SLICES_PER_STEP).max(1);
    let first_block = first * DECODE_BLOCKS_PER_STEP;
    let mut item = thread;
    while item < TOKEN_ROWS * slices {
        let (token, local_slice) = (item % TOKEN_ROWS, item / TOKEN_ROWS);
        let slice = first * DECODE_SLICES_PER_STEP + local_slice;
        let at = smem::base() + token * pitch + local_slice * 2 * K_PER_SLICE;
        for w in 0..4 {
            let pairs = if token < real_rows {
                let block =
                    slice / SLICES_PER_STAGE * BLOCKS_PER_STAGE + stage_block(slice % SLICES_PER_STAGE, w);
                let local = block - first_block;
                // SAFETY: row `token`'s copied codes and scale word of a block of this split.
                unsafe {
                    SliceBlock::load_shared(
                        copied + token * codes_pitch + 8 * local,
                        scales_at + token * scales_pitch + 4 * (local / ATOM_SCALE_COLS as u32),
                        local % ATOM_SCALE_COLS as u32,
                        block < k / SCALE_BLOCK_K as u32,
                    )
                }
                .decode::<Codec>()
            } else {
                [0; 8]
            };
            // SAFETY: a run of a row's slice inside the token rows (contract).
            unsafe { store_run(at + 32 * w, pairs) };
        }
        item += threads;
    }
}

/// The second half's warps (`warp ≥ WARPS_PER_MATRIX`) hand their sums over to the first
/// half's warp of the same index through shared memory, 16 bytes per lane and tile in the first
/// `decode_halves_bytes(WARPS_PER_MATRIX)` (the token rows, which no warp reads once all are
/// past the first barrier). Returns, in the first half's warps, the other half's sums per token
/// tile (in the second half's, zeros).
///
/// # Safety
/// Every thread of the CTA calls it, after its loop; the kernel's shared memory holds
/// `decode_halves_bytes(WARPS_PER_MATRIX)`.
#[inline(always)]
unsafe fn hand_over<const TILES: usize, const WARPS_PER_MATRIX: u32>(
    sums: &[[f32; 4]; TILES],
    warp: u32,
    lane: u32,
) -> [[f32; 4]; TILES] {
    /// A lane's four sums of one tile.
    const LANE_BYTES: u32 = 16;
    const { assert!(TILES as u32 * WARPS_PER_MATRIX * 32 * LANE_BYTES <= decode_halves_bytes(WARPS_PER_MATRIX)) };
    let at = |tile: usize| {
        smem::base() + ((warp % WARPS_PER_MATRIX * TILES as u32 + tile as u32) * 32 + lane) * LANE_BYTES
    };
    fence::sync_threads();
    if warp >= WARPS_PER_MATRIX {
        for (tile, sums) in sums.iter().enumerate() {
            // SAFETY: inside the halves' bytes (asserted above; the contract).
            unsafe { smem::st_v4(at(tile), sums.map(f32::to_bits)) };
        }
    }
    fence::sync_threads();
    let mut other = [[0.0; 4]; TILES];
    if warp < WARPS_PER_MATRIX {
        for (tile, other) in other.iter_mut().enumerate() {
            // SAFETY: as above, written before the barrier.
            *other = unsafe { smem::ld_v4(at(tile)) }.map(f32::from_bits);
        }
    }
    other
}

/// Accumulator `i` (0..4) of a lane (`g`, `t`) of warp `warp` of a matrix, token tile `tile`:
/// its token (in the CTA's token rows) and its output column in the row group.
#[inline(always)]
fn output_position(warp: u32, tile: u32, g: u32, t: u32, i: u32) -> (u32, u32) {
    (
        tile * DECODE_TOKEN_TILE + 2 * t + i % 2,
        warp * DECODE_ROWS_PER_WARP + g + 8 * (i / 2),
    )
}

/// An output from its sums: `silu(α_gate·gate) ⊙ (α_up·up)` by `product` (dual GEMM), or
/// `α_gate·gate` (plain GEMM: `gate` holds both halves of K, added in each CTA before its
/// records).
#[inline(always)]
fn finish(product: Option<GatedProduct>, alpha_gate: f32, gate: f32, up: f32) -> f32 {
    match product {
        Some(product) => product.value(gate, up),
        None => alpha_gate * gate,
    }
}

/// The dual GEMM's [`GatedProduct`] of scales `alpha_gate` and `alpha_up` (its constants once
/// a thread, not once an output), `None` for the plain GEMM.
#[inline(always)]
fn gated_product<const GATED: bool>(alpha_gate: f32, alpha_up: f32) -> Option<GatedProduct> {
    GATED.then(|| GatedProduct::new(alpha_gate, alpha_up))
}

macro_rules! decode_entry {
    ($tiles:literal, $name:ident, $gated:literal, $nvfp4:literal, $bf16:literal, $paired:literal) => {
        decode_entry!(
            $tiles,
            $name,
            $gated,
            $nvfp4,
            $bf16,
            $paired,
            DECODE_WARPS_PER_MATRIX
        );
    };
    ($tiles:literal, $name:ident, $gated:literal, $nvfp4:literal, $bf16:literal, $paired:literal, $warps:expr) => {
        /// The decode-size dual GEMM (or plain GEMM) for up to `8 · token_tiles` tokens (see
        /// the module doc); the paired entries for splits of at least
        /// [`DECODE_PAIRED_MIN_STEPS`].
        ///
        /// # Safety
        /// Arguments must satisfy [`DecodeArgs`]' contract with `decode_token_tiles(m)` equal
        /// to the entry's token tiles and `n` a multiple of its row group
        /// (`decode_group_n(warps)`), launched with `2 · warps · 32` threads per CTA and
        /// [`crate::sm90::config::decode_shared_bytes`] of dynamic shared memory (with the
        /// copy where [`DecodeArgs::copied_tokens`] asks for it).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DecodeArgs) {
            // SAFETY: forwarded.
            unsafe { decode::<$tiles, $gated, $nvfp4, $bf16, $paired, { $warps }>(args) }
        }
    };
}

macro_rules! decode_entries {
    ($($tiles:literal $name:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident;)*) => {$(
        decode_entry!($tiles, $name, true, false, false, false);
        decode_entry!($tiles, $nvfp4, true, true, false, false);
        decode_entry!($tiles, $plain, false, false, false, false);
        decode_entry!($tiles, $bf16, true, false, true, false);
        decode_entry!($tiles, $plain_bf16, false, false, true, false);
    )*};
}

registry::decode_entries!(decode_entries);

macro_rules! decode_paired_entries {
    ($gated:ident $nvfp4:ident $bf16:ident) => {
        decode_entry!(1, $gated, true, false, false, true);
        decode_entry!(1, $nvfp4, true, true, false, true);
        decode_entry!(1, $bf16, true, false, true, true);
    };
}

registry::decode_paired_entries!(decode_paired_entries);

macro_rules! decode_wide_entries {
    ($name:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident) => {
        decode_entry!(
            2,
            $name,
            true,
            false,
            false,
            false,
            DECODE_WIDE_WARPS_PER_MATRIX
        );
        decode_entry!(
            2,
            $nvfp4,
            true,
            true,
            false,
            false,
            DECODE_WIDE_WARPS_PER_MATRIX
        );
        decode_entry!(
            2,
            $plain,
            false,
            false,
            false,
            false,
            DECODE_WIDE_WARPS_PER_MATRIX
        );
        decode_entry!(
            2,
            $bf16,
            true,
            false,
            true,
            false,
            DECODE_WIDE_WARPS_PER_MATRIX
        );
        decode_entry!(
            2,
            $plain_bf16,
            false,
            false,
            true,
            false,
            DECODE_WIDE_WARPS_PER_MATRIX
        );
    };
}

registry::decode_wide_entries!(decode_wide_entries);

/// 128-K steps of its split's weights a decode-size CTA prefetches into L2 before it waits for
/// the previous kernel.
const DECODE_WARM_UP_STEPS: u32 = 2;
/// The same for the wide dual GEMM's CTAs: their splits are long (at least
/// `DECODE_WIDE_MIN_STEPS`) and the DRAM idles while every CTA stages its 16 token rows. H100
/// (perf log entry 109): 6 steps made 16×14336×4096, 16×11008×4096 and 16×12544×4096 0.97–0.98
/// (8 steps 0.96–0.97, but a 9-step split's NVFP4 output 1.01); more steps for every two-tile
/// entry made the plain GEMM's and short splits 1.06–1.2× slower.
const DECODE_WIDE_GATED_WARM_UP_STEPS: u32 = 6;
/// 128-K steps of each warp's share a whole-K CTA prefetches into L2 before it waits for the
/// previous kernel. Less than the split kernel's: bulk prefetches of the whole rows made the
/// whole-K GEMMs 13–28 % slower, and one step a part was faster than two (H100: GEMM
/// 1×4096×7168 10.45 → 9.91 µs, 8×4096×7168 0.963, dual GEMM 1×14336×4096 0.987; none at all
/// 0.98–1.01), where the split kernel's rows were 2–5 % slower with one (perf log entry 105).
const DECODE_WHOLE_K_WARM_UP_STEPS: u32 = 1;

/// The kernel body for `TILES` token tiles of [`DECODE_TOKEN_TILE`] (`decode_token_tiles(m)`),
/// the dual GEMM if `GATED` (written as NVFP4 if `NVFP4`), else the plain GEMM (whose `b2` is
/// ignored); `PAIRED` (one-tile dual GEMM only): [`stream`]'s loop of two steps an iteration,
/// for the long splits where it pays ([`DECODE_PAIRED_MIN_STEPS`]). `WARPS_PER_MATRIX` warps
/// stream each matrix (a row group of `decode_group_n(WARPS_PER_MATRIX)` outputs).
/// One step's weight loads are in flight while a step is decoded: two (the most that fit in 64
/// registers, one tile) measured slower (perf log entry 31).
///
/// # Safety
/// As the entry points.
#[inline(always)]
unsafe fn decode<
    const TILES: usize,
    const GATED: bool,
    const NVFP4: bool,
    const BF16: bool,
    const PAIRED: bool,
    const WARPS_PER_MATRIX: u32,
>(
    args: DecodeArgs,
) {
    const { assert!(GATED || !NVFP4, "NVFP4 output is the gated epilogue's") };
    const {
        assert!(
            (GATED && TILES == 1) || !PAIRED,
            "the paired loop is the one-tile dual GEMM's"
        )
    };
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
        copied_tokens,
        alpha_gate,
        alpha_up,
        device_globals,
    } = args;
    let group_n = decode_group_n(WARPS_PER_MATRIX);
    let (groups, tiles) = (n / group_n, TILES as u32);
    if groups == 0 || splits == 0 || decode_token_tiles(m) != tiles {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (split, group) = (sreg::block_idx_x() / groups, sreg::block_idx_x() % groups);
    let gate = warp < WARPS_PER_MATRIX;
    let (data, scales) = if gate || !GATED {
        (b1, b1_scales)
    } else {
        (b2, b2_scales)
    };
    // The steps this warp streams: all of the split's, or (plain) every other one from its
    // half's parity.
    let (step_offset, step_stride) = if GATED { (0, 1) } else { (u32::from(!gate), 2) };
    let first_row = group * group_n + (warp % WARPS_PER_MATRIX) * DECODE_ROWS_PER_WARP;
    let rows = [first_row + g, first_row + g + 8];
    let layout = BlockedScales::new(n as usize, k as usize);
    let first_step = split * steps_per_split;
    let end_step = (first_step + steps_per_split).min(decode_steps(k));

    // The split's first weight steps of this lane's two rows into L2 before the dependency
    // wait (as the tiled kernels' `warm_up_weights`): with a programmatic launch this overlaps
    // the previous kernel's tail (the quantizer's, in an MLP). Lane t = 0 of each quad.
    if t == 0 {
        let row_bytes = k / 2;
        let first_byte = first_step * DECODE_BLOCKS_PER_STEP * 8;
        let warm_up = if GATED && WARPS_PER_MATRIX == DECODE_WIDE_WARPS_PER_MATRIX {
            DECODE_WIDE_GATED_WARM_UP_STEPS
        } else {
            DECODE_WARM_UP_STEPS
        };
        let end_byte = ((first_step + warm_up) * DECODE_BLOCKS_PER_STEP * 8).min(row_bytes);
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

    let pair = RowPair::new(data, scales, layout, rows, k, t);
    fence::grid_dependency_wait(); // A may come from the kernel before (no-op if plain)
    // The first step's weights are on their way while the tokens are decoded.
    // SAFETY: this lane's rows of B (contract).
    let chunks = unsafe { pair.load::<true>(first_step + step_offset) };

    // The split's tokens, decoded into shared memory once per CTA.
    let pitch = decode_token_pitch(steps_per_split);
    // SAFETY: A's rows and scales (contract); the token rows and the copy fit
    // `decode_shared_bytes`.
    unsafe {
        if TILES == 1 || copied_tokens == 0 {
            stage_dense_tokens(
                a,
                a_scales,
                m,
                k,
                tiles * DECODE_TOKEN_TILE,
                [first_step, end_step],
                pitch,
            )
        } else {
            // Opaque inputs: else the verdict's offset, computed here once, stays live across
            // the loop (a spill in the plain entries).
            let copied = smem::base()
                + decode_copied_tokens_offset(
                    reg::opaque(m),
                    reg::opaque(steps_per_split),
                    NVFP4,
                    WARPS_PER_MATRIX,
                );
            stage_copied_tokens(a, a_scales, [m, k], [first_step, end_step], pitch, copied)
        }
    };
    fence::sync_threads();

    let mut sums = [[0f32; 4]; TILES];
    let steps = [first_step + step_offset, end_step, step_stride];
    let tokens = StagedTokens::new(pitch, g, t);
    // SAFETY: as above; the split's slices are staged.
    unsafe {
        if PAIRED {
            stream::<Codec, TILES, true>(&pair, chunks, steps, first_step, tokens, &mut sums)
        } else {
            stream::<Codec, TILES, false>(&pair, chunks, steps, first_step, tokens, &mut sums)
        }
    };
    fence::launch_dependents();

    // Plain GEMM: the CTA adds its two halves of K itself, so that only the first half's warps
    // publish records and the last CTA reads half as many.
    if !GATED {
        // SAFETY: every thread of the CTA, after its loop.
        let odd = unsafe { hand_over::<TILES, WARPS_PER_MATRIX>(&sums, warp, lane) };
        for tile in 0..TILES {
            for i in 0..4 {
                sums[tile][i] += odd[tile][i];
            }
        }
    }

    // Publish this warp's partial sums (plain: the first half's warps), then count the CTA in.
    let record = |split: u32, warp: u32, tile: u32| {
        (((split * groups + group) * 2 * WARPS_PER_MATRIX + warp) * tiles + tile) * DECODE_RECORD_WORDS
            + 4 * lane
    };
    if GATED || gate {
        for (tile, sums) in sums.iter().enumerate() {
            // SAFETY: this warp's record, inside the partial-sum buffer (contract).
            unsafe {
                mem::st_global_v4_b32(
                    partials.add(record(split, warp, tile as u32) as usize),
                    sums.map(f32::to_bits),
                )
            };
        }
    }
    // Thread 0 publishes the CTA's records: the barrier orders every thread's stores before its
    // fence, and the fence (cumulative) before its count (one fence instead of one a thread:
    // 0.991–1.000 of the time on the decode rows, H100).
    fence::sync_threads();
    // (`TILES` full tiles of tokens: the same offset as `m`'s, known at compile time.)
    let verdict = smem::base()
        + decode_verdict_offset(
            tiles * DECODE_TOKEN_TILE,
            steps_per_split,
            NVFP4,
            WARPS_PER_MATRIX,
        );
    if thread == 0 {
        fence::acq_rel_gpu();
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
    let reducers = WARPS_PER_MATRIX * tiles * 32;
    let halves = (2 * WARPS_PER_MATRIX * 32 / reducers).max(1);
    let (half, reducer) = (thread / reducers, thread % reducers);
    let (tile, warp) = ((reducer / 32) % tiles, reducer / 32 / tiles);
    let load = |split: u32, warp: u32| {
        // SAFETY: a record of this launch, published before the arrival count (acquired).
        unsafe { mem::ld_global_cg_v4_b32(partials.add(record(split, warp, tile) as usize)) }
    };
    let per_half = splits.div_ceil(halves);
    let (mut split, end_split) = (half * per_half, ((half + 1) * per_half).min(splits));
    let (mut gate, mut up) = ([0f32; 4], [0f32; 4]);
    // Eight records' loads in flight at a time, added in split order: four splits' gate and up
    // records, or (plain) eight splits' one.
    if GATED {
        while split < end_split {
            let group = [0, 1, 2, 3].map(|i| {
                if split + i < end_split {
                    [load(split + i, warp), load(split + i, warp + WARPS_PER_MATRIX)]
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
    } else {
        while split < end_split {
            let group = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| {
                if split + i < end_split {
                    load(split + i, warp)
                } else {
                    [0; 4]
                }
            });
            for g in group {
                for i in 0..4 {
                    gate[i] += f32::from_bits(g[i]);
                }
            }
            split += 8;
        }
    }
    if halves > 1 {
        // The token rows are no longer read: every warp finished its loop before the arrival
        // barrier (the verdict word lies past these bytes).
        let at = smem::base() + reducer * 32;
        if half == 1 {
            // SAFETY: `reducers · 32` = the halves' bytes, before the verdict word.
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
    let product = gated_product::<GATED>(alpha_gate, alpha_up);
    // Output `i` of this thread: its token, its column in the row group and its value.
    let output = |i: u32| {
        let (token, column) = output_position(warp, tile, g, t, i);
        let value = finish(product, alpha_gate, gate[i as usize], up[i as usize]);
        (token, column, value)
    };
    if !NVFP4 {
        for i in 0..4u32 {
            let (token, column, value) = output(i);
            if token < m {
                let row = group * group_n + column;
                // SAFETY: inside C (token < m, row < n).
                unsafe { mem::st_global_b16(out.add((token * n + row) as usize), half_bits(value, BF16)) };
            }
        }
        return;
    }
    let reducing = half == 0;
    // NVFP4 output (gated launches only): the row group's outputs of every token, staged in
    // token rows no longer read (every warp passed the arrival barrier), past the halves, one
    // staging a 64-output tile.
    let staging_base = smem::base() + decode_nvfp4_staging_offset(WARPS_PER_MATRIX);
    let staging = |tile: u32| staging_base + tile * DECODE_NVFP4_TILE_STAGING_BYTES;
    for i in 0..4u32 {
        let (token, column, value) = output(i);
        if reducing && token < m {
            // (Written out for one tile: else the standard entries spill a word.)
            let (tile, column) = if group_n == NVFP4_TILE_COLUMNS {
                (0, column)
            } else {
                (column / NVFP4_TILE_COLUMNS, column % NVFP4_TILE_COLUMNS)
            };
            // SAFETY: token < m ≤ 16, column < 64, tile < the row group's: inside the staging.
            unsafe { Nvfp4Tile::stage(staging(tile), token, column, value) };
        }
    }
    fence::sync_threads();
    // One encode of one tile without a loop around it: else the standard entries spill a word.
    let threads = 2 * WARPS_PER_MATRIX * 32;
    let tile_out = |tile: u32| {
        let first_column = group * group_n + tile * NVFP4_TILE_COLUMNS;
        Nvfp4Tile {
            data: (out as *mut u8).wrapping_add((first_column / 2) as usize),
            data_pitch: n / 2,
            scales: out_scales,
            layout: BlockedScales::new(m as usize, n as usize),
            scale_row: 0,
            first_block: first_column / SCALE_BLOCK_K as u32,
            blocks: NVFP4_TILE_BLOCKS,
            tokens: m,
            padding: Nvfp4Tile::padding_rows(m, 0, m),
            global_scale: out_global_scale,
            decoded: core::ptr::null_mut(),
            decoded_pitch: 0,
        }
    };
    // SAFETY: every token of the row group staged above; C's buffers hold `m × n` (contract).
    unsafe {
        if group_n == NVFP4_TILE_COLUMNS {
            tile_out(0).encode(staging_base, thread, threads);
        } else {
            // Each tile by its share of the threads, the tiles at once.
            let per_tile = threads / (group_n / NVFP4_TILE_COLUMNS);
            let tile = thread / per_tile;
            tile_out(tile).encode(staging(tile), thread % per_tile, per_tile);
        }
    }
}

macro_rules! decode_whole_k_entries {
    ($gated:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident) => {
        decode_whole_k_entry!($gated, true, false, false);
        decode_whole_k_entry!($nvfp4, true, true, false);
        decode_whole_k_entry!($plain, false, false, false);
        decode_whole_k_entry!($bf16, true, false, true);
        decode_whole_k_entry!($plain_bf16, false, false, true);
    };
}

macro_rules! decode_whole_k_entry {
    ($name:ident, $gated:literal, $nvfp4:literal, $bf16:literal) => {
        /// The whole-K decode-size dual GEMM (or plain GEMM) for up to 8 tokens (see
        /// [`decode_whole_k`]).
        ///
        /// # Safety
        /// Arguments must satisfy [`DecodeArgs`]' contract but for the split (`partials`,
        /// `arrivals`, `steps_per_split` and `splits` are ignored) with M ≤ 8, launched with
        /// `n / DECODE_ROWS_PER_WARP` CTAs of `w · 32` threads, `w` ≤ the entry's
        /// `.maxntid` warps (even for the dual GEMM), and
        /// `decode_whole_k_shared_bytes(m, k, w, gated, nvfp4)` of dynamic shared memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DecodeArgs) {
            // SAFETY: forwarded.
            unsafe { decode_whole_k::<$gated, $nvfp4, $bf16>(args) }
        }
    };
}

registry::decode_whole_k_entries!(decode_whole_k_entries);

macro_rules! decode_whole_k_small_entries {
    ($gated:ident $nvfp4:ident $bf16:ident) => {
        decode_whole_k_entry!($gated, true, false, false);
        decode_whole_k_entry!($nvfp4, true, true, false);
        decode_whole_k_entry!($bf16, true, false, true);
    };
}

registry::decode_whole_k_small_entries!(decode_whole_k_small_entries);

/// The whole-K decode-size kernel: a CTA owns [`DECODE_ROWS_PER_WARP`] outputs over all of K,
/// so no split is reduced between CTAs (no partial sums in global memory, no arrival counter,
/// no last CTA's reduction) — for one token tile, where the CTA's token rows over all of K
/// fit beside its neighbours.
///
/// Its `parts` warps per matrix (the block's warps, halved for the dual GEMM: gate first, then
/// up) each stream the CTA's 16 rows at steps `part, part + parts, …` with [`stream`], so that
/// at any time the CTA's warps read neighbouring 64-byte pieces of the same rows. Only the real
/// token rows are staged (a lane of a token column past M reads row `m − 1`: its products land
/// in accumulators of outputs that are never written). After the loop every warp puts its sums
/// in shared memory, and warp 0 adds the parts in order (deterministic) and writes the outputs
/// as the split kernel's last CTA does (fp16, bf16, or NVFP4: one scale block per token).
///
/// # Safety
/// As the entry points.
#[inline(always)]
unsafe fn decode_whole_k<const GATED: bool, const NVFP4: bool, const BF16: bool>(args: DecodeArgs) {
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
        m,
        n,
        k,
        alpha_gate,
        alpha_up,
        device_globals,
        ..
    } = args;
    let warps = sreg::block_dim_x() / 32;
    let parts = if GATED { warps / 2 } else { warps };
    if parts == 0 || m == 0 || m > DECODE_TOKEN_TILE {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (matrix, part) = (warp / parts, warp % parts);
    let (data, scales) = if matrix == 0 {
        (b1, b1_scales)
    } else {
        (b2, b2_scales)
    };
    let first_row = sreg::block_idx_x() * DECODE_ROWS_PER_WARP;
    let rows = [first_row + g, first_row + g + 8];
    let layout = BlockedScales::new(n as usize, k as usize);
    let steps = decode_steps(k);

    // The first steps of every part into L2 before the dependency wait (as the split kernel):
    // one contiguous range per row, by the first part's warp of each matrix.
    if part == 0 && t == 0 {
        let row_bytes = k / 2;
        let bytes = (DECODE_WHOLE_K_WARM_UP_STEPS * parts * DECODE_BLOCKS_PER_STEP * 8).min(row_bytes);
        for row in rows {
            // SAFETY: the start of this lane's row inside B (contract), 16-byte aligned, a
            // multiple of 16 bytes.
            unsafe { copy::prefetch_bulk_l2(data.add((row * row_bytes) as usize), bytes) };
        }
    }

    let pair = RowPair::new(data, scales, layout, rows, k, t);
    fence::grid_dependency_wait(); // A may come from the kernel before (no-op if plain)
    // SAFETY: this lane's rows of B (contract); a step past K loads the row's first chunk.
    let chunks = unsafe { pair.load::<true>(part) };

    let mut sums = [[0f32; 4]; 1];
    if GATED {
        // The real token rows over all of K, decoded into shared memory once per CTA (each
        // step's tokens serve a gate and an up warp).
        let pitch = decode_token_pitch(steps);
        // SAFETY: A's rows and scales (contract); the rows fit `decode_whole_k_shared_bytes`.
        unsafe { stage_dense_tokens(a, a_scales, m, k, m, [0, steps], pitch) };
        fence::sync_threads();
        let tokens = StagedTokens::new(pitch, g.min(m - 1), t);
        // SAFETY: as above; every step's slices are staged.
        unsafe { stream::<Codec, 1, false>(&pair, chunks, [part, steps, parts], 0, tokens, &mut sums) };
    } else {
        // Each step belongs to one warp: its lanes load their token row's chunks beside the
        // weights (the lanes of token columns past M read row `m − 1`, as staged ones would).
        let token = TokenRow::new(
            a,
            a_scales,
            BlockedScales::new(m as usize, k as usize),
            g.min(m - 1),
            k,
            t,
        );
        // SAFETY: A's row `g.min(m − 1)` and its scales (contract).
        let first = unsafe { token.load_if(part, true, TokenRow::NOTHING) };
        // SAFETY: as above.
        unsafe { stream_own_tokens::<Codec>(&pair, (chunks, first), [part, steps, parts], token, &mut sums) };
    }
    fence::launch_dependents();

    // Every warp's sums as a record past the token rows; warp 0 adds them in part order.
    let records = smem::base() + decode_whole_k_records_offset(m, k, GATED);
    let record = |warp: u32| records + (warp * 32 + lane) * 16;
    // SAFETY: this warp's record, inside `decode_whole_k_shared_bytes`.
    unsafe { smem::st_v4(record(warp), sums[0].map(f32::to_bits)) };
    fence::sync_threads();
    let staging = records + warps * DECODE_RECORD_WORDS * 4;
    if warp == 0 {
        let (mut gate, mut up) = ([0f32; 4], [0f32; 4]);
        for p in 0..parts {
            // SAFETY: the records, written before the barrier.
            let (g, u) = unsafe {
                (
                    smem::ld_v4(record(p)),
                    if GATED {
                        smem::ld_v4(record(parts + p))
                    } else {
                        [0; 4]
                    },
                )
            };
            for i in 0..4 {
                gate[i] += f32::from_bits(g[i]);
                up[i] += f32::from_bits(u[i]);
            }
        }
        // SAFETY: the launch contract; after the dependency wait.
        let (alpha_gate, alpha_up) = {
            let (gate_factor, up_factor) = unsafe { device_globals.factors() };
            (alpha_gate * gate_factor, alpha_up * up_factor)
        };
        let product = gated_product::<GATED>(alpha_gate, alpha_up);
        for i in 0..4u32 {
            let (token, column) = output_position(0, 0, g, t, i);
            let value = finish(product, alpha_gate, gate[i as usize], up[i as usize]);
            if token < m {
                if NVFP4 {
                    // SAFETY: token < m ≤ 8, column < 16: inside the staging.
                    unsafe { Nvfp4Tile::stage(staging, token, column, value) };
                } else {
                    let row = first_row + column;
                    // SAFETY: inside C (token < m, row < n).
                    unsafe {
                        mem::st_global_b16(out.add((token * n + row) as usize), half_bits(value, BF16))
                    };
                }
            }
        }
    }
    if !NVFP4 {
        return;
    }
    fence::sync_threads();
    let tile_out = Nvfp4Tile {
        data: (out as *mut u8).wrapping_add((first_row / 2) as usize),
        data_pitch: n / 2,
        scales: out_scales,
        layout: BlockedScales::new(m as usize, n as usize),
        scale_row: 0,
        first_block: first_row / SCALE_BLOCK_K as u32,
        blocks: DECODE_ROWS_PER_WARP / SCALE_BLOCK_K as u32,
        tokens: m,
        padding: Nvfp4Tile::padding_rows(m, 0, m),
        global_scale: out_global_scale,
        decoded: core::ptr::null_mut(),
        decoded_pitch: 0,
    };
    // SAFETY: every token of the CTA's outputs staged above; C's buffers hold `m × n`
    // (contract).
    unsafe { tile_out.encode(staging, thread, warps * 32) };
}

macro_rules! grouped_decode_entries {
    ($gated:ident $gated_nvfp4:ident $plain:ident) => {
        grouped_decode_entry!($gated, true, false);
        grouped_decode_entry!($gated_nvfp4, true, true);
        grouped_decode_entry!($plain, false, false);
    };
}

macro_rules! grouped_decode_entry {
    ($name:ident, $gated:literal, $nvfp4:literal) => {
        /// The grouped decode-size dual GEMM (or plain GEMM; see [`grouped_decode`]).
        ///
        /// # Safety
        /// Arguments must satisfy [`GroupedDecodeArgs`]' contract, after the preparation pass
        /// of the same launch, with `DECODE_WARPS · 32` threads per CTA and
        /// `grouped_decode_shared_bytes(window_steps, nvfp4)` of dynamic shared memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GroupedDecodeArgs) {
            // SAFETY: forwarded.
            unsafe { grouped_decode::<$gated, $nvfp4>(args) }
        }
    };
}

registry::grouped_decode_entries!(grouped_decode_entries);

/// The grouped decode-size kernel: the dense kernel's weight stream for groups of few tokens
/// (routed decode), on the preparation pass's descriptors and decoded tokens.
///
/// A CTA owns [`grouped_decode_outputs`] outputs of one group and the whole of K: no split, so
/// no partial sums and no arrival counters (a grouped launch has thousands of CTAs for an MoE
/// layer). It takes its group's tokens 16 at a time (one or two token tiles; a group of more
/// streams its weights once per 16 tokens) and K in windows whose token rows it copies from the
/// decoded buffer into shared memory (the dense kernel's run layout) with asynchronous copies,
/// into two buffers in turn: a window's rows are on their way while the previous window
/// streams, so only a chunk's first window waits for its tokens. A buffer holds 16 token rows
/// of `window_steps` steps, or 8 rows of twice as many (a chunk of at most 8 tokens, MoE
/// decode's usual case, so takes half the windows). Dual GEMM: warp `w + 4` streams the up rows
/// of warp `w`'s gate rows and hands its sums over through shared memory; warp `w` writes
/// `silu(α_gate·g) ⊙ (α_up·u)` as fp16 or (`NVFP4`) as NVFP4 through the staging the dense
/// kernel uses. Plain GEMM: every warp streams and writes 16 outputs of its own (`α·sum`).
///
/// # Safety
/// As the entry points.
#[inline(always)]
unsafe fn grouped_decode<const GATED: bool, const NVFP4: bool>(args: GroupedDecodeArgs) {
    const { assert!(GATED || !NVFP4, "NVFP4 output is the gated epilogue's") };
    let GroupedDecodeArgs {
        descs,
        schedule,
        tokens,
        token_pitch,
        groups,
        row_groups,
        window_steps,
        warm_up,
    } = args;
    if row_groups == 0 || window_steps == 0 {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let (group, row_group) = (sreg::block_idx_x() / row_groups, sreg::block_idx_x() % row_groups);
    if group >= groups.min(MAX_GROUPS) {
        return;
    }
    fence::launch_dependents();
    if sreg::block_idx_x() < warm_up.ctas {
        // SAFETY: the launch contract: the group's stacked weights.
        unsafe { warm_up_weights::<GATED>(&warm_up, group, row_group * grouped_decode_outputs(GATED)) };
    }
    // The preparation pass wrote the descriptors and the status.
    fence::grid_dependency_wait();
    const STATUS_WORD: usize = core::mem::offset_of!(GroupedHeader, status) / 4;
    // SAFETY: the header's status word (contract).
    if unsafe { mem::ld_global_b32(schedule.add(STATUS_WORD)) } != STATUS_OK {
        return; // invalid device-side offsets: nothing is written
    }
    let column0 = row_group * grouped_decode_outputs(GATED);
    let mut first_token = 0;
    loop {
        // The descriptor again for each 16-token chunk: none of it stays live across a chunk's
        // stream and output.
        // SAFETY: group < groups.
        let desc = unsafe { prepare::load_desc(descs, group) };
        if first_token >= desc.rows || column0 >= desc.n {
            return;
        }
        let thread = sreg::thread_idx_x();
        let (warp, lane) = (thread / 32, thread % 32);
        let (g, t) = (lane / 4, lane % 4);
        let gate = warp < DECODE_WARPS_PER_MATRIX;
        let (data, scales, row_shift) = if gate || !GATED {
            (desc.gate, desc.gate_scales, 0)
        } else {
            (desc.up, desc.up_scales, desc.up_row_offset)
        };
        // Dual GEMM: warps w and w + 4 stream the gate and up rows of the same 16 outputs;
        // plain GEMM: each warp its own 16.
        let matrix_warp = if GATED {
            warp % DECODE_WARPS_PER_MATRIX
        } else {
            warp
        };
        // N is a multiple of 64, so only a plain CTA's last warps may lie past it: they stream
        // the CTA's first rows instead and write nothing.
        let own_row = column0 + matrix_warp * DECODE_ROWS_PER_WARP;
        let first_row = row_shift
            + if GATED || own_row < desc.n {
                own_row
            } else {
                column0
            };
        let layout = BlockedScales::new(desc.weight_rows as usize, desc.k as usize);
        let pair = RowPair::new(
            data as *const u8,
            scales as *const u8,
            layout,
            [first_row + g, first_row + g + 8],
            desc.k,
            t,
        );
        let count = (desc.rows - first_token).min(DECODE_MAX_TOKENS);
        let words_per_row = token_pitch / 2;
        let chunk = GroupedChunk {
            rows: tokens.wrapping_add((desc.token_row + first_token) as usize * words_per_row as usize),
            words_per_row,
            steps: decode_steps(desc.k),
            window_steps,
        };
        if count > DECODE_TOKEN_TILE {
            // SAFETY: the group's rows and weights (contract).
            let sums = unsafe { chunk.sums::<2>(&pair, [g, t], count) };
            // SAFETY: as above.
            unsafe { grouped_out::<2, GATED, NVFP4>(descs, group, column0, [first_token, count], sums) };
        } else {
            // SAFETY: as above.
            let sums = unsafe { chunk.sums::<1>(&pair, [g, t], count) };
            // SAFETY: as above.
            unsafe { grouped_out::<1, GATED, NVFP4>(descs, group, column0, [first_token, count], sums) };
        }
        first_token += DECODE_MAX_TOKENS;
    }
}

/// The first [`GROUPED_DECODE_WARM_UP_STEPS`] steps of this lane's two weight rows of the row
/// group from output `column0` of group `group` into L2 (quad lane 0; a plain CTA's rows past N
/// skipped), from the stacked weights' addresses, before the dependency wait. Only a hint: it
/// changes no load's result, and a group without tokens has its first steps read for nothing.
///
/// # Safety
/// `warm_up` describes the launch's weights and `group` is one of its groups.
#[inline(always)]
unsafe fn warm_up_weights<const GATED: bool>(warm_up: &GroupedDecodeWarmUp, group: u32, column0: u32) {
    let thread = sreg::thread_idx_x();
    let (warp, lane) = (thread / 32, thread % 32);
    if lane % 4 != 0 {
        return;
    }
    let gate = warp < DECODE_WARPS_PER_MATRIX;
    let matrix_warp = if GATED {
        warp % DECODE_WARPS_PER_MATRIX
    } else {
        warp
    };
    let own_row = column0 + matrix_warp * DECODE_ROWS_PER_WARP;
    if own_row >= warm_up.n {
        return;
    }
    let (base, row_shift) = if gate || !GATED {
        (warm_up.gate, 0)
    } else {
        (warm_up.up, warm_up.up_row_offset)
    };
    let row_bytes = warm_up.k / 2;
    let bytes = (GROUPED_DECODE_WARM_UP_STEPS * DECODE_BLOCKS_PER_STEP * 8).min(row_bytes);
    for row in [own_row + lane / 4, own_row + lane / 4 + 8] {
        let at = base + group as u64 * warm_up.stride + (row_shift + row) as u64 * row_bytes as u64;
        // SAFETY: the start of a row of the group's weights (contract), 16-byte aligned (`k / 2`
        // is a multiple of 32), `bytes` (a multiple of 16) within the row.
        unsafe { copy::prefetch_bulk_l2(at as *const u8, bytes) };
    }
}

/// What every 16-token chunk of a grouped decode-size CTA shares.
#[derive(Clone, Copy)]
struct GroupedChunk {
    /// The chunk's first token row in the decoded token buffer, and the buffer's 32-bit words
    /// per row.
    rows: *const u32,
    words_per_row: u32,
    /// Decode steps of the group's K, and per window of 16 token rows (the launch's
    /// `window_steps`, which sizes the token buffers).
    steps: u32,
    window_steps: u32,
}

impl GroupedChunk {
    /// This warp's sums over all of K for the chunk's `count` (≤ `8 · TILES`) tokens, window by
    /// window: window `w` streams from token buffer `w % 2` while the next window's rows are
    /// copied into the other ([`GroupedChunk::start_copy`]), so only the first window waits for
    /// its tokens.
    ///
    /// # Safety
    /// The rows are inside the decoded buffer; `pair`'s rows inside the group's weights; the
    /// CTA's shared memory holds [`GROUPED_DECODE_TOKEN_BUFFERS`] buffers of `window_steps`.
    #[inline(always)]
    unsafe fn sums<const TILES: usize>(
        &self,
        pair: &RowPair,
        [g, t]: [u32; 2],
        count: u32,
    ) -> [[f32; 4]; TILES] {
        let rows = TILES as u32 * DECODE_TOKEN_TILE;
        let buffer_bytes = grouped_decode_buffer_bytes(self.window_steps);
        // One token tile fills a buffer with windows twice as long.
        let window_steps = balanced_window_steps(self.steps, self.window_steps * (DECODE_MAX_TOKENS / rows));
        let pitch = decode_token_pitch(window_steps);
        let staged = StagedTokens::new(pitch, g, t);
        let window_end = |window: u32| (window + window_steps).min(self.steps);
        // The previous chunk's output is done with the shared memory.
        fence::sync_threads();
        // SAFETY: the contract.
        unsafe { self.start_copy([0, window_end(0)], [rows, pitch], count, 0) };
        let mut sums = [[0f32; 4]; TILES];
        let (mut window, mut buffer) = (0, 0);
        while window < self.steps {
            let end = window_end(window);
            // The window's first weights are on their way while its tokens land.
            // SAFETY: any step may be loaded (past K: the rows' first chunks).
            let chunks = unsafe { pair.load::<false>(window) };
            // This thread's copies of the window have landed; after the barrier every thread's
            // have, and every warp is done with the other buffer (the previous window).
            copy::async_wait_all();
            fence::sync_threads();
            if end < self.steps {
                let next = [end, window_end(end)];
                // SAFETY: the contract; the other buffer is no longer read.
                unsafe { self.start_copy(next, [rows, pitch], count, (1 - buffer) * buffer_bytes) };
            }
            let steps = [window, end, 1];
            let tokens = staged.shifted(buffer * buffer_bytes);
            // SAFETY: as above; the window's slices are staged.
            unsafe { stream::<GroupedCodec, TILES, true>(pair, chunks, steps, window, tokens, &mut sums) };
            (window, buffer) = (end, 1 - buffer);
        }
        sums
    }

    /// Starts copying steps `first..end` of the chunk's first `rows` token rows into the token
    /// buffer at shared offset `buffer` (`pitch` bytes a row), rows at or past `count` as
    /// zeros, in the dense kernel's run layout ([`stage_tokens`]): each warp copies one (token
    /// row, 64-K slice) at a time, lane `i` word `i % 4` of its 16-byte chunk `i / 4` to word
    /// `i / 4` of run `i % 4` (the reads one 128-byte line, the writes one word per bank). Joins
    /// the thread's next copy group and closes it.
    ///
    /// # Safety
    /// As [`GroupedChunk::sums`]; `rows` rows of the steps at `pitch` fit a buffer.
    #[inline(always)]
    unsafe fn start_copy(&self, [first, end]: [u32; 2], [rows, pitch]: [u32; 2], count: u32, buffer: u32) {
        let thread = sreg::thread_idx_x();
        let (warp, lane) = (thread / 32, thread % 32);
        let slices = end.saturating_sub(first) * DECODE_SLICES_PER_STEP;
        let lane_at = smem::base() + buffer + 32 * (lane % 4) + 4 * (lane / 4);
        let mut item = warp;
        while item < rows * slices {
            let (token, local_slice) = (item % rows, item / rows);
            let slice = first * DECODE_SLICES_PER_STEP + local_slice;
            // Rows past the chunk's tokens read nothing and become zeros (row 0's address
            // stands in: every chunk has a token).
            let (row, bytes) = if token < count { (token, 4) } else { (0, 0) };
            let word =
                row as usize * self.words_per_row as usize + (slice * 2 * K_PER_SLICE / 4 + lane) as usize;
            let at = lane_at + token * pitch + local_slice * 2 * K_PER_SLICE;
            // SAFETY: inside the decoded row (contract) and the buffer (`rows` rows of the
            // window's slices).
            unsafe { copy::async_4(at, self.rows.wrapping_add(word), bytes) };
            item += DECODE_WARPS;
        }
        copy::async_commit();
    }
}

/// Writes a 16-token chunk's outputs of a grouped decode-size CTA: tokens `first..first +
/// count` of group `group`, its row group from output `column0`.
///
/// # Safety
/// `descs` are the launch's descriptors, `group` the CTA's; every warp calls it with its sums.
#[inline(always)]
unsafe fn grouped_out<const TILES: usize, const GATED: bool, const NVFP4: bool>(
    descs: *const GroupDesc,
    group: u32,
    column0: u32,
    [first, count]: [u32; 2],
    sums: [[f32; 4]; TILES],
) {
    // An opaque copy of the address, so that the compiler loads the descriptor here instead of
    // keeping the chunk's first load of it live across the stream.
    let descs = reg::opaque_u64(descs as u64) as *const GroupDesc;
    // SAFETY: the CTA's group (contract).
    let desc = unsafe {
        if NVFP4 {
            prepare::load_desc_with_output(descs, group)
        } else {
            prepare::load_desc(descs, group)
        }
    };
    // Opaque: the positions derived from it are computed here, not hoisted out of the chunk
    // loop and kept live across the stream.
    let thread = reg::opaque(sreg::thread_idx_x());
    let (warp, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    let staging = smem::base() + DECODE_NVFP4_STAGING_OFFSET;
    // Output `i` of tile `tile` of this lane, given its value.
    let put = |matrix_warp: u32, tile: u32, i: u32, value: f32| {
        let (token, column) = output_position(matrix_warp, tile, g, t, i);
        if token < count && (GATED || column0 + column < desc.n) {
            if NVFP4 {
                // SAFETY: token < 16, column < 64: inside the staging (past the exchange's
                // bytes).
                unsafe { Nvfp4Tile::stage(staging, token, column, value) };
            } else {
                let at = (first + token) as usize * desc.ldc as usize + (column0 + column) as usize;
                // SAFETY: inside the group's output rows (the preparation pass's descriptor).
                unsafe { mem::st_global_b16((desc.out as *mut u16).add(at), half_bits(value, false)) };
            }
        }
    };
    if !GATED {
        for (tile, sums) in sums.iter().enumerate() {
            for i in 0..4u32 {
                put(warp, tile as u32, i, desc.alpha_gate * sums[i as usize]);
            }
        }
        return;
    }
    let matrix_warp = warp % DECODE_WARPS_PER_MATRIX;
    // SAFETY: every thread of the CTA, after its loop.
    let up = unsafe { hand_over::<_, DECODE_WARPS_PER_MATRIX>(&sums, warp, lane) };
    if warp < DECODE_WARPS_PER_MATRIX {
        let product = gated_product::<true>(desc.alpha_gate, desc.alpha_up);
        for (tile, (gate, up)) in sums.iter().zip(&up).enumerate() {
            for i in 0..4u32 {
                let value = finish(product, desc.alpha_gate, gate[i as usize], up[i as usize]);
                put(matrix_warp, tile as u32, i, value);
            }
        }
    }
    if !NVFP4 {
        return;
    }
    fence::sync_threads();
    let data_pitch = desc.n / 2;
    let tile_out = Nvfp4Tile {
        data: (desc.out as *mut u8)
            .wrapping_add(first as usize * data_pitch as usize + (column0 / 2) as usize),
        data_pitch,
        scales: desc.out_scales as *mut u8,
        // The group's own layout, from its first 128-row block.
        layout: BlockedScales::new(desc.rows as usize, desc.n as usize),
        scale_row: first,
        first_block: column0 / SCALE_BLOCK_K as u32,
        blocks: NVFP4_TILE_BLOCKS,
        tokens: count,
        padding: Nvfp4Tile::padding_rows(desc.rows, first, count),
        global_scale: desc.out_global_scale,
        decoded: core::ptr::null_mut(),
        decoded_pitch: 0,
    };
    // SAFETY: every token of the chunk staged above; the descriptor's output (contract).
    unsafe { tile_out.encode(staging, thread, DECODE_WARPS * 32) };
}
