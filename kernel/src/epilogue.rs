//! Epilogue math and output formats shared by every kernel (device only): the SwiGLU
//! activation, the 16-bit output rounding (fp16 or bf16), and the NVFP4 output of a tile ([`Nvfp4Tile`]), which GEMM epilogues write
//! instead of fp16 so that the next GEMM's activations need no quantization pass.

use crate::common::{NVFP4_TILE_COLUMNS, nvfp4_staging_chunk};
use crate::layout::{ATOM_ROWS, ATOM_SCALE_COLS, BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{cvt, float, mem, smem, warp};
use crate::quantize::{encode_f16_block, store_decoded};

/// A 16-bit output value: `x` rounded to nearest even in bf16 if `bf16`, else in fp16 (a
/// constant of each entry: a run-time choice spilled the register-tight tiles, perf log entry
/// 47).
#[inline(always)]
pub fn half_bits(x: f32, bf16: bool) -> u16 {
    if bf16 {
        cvt::f32_to_bf16_rn(x)
    } else {
        cvt::f32_to_f16_rn(x)
    }
}

/// `x / (1 + 2^(−x·log2 e))` with the approximate exp2 and reciprocal: relative error ≈ 1e-6,
/// far below the task's 1e-3 (fp16 rounding alone takes 4.9e-4). Large negative x gives −0,
/// large positive x gives x, NaN stays NaN.
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x * cvt::rcp_approx(1.0 + cvt::exp2_approx(-x * core::f32::consts::LOG2_E))
}

/// The gated epilogues' `silu(α_gate · gate) · (α_up · up)` with a tile's constants folded:
/// `gate · up / ((1 + 2^(−α_gate · log2 e · gate)) / (α_gate · α_up))`, the divisor one fused
/// multiply-add — six instructions a value where [`silu`] and the two scalings take eight (the
/// tiled epilogues are bound by their instructions' issue: two more a value on half the values
/// cost Qwen3-30B-A3B's prefill 2 %).
///
/// The divisor needs `1 / (α_gate · α_up)` as a normal f32: the ops reject scales whose product
/// passes [`crate::common::GATED_ALPHA_PRODUCT_LIMIT`]. Scales read from device memory are not
/// checked; past the limit the reciprocal is held at the smallest normal f32, so that zero sums
/// still give zeros (never `0 · ∞`) and other values come out smaller than they should, by the
/// product's excess over the limit. The exponent's constant is held at `−f32::MAX` (past
/// `α_gate = f32::MAX / log2 e` it would be `−∞`, and `−∞ · 0` NaN): any non-zero sum saturates
/// `2^x` either way, the smallest being `2⁻⁴⁸` on sm_90a and `2⁻²⁰` on sm_100f.
#[derive(Clone, Copy)]
pub struct GatedProduct {
    /// `−α_gate · log2 e`, at least `−f32::MAX`.
    exponent: f32,
    /// `1 / (α_gate · α_up)`, at least the smallest normal f32.
    inverse: f32,
}

impl GatedProduct {
    /// The constants of a tile whose sums are scaled by `alpha_gate` and `alpha_up`.
    #[inline(always)]
    pub fn new(alpha_gate: f32, alpha_up: f32) -> Self {
        Self {
            exponent: f32::max(-alpha_gate * core::f32::consts::LOG2_E, -f32::MAX),
            inverse: f32::max(cvt::rcp_approx(alpha_gate * alpha_up), f32::MIN_POSITIVE),
        }
    }

    /// `silu(α_gate · gate) · (α_up · up)` of one output's two sums.
    #[inline(always)]
    pub fn value(self, gate: f32, up: f32) -> f32 {
        let e = cvt::exp2_approx(self.exponent * gate);
        (gate * up) * cvt::rcp_approx(float::fma_rn(e, self.inverse, self.inverse))
    }
}

/// Scale blocks of a full NVFP4 tile's token row.
pub const NVFP4_TILE_BLOCKS: u32 = NVFP4_TILE_COLUMNS / SCALE_BLOCK_K as u32;
const _: () = assert!(
    NVFP4_TILE_BLOCKS as usize == ATOM_SCALE_COLS,
    "a tile's blocks fill one scale-atom word"
);

/// Where one tile's outputs go as NVFP4: [`NVFP4_TILE_COLUMNS`] outputs (four scale blocks, one
/// word of the scale layout) of `tokens` token rows, quantized along the outputs with the GPU
/// quantizer's block arithmetic (`crate::quantize::encode_block`) from the values rounded to
/// fp16, so that the result is bit for bit `quantize(fp16 output, global_scale)`.
///
/// Two steps, with a barrier of the participating threads between them: every thread
/// [`Nvfp4Tile::stage`]s its fp16 values into shared memory (any lane layout), then
/// [`Nvfp4Tile::encode`] hands each thread whole 16-value blocks: one thread per block
/// computes its scale (no value is encoded twice, no cross-lane amax), writes its 8 data bytes
/// and its scale byte, and the threads zero the scale layout's padding rows of the tile's
/// columns.
#[derive(Clone, Copy)]
pub struct Nvfp4Tile {
    /// The packed byte of the tile's first token row and first output.
    pub data: *mut u8,
    /// Bytes between token rows of the packed data (N / 2).
    pub data_pitch: u32,
    /// The scale layout's first byte (a matrix's, or a group's first 128-row block).
    pub scales: *mut u8,
    /// The scale layout (rows × N).
    pub layout: BlockedScales,
    /// The layout row of the tile's first token.
    pub scale_row: u32,
    /// The scale column of the tile's first output (a multiple of four for a full tile).
    pub first_block: u32,
    /// Scale blocks of a token row the tile covers: [`NVFP4_TILE_BLOCKS`] (a full tile), or
    /// fewer for a narrower one (the whole-K decode-size kernel's 16 outputs: one).
    pub blocks: u32,
    /// Token rows of the tile that exist.
    pub tokens: u32,
    /// Layout rows this tile writes as zero scales (padding past the last token of the
    /// layout; empty for every tile but the last token tile).
    pub padding: (u32, u32),
    /// The output's global scale (values ≈ e2m1 · scale · `global_scale`).
    pub global_scale: f32,
    /// The output's sm_90a decoded token operand (row 0 of the matrix whose rows are the
    /// layout's; `crate::sm90::tokens`), written beside the NVFP4 data for the dense GEMM that
    /// reads it next; null: not written.
    pub decoded: *mut u32,
    /// Words between rows of `decoded`.
    pub decoded_pitch: u32,
}

