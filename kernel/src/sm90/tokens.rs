//! The token operand of the sm_90a dual GEMM, and the kernel that pre-decodes it for large
//! token tiles.
//!
//! One token's 64-K slice `j` of a 256-K stage is 128 bytes of fp16, each value
//! `e2m1 · scale · 2⁻¹⁴` (exact), in the K order of the weights' register fragments: 16-byte
//! chunk `p` holds pair `p` (the kernel's codec's `PAIR_ELEMENTS`) of the stage's scale blocks
//! [`stage_block`]`(j, w)` in words `w = 0..3`, one fp16x2 each. Two writers produce it:
//! * the decoder warpgroups of the dual-GEMM kernel, for token tiles below
//!   [`crate::sm90::config::PREDECODED_MIN_TOKENS`], into 128-byte-swizzled shared memory;
//! * the token pre-decoder (`sm90::registry::PREDECODE_TOKENS`), once per call for larger tiles, into a row-major global
//!   buffer (`rows × padded_k(k)` fp16) that the kernel's producer loads with TMA and the same
//!   swizzle. Large tiles would otherwise decode every token once per 64-output tile: measured
//!   on an H200, skipping that decode made the 128-token kernel 16–24 % faster;
//! * the grouped kernels' preparation pass (`sm90::grouped`), for every tile size, into the
//!   same kind of buffer (all groups' tokens, one row each);
//! * the kernels that produce the token matrix themselves, beside its NVFP4 form: the GPU
//!   quantizer and the dual GEMM's NVFP4 epilogue, block by block ([`store_decoded_block`]),
//!   so that the dense GEMM that reads it next needs no pre-decoding pass (the MLP op).
//!
//! Every global writer decodes through [`SliceBlock::decode`], so all write the same bits.

use crate::fp4::{PairCodec, PermuteCodec, ShiftCodec};
use crate::layout::{BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{cvt, fence, mem, smem, sreg, warp};
use crate::sm90::config::{
    BLOCKS_PER_STAGE, K_PER_SLICE, PredecodeArgs, SLICES_PER_STAGE, block_slice_lane, padded_k, stage_block,
};
use crate::sm90::registry;

/// 16-byte chunks of one token's decoded slice (128 bytes of fp16, one swizzle row).
pub const CHUNKS_PER_SLICE: u32 = 2 * K_PER_SLICE / 16;

/// The codec of the dense tiled kernels' operands: the consumers' weights, the decoder
/// warpgroups' tokens and the token pre-decoder's buffer (1–2.6 % faster than [`ShiftCodec`]
/// on the H100 from 64 tokens up).
pub type DenseCodec = PermuteCodec;

/// The codec of the grouped kernels' weights (tiled and decode-size) and of their preparation
/// pass' token buffer, which both read.
pub type GroupedCodec = PermuteCodec;

/// The eight fp16x2 pairs of one 16-element scale block (`lo` = elements 0..7, `hi` = 8..15),
/// each `e2m1 · scale · 2⁻¹⁴`, in codec `C`'s [`PairCodec::PAIR_ELEMENTS`] order; `scale` is
/// the block's e4m3 scale as fp16 in both halves. Both operands of a kernel decode through this
/// one function with one codec: in the tiled kernels ([`DenseCodec`], [`GroupedCodec`]) the
/// weights into register fragments and the tokens into the slices above (pair `p` of word `w`'s
/// block is word `w` of chunk `p`).
#[inline(always)]
pub fn scaled_pairs<C: PairCodec>(lo: u32, hi: u32, scale: u32) -> [u32; 8] {
    let (a, b) = (C::pairs(lo), C::pairs(hi));
    let mut out = [0u32; 8];
    for i in 0..4 {
        out[i] = cvt::mul_f16x2(a[i], scale);
        out[4 + i] = cvt::mul_f16x2(b[i], scale);
    }
    out
}

/// Decodes one token's 64-K slice `slice` (slice `slice % 4` of stage `slice / 4`) into the
/// operand format above: its 8 chunks of 16 bytes. `data` is the token's packed row (`k / 2`
/// bytes), `scales` its matrix's blocked scales with `layout`, `scale_row` its row there. Blocks
/// at or past `k` (a partial last stage) become zeros and are not read.
///
/// # Safety
/// The row's bytes below `k` and its scale codes are readable (8- and 4-byte aligned).
#[inline(always)]
pub unsafe fn decode_slice_chunks<C: PairCodec>(
    data: *const u8,
    scales: *const u8,
    layout: BlockedScales,
    scale_row: usize,
    k: u32,
    slice: u32,
) -> [[u32; 4]; CHUNKS_PER_SLICE as usize] {
    // SAFETY (all four): forwarded.
    let block =
        |w: u32| unsafe { SliceBlock::load(data, scales, layout, scale_row, k, slice, w).decode::<C>() };
    // Four named blocks and literal indices: an array of them indexed in a loop went to local
    // memory in the grouped preparation pass.
    let (b0, b1, b2, b3) = (block(0), block(1), block(2), block(3));
    const _: () = assert!(CHUNKS_PER_SLICE == 8, "one chunk per pair of a 16-element block");
    let mut chunks = [[0u32; 4]; CHUNKS_PER_SLICE as usize];
    for (pair, chunk) in chunks.iter_mut().enumerate() {
        *chunk = [b0[pair], b1[pair], b2[pair], b3[pair]];
    }
    chunks
}

/// Word `w` of every chunk of [`decode_slice_chunks`] as loaded: the packed codes of the scale
/// block of quad lane `w` ([`stage_block`]) in a token's slice and the word holding its scale
/// code. Loading and decoding are separate steps so that a thread puts several blocks' loads
/// in flight before it decodes the first.
#[derive(Clone, Copy)]
pub struct SliceBlock {
    lo: u32,
    hi: u32,
    /// The word holding the block's scale code (the atom's 4 codes of this row).
    codes: u32,
    /// The code's byte in `codes`.
    byte: u32,
    /// False for a block at or past `k`: it decodes to zeros.
    exists: bool,
}

impl SliceBlock {
    /// A block that decodes to zeros (a token row past the matrix).
    pub const ZERO: Self = Self {
        lo: 0,
        hi: 0,
        codes: 0,
        byte: 0,
        exists: false,
    };

    /// Loads word `w`'s block of the token's slice `slice` (see [`decode_slice_chunks`] for
    /// the arguments); a block past `k` reads block 0 and decodes to zeros.
    ///
    /// # Safety
    /// As [`decode_slice_chunks`].
    #[inline(always)]
    pub unsafe fn load(
        data: *const u8,
        scales: *const u8,
        layout: BlockedScales,
        scale_row: usize,
        k: u32,
        slice: u32,
        w: u32,
    ) -> Self {
        let (stage, j) = (slice / SLICES_PER_STAGE, slice % SLICES_PER_STAGE);
        let block = stage * BLOCKS_PER_STAGE + stage_block(j, w);
        // A block past K reads block 0 (always there) and scales it by zero: branch-free, so
        // the per-block values stay in registers.
        let exists = block < k / SCALE_BLOCK_K as u32;
        let column = if exists { block as usize } else { 0 };
        // SAFETY: the contract above: block `column` is 8 bytes inside the row (8-byte
        // aligned), and the word holding its scale code (4-aligned, the atom's 4 codes of this
        // row) is inside `scales`.
        unsafe {
            let [lo, hi] = mem::ld_global_nc_v2_b32(data.add(8 * column) as *const u32);
            let codes =
                mem::ld_global_nc_b32(scales.add(layout.offset(scale_row, column & !3)) as *const u32);
            Self {
                lo,
                hi,
                codes,
                byte: (column % 4) as u32,
                exists,
            }
        }
    }

    /// A block as the NVFP4 matrix stores it: its packed codes `words` (8 bytes, the first
    /// element in the low nibble of `words[0]`) and its e4m3 scale code.
    #[inline(always)]
    pub fn stored(words: [u32; 2], scale: u8) -> Self {
        Self {
            lo: words[0],
            hi: words[1],
            codes: scale as u32,
            byte: 0,
            exists: true,
        }
    }

    /// Reads a block from a shared-memory copy of its row: its 8 bytes of codes at `codes`
    /// (8-byte aligned) and the word holding its scale code at `scale_word` (4-aligned: the
    /// row's codes of the block's atom), the code at byte `byte` of it; `exists` false for a
    /// block at or past K (it decodes to zeros).
    ///
    /// # Safety
    /// Both addresses lie inside the kernel's shared memory.
    #[inline(always)]
    pub unsafe fn load_shared(codes: u32, scale_word: u32, byte: u32, exists: bool) -> Self {
        // SAFETY: the contract above.
        let ([lo, hi], codes) = unsafe { (smem::ld_v2(codes), smem::ld_b32(scale_word)) };
        Self {
            lo,
            hi,
            codes,
            byte,
            exists,
        }
    }

    /// The block's eight scaled pairs ([`scaled_pairs`] with codec `C`), zeros if it does not
    /// exist.
    #[inline(always)]
    pub fn decode<C: PairCodec>(self) -> [u32; 8] {
        let scale = cvt::e4m3_byte_to_f16x2_broadcast(self.codes, self.byte);
        scaled_pairs::<C>(self.lo, self.hi, if self.exists { scale } else { 0 })
    }
}

/// 32-bit words of one token row of a decoded operand of reduction length `k` (`padded_k(k)`
/// fp16).
#[inline(always)]
pub const fn decoded_row_words(k: u32) -> u32 {
    padded_k(k) / 2
}

/// Writes scale block `block` of a token row into the row's decoded operand (`row`: its first
/// word, [`decoded_row_words`] of them), from the block as the NVFP4 matrix stores it (see
/// [`SliceBlock::stored`]): pair `p` of its [`DenseCodec`] pairs becomes word `lane` of chunk
/// `p` of its slice ([`block_slice_lane`]) — the words the pre-decoder writes for it, bit for
/// bit. Eight 4-byte stores into one 128-byte line; the line's other words are its slice's
/// other blocks (the padding blocks past K of a partial last stage are never written: the
/// buffer's owner keeps them zero).
///
/// # Safety
/// `row` is a decoded operand row of a K above `16 · block`, writable, 16-byte aligned.
#[inline(always)]
pub unsafe fn store_decoded_block(row: *mut u32, block: u32, words: [u32; 2], scale: u8) {
    let DecodedBlock { line, lane, pairs } = DecodedBlock::new(block, words, scale);
    for (pair, word) in pairs.into_iter().enumerate() {
        // SAFETY: word `lane` of chunk `pair` of the block's slice, inside the row (the
        // caller's contract).
        unsafe { mem::st_global_b32(row.add(line + pair * WORDS_PER_CHUNK + lane as usize), word) };
    }
}

/// 32-bit words of one 16-byte chunk of a decoded slice.
const WORDS_PER_CHUNK: usize = 4;

/// Scale block `block` of a token row as its decoded operand holds it: the first word of its
/// slice's line in the row, its word (`lane`) in each of the line's chunks, and its eight
/// [`DenseCodec`] pairs (pair `p` for chunk `p`).
struct DecodedBlock {
    line: usize,
    lane: u32,
    pairs: [u32; 8],
}

impl DecodedBlock {
    /// The block as the NVFP4 matrix stores it ([`SliceBlock::stored`]), placed.
    #[inline(always)]
    fn new(block: u32, words: [u32; 2], scale: u8) -> Self {
        let (stage, stage_block) = (block / BLOCKS_PER_STAGE, block % BLOCKS_PER_STAGE);
        let (slice, lane) = block_slice_lane(stage_block);
        Self {
            line: (stage * SLICES_PER_STAGE + slice) as usize * CHUNKS_PER_SLICE as usize * WORDS_PER_CHUNK,
            lane,
            pairs: SliceBlock::stored(words, scale).decode::<DenseCodec>(),
        }
    }
}

/// [`store_decoded_block`] for two lanes that hold the two blocks of one row that share the
/// operand's 16-byte chunks (blocks `b` and `b + 2` of an aligned group of four, words `w` and
/// `w + 1` of every chunk of one slice; lanes `l` and `l ^ 2`, the upper holding the odd word):
/// the partners exchange half their pairs, and each writes 8 bytes of every other chunk, the
/// lower lane the even chunks and the upper the odd ones, so that one store instruction covers
/// 16 bytes of each 32-byte sector the pair touches (eight 4-byte stores a lane before: a
/// quarter of a sector each). The same words at the same places, bit for bit.
///
/// # Safety
/// As [`store_decoded_block`] for both lanes; every lane of `members` (the lanes executing this
/// together) calls it with its partner also in `members`.
#[inline(always)]
pub unsafe fn store_decoded_block_pair(row: *mut u32, block: u32, words: [u32; 2], scale: u8, members: u32) {
    let DecodedBlock { line, lane, pairs } = DecodedBlock::new(block, words, scale);
    let upper = lane % 2 == 1;
    let word = (lane & !1) as usize;
    for round in 0..CHUNKS_PER_SLICE as usize / 2 {
        let (even, odd) = (2 * round, 2 * round + 1);
        let got = warp::shuffle_xor_among(if upper { pairs[even] } else { pairs[odd] }, 2, members);
        let (chunk, halves) = if upper {
            (odd, [got, pairs[odd]])
        } else {
            (even, [pairs[even], got])
        };
        // SAFETY: words `word`, `word + 1` of chunk `chunk` of the block's slice, inside the row
        // (the caller's contract), 8-byte aligned.
        unsafe { mem::st_global_v2_b32(row.add(line + chunk * WORDS_PER_CHUNK + word), halves) };
    }
}

/// Stores the decoded slices of a warp's 32 consecutive items (lane `i` holds item `first + i`'s
/// [`decode_slice_chunks`]; item `j`'s 128 bytes at `out + 128·j`), those of the lanes `i` for
/// which `written(i)` holds. After a transpose among each 8 lanes ([`transpose_chunks_of_8_lanes`])
/// every store instruction writes 4 whole 128-byte lines; stored straight from each thread,
/// every store instruction wrote 16 bytes of each of 32 lines and the writers were L2-bound
/// (12 µs for the pre-decoder at M = 512, K = 7168). Staging in shared memory instead halved
/// that, but cost the small dense shapes ≈ 1–2 µs, likely through the shared-memory carve-out
/// change between the pre-decoder and the GEMMs.
///
/// # Safety
/// All 32 lanes call it together (warp-uniform control flow); `out + 128·(first + i)` is
/// writable and 16-byte aligned for every lane `i` that `written` names.
#[inline(always)]
pub unsafe fn store_warp_slices(
    out: *mut u32,
    first: u32,
    lane: u32,
    mut chunks: [[u32; 4]; CHUNKS_PER_SLICE as usize],
    written: impl Fn(u32) -> bool,
) {
    transpose_chunks_of_8_lanes(&mut chunks, lane);
    // Lane 8g + i now holds chunk i of the warp's items 8g .. 8g + 7; round r stores item
    // 8g + r's chunk.
    let group_first = lane / 8 * 8;
    let chunk = (lane % 8) as usize;
    for (r, words) in chunks.iter().enumerate() {
        let slot = group_first + r as u32;
        if written(slot) {
            let item = (first + slot) as usize;
            // SAFETY: the contract above.
            unsafe {
                mem::st_global_v4_b32(out.add(item * 4 * CHUNKS_PER_SLICE as usize + 4 * chunk), *words)
            };
        }
    }
}

/// Transposes the 16-byte chunks of each group of 8 lanes: before, slot `j` of lane `8g + i`
/// holds chunk `j` of its own item `8g + i`; after, chunk `i` of item `8g + j`. Three
/// butterfly exchanges (lane bits 1, 2, 4), each moving half of a lane's chunks; every index is
/// a constant, so the chunks stay in registers.
#[inline(always)]
fn transpose_chunks_of_8_lanes(chunks: &mut [[u32; 4]; CHUNKS_PER_SLICE as usize], lane: u32) {
    // Literal chunk indices (a computed index would need a bounds check, or local memory).
    macro_rules! exchange {
        ($mask:literal: $(($low:literal, $high:literal))*) => {{
            let upper = lane & $mask != 0;
            $(for w in 0..4 {
                // The upper lane of a pair sends its low chunk and receives the partner's high
                // one into it; the lower lane the other way round.
                let send = if upper { chunks[$low][w] } else { chunks[$high][w] };
                let got = warp::shuffle_xor(send, $mask);
                if upper {
                    chunks[$low][w] = got;
                } else {
                    chunks[$high][w] = got;
                }
            })*
        }};
    }
    exchange!(1: (0, 1) (2, 3) (4, 5) (6, 7));
    exchange!(2: (0, 2) (1, 3) (4, 6) (5, 7));
    exchange!(4: (0, 4) (1, 5) (2, 6) (3, 7));
}

macro_rules! predecode_entry {
    ($name:ident) => {
        /// Decodes an NVFP4 token matrix into the operand format above: `out` row `r`
        /// ([`padded_k`]`(k)` fp16) holds its `j`-th 64-K slice at bytes `128·j .. 128·j + 128`, zeros
        /// past K. One thread per (row, slice), grid-stride by whole warps; the threads of a slice pair
        /// (`2h`, `2h + 1`) read the interleaved halves of the same 64 packed bytes. A warp's 32 items
        /// are 4 KiB of `out` in one piece, stored by [`store_warp_slices`] in whole lines. It lets the dual GEMM that follows start early
        /// (programmatic dependent launch) and, should it be launched that way itself, waits for the
        /// previous kernel before it touches memory.
        ///
        /// # Safety
        /// `data`: `rows × k/2` bytes, 16-byte aligned; `scales`: the blocked layout of `rows × k/16`
        /// codes, 4-byte aligned; `out`: `rows × padded_k(k)` fp16, 16-byte aligned; `k` a positive
        /// multiple of [`crate::sm90::config::K_MULTIPLE`] with `rows · padded_k(k) / 64 < 2^31`; a
        /// block size that is a multiple of 32.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: PredecodeArgs) {
            let PredecodeArgs {
                data,
                scales,
                out,
                rows,
                k,
            } = args;
            let slices_per_row = padded_k(k) / K_PER_SLICE;
            if slices_per_row == 0 {
                return; // never with a valid launch; also proves the divisions cannot panic
            }
            fence::launch_dependents();
            fence::grid_dependency_wait();
            let layout = BlockedScales::new(rows as usize, k as usize);
            let total = rows * slices_per_row;
            let lane = sreg::thread_idx_x() % 32;
            let stride = sreg::grid_dim_x() * sreg::block_dim_x();
            // The warp's first item: the loop runs warp-uniformly (every lane takes the shuffles).
            let mut first = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x() - lane;
            while first < total {
                let item = first + lane;
                let mut chunks = [[0u32; 4]; CHUNKS_PER_SLICE as usize];
                if item < total {
                    let (row, slice) = (item / slices_per_row, item % slices_per_row);
                    // SAFETY: the contract above.
                    chunks = unsafe {
                        decode_slice_chunks::<DenseCodec>(
                            data.add(row as usize * (k as usize / 2)),
                            scales,
                            layout,
                            row as usize,
                            k,
                            slice,
                        )
                    };
                }
                // SAFETY: the contract above: the written items (those below `total`) are inside `out`.
                unsafe { store_warp_slices(out, first, lane, chunks, |slot| first + slot < total) };
                first += stride;
            }
        }
    };
}

registry::predecode_tokens_entry!(predecode_entry);