impl Nvfp4Tile {
    /// The padding rows of a layout of `rows` rows for the tile holding rows `first..first +
    /// tokens`: the rows past `rows` in its last 128-row block when the tile holds the last row.
    #[inline(always)]
    pub fn padding_rows(rows: u32, first: u32, tokens: u32) -> (u32, u32) {
        if first + tokens >= rows {
            (rows, rows.next_multiple_of(ATOM_ROWS as u32))
        } else {
            (0, 0)
        }
    }

    /// Byte offset of output `column` of token row `token` in the staging. The swizzle repeats
    /// every 8 rows: `staging_offset(token + 8·j, column) = staging_offset(token, column) +
    /// 8·j·NVFP4_STAGING_PITCH`.
    #[inline(always)]
    pub fn staging_offset(token: u32, column: u32) -> u32 {
        nvfp4_staging_chunk(token, column / 8) + 2 * (column % 8)
    }

    /// Writes `value`, rounded to fp16 as the fp16 epilogue stores it, at shared address `at`
    /// of a staging ([`Nvfp4Tile::staging_offset`] of an existing token row and output <
    /// [`NVFP4_TILE_COLUMNS`]).
    ///
    /// # Safety
    /// The staging holds `nvfp4_staging_bytes(tokens)` bytes of shared memory, 16-byte aligned,
    /// the threads' own (no other role writes them until they are done), not read before the
    /// barrier that ends the staging step.
    #[inline(always)]
    pub unsafe fn stage_at(at: u32, value: f32) {
        // SAFETY: inside the staging (caller).
        unsafe { smem::st_b16(at, cvt::f32_to_f16_rn(value)) };
    }

    /// [`Nvfp4Tile::stage_at`] of output `column` of token row `token` of the staging at
    /// `staging`.
    ///
    /// # Safety
    /// As [`Nvfp4Tile::stage_at`].
    #[inline(always)]
    pub unsafe fn stage(staging: u32, token: u32, column: u32, value: f32) {
        // SAFETY: forwarded.
        unsafe { Self::stage_at(staging + Self::staging_offset(token, column), value) };
    }

    /// Encodes the staged tile: thread `thread` of `threads` takes blocks `thread`, `thread +
    /// threads`, … (token-major, `blocks` per token), then padding rows likewise.
    ///
    /// # Safety
    /// Every value of the tile's existing tokens was staged, and the stores made visible by a
    /// barrier of the participating threads; the addresses describe memory of the output
    /// matrix's shape (data `rows × N/2` bytes, scales the whole layout).
    #[inline(always)]
    pub unsafe fn encode(&self, staging: u32, thread: u32, threads: u32) {
        let blocks = self.tokens * self.blocks;
        let mut item = thread;
        while item < blocks {
            let (token, block) = (item / self.blocks, item % self.blocks);
            // A block is two chunks.
            let at = |half: u32| staging + nvfp4_staging_chunk(token, 2 * block + half);
            // SAFETY: the staged block (caller), then its bytes and scale in the output.
            unsafe {
                let raw = [smem::ld_v4(at(0)), smem::ld_v4(at(1))];
                let (scale, words) = encode_f16_block(raw, self.global_scale);
                let data = self
                    .data
                    .add(token as usize * self.data_pitch as usize + block as usize * SCALE_BLOCK_K / 2);
                mem::st_global_v2_b32(data as *mut u32, words);
                let scale_at = self
                    .layout
                    .offset_u32(self.scale_row + token, self.first_block + block);
                mem::st_global_b8(self.scales.add(scale_at as usize), scale);
                let row = self.scale_row + token;
                // A full tile's lanes `l` and `l ^ 2` hold blocks `b`, `b + 2` of one row (items
                // token-major, four a row; `thread` and `threads` multiples of 32).
                let partners = (self.blocks == NVFP4_TILE_BLOCKS).then(warp::active_lanes);
                store_decoded(
                    self.decoded,
                    self.decoded_pitch,
                    row,
                    self.first_block + block,
                    words,
                    scale,
                    partners,
                );
            }
            item += threads;
        }
        let (first, end) = self.padding;
        let mut row = first + thread;
        while row < end {
            if self.blocks == NVFP4_TILE_BLOCKS {
                // SAFETY: a padding row of the layout: one word holds the tile's four columns.
                unsafe {
                    let at = self.layout.offset_u32(row, self.first_block);
                    mem::st_global_b32(self.scales.add(at as usize) as *mut u32, 0);
                }
            } else {
                for block in 0..self.blocks {
                    // SAFETY: a padding row's scale byte of one of the tile's columns.
                    unsafe {
                        let at = self.layout.offset_u32(row, self.first_block + block);
                        mem::st_global_b8(self.scales.add(at as usize), 0);
                    }
                }
            }
            row += threads;
        }
    }
}
