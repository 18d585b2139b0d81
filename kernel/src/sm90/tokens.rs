//! The token operand of the sm_90a dual GEMM, and the kernel that pre-decodes it for large
//! token tiles.
//!
//! One token's 64-K slice `j` of a 256-K stage is 128 bytes of fp16, each value
//! `e2m1 · scale · 2⁻¹⁴` (exact), in the K order of the weights' register fragments: 16-byte
//! chunk `p` holds pair `p` ([`crate::fp4::PAIR_ELEMENTS`]) of the stage's scale blocks
//! [`config::stage_block`]`(j, w)` in words `w = 0..3`, one fp16x2 each. Two writers produce it:
//! * the decoder warpgroups of the dual-GEMM kernel, for token tiles below
//!   [`config::PREDECODED_MIN_TOKENS`], into 128-byte-swizzled shared memory;
//! * [`nvfp4_predecode_tokens_sm90`], once per call for larger tiles, into a row-major global
//!   buffer (`rows × k` fp16) that the kernel's producer loads with TMA and the same swizzle.
//!   Large tiles would otherwise decode every token once per 64-output tile: measured on an
//!   H200, skipping that decode made the 128-token kernel 16–24 % faster.

use crate::fp4::e2m1x8_to_f16x2_pairs;
use crate::layout::BlockedScales;
use crate::ptx::{cvt, fence, mem, sreg};
use crate::sm90::config::{self, BLOCKS_PER_STAGE, K_PER_SLICE, K_PER_STAGE, SLICES_PER_STAGE, stage_block};

/// 16-byte chunks of one token's decoded slice (128 bytes of fp16, one swizzle row).
pub const CHUNKS_PER_SLICE: u32 = 2 * K_PER_SLICE / 16;

/// The eight fp16x2 pairs of one 16-element scale block (`lo` = elements 0..7, `hi` = 8..15),
/// each `e2m1 · scale · 2⁻¹⁴`, in [`crate::fp4::PAIR_ELEMENTS`] order; `scale` is the block's
/// e4m3 scale as fp16 in both halves. Both operands decode through this one function: the
/// weights into register fragments, the tokens into the slices above (pair `p` of word `w`'s
/// block is word `w` of chunk `p`).
#[inline(always)]
pub fn scaled_pairs(lo: u32, hi: u32, scale: u32) -> [u32; 8] {
    let (a, b) = (e2m1x8_to_f16x2_pairs(lo), e2m1x8_to_f16x2_pairs(hi));
    let mut out = [0u32; 8];
    for i in 0..4 {
        out[i] = cvt::mul_f16x2(a[i], scale);
        out[4 + i] = cvt::mul_f16x2(b[i], scale);
    }
    out
}

/// Decodes an NVFP4 token matrix into the operand format above: `out` row `r` holds its
/// `j`-th 64-K slice (slice `j % 4` of stage `j / 4`) at bytes `128·j .. 128·j + 128`. One
/// thread per (row, slice), grid-stride; the threads of a slice pair (`2h`, `2h + 1`) read the
/// interleaved halves of the same 64 packed bytes. It lets the dual GEMM that follows start
/// early (programmatic dependent launch) and, should it be launched that way itself, waits for
/// the previous kernel before it touches memory.
///
/// # Safety
/// `data`: `rows × k/2` bytes, 16-byte aligned; `scales`: the blocked layout of `rows × k/16`
/// codes, 4-byte aligned; `out`: `rows × k` fp16, 16-byte aligned; `k` a positive multiple of
/// [`K_PER_STAGE`] with `rows · k / 64 < 2^31`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn nvfp4_predecode_tokens_sm90(
    data: *const u8,
    scales: *const u8,
    out: *mut u32,
    rows: u32,
    k: u32,
) {
    let slices_per_row = k / K_PER_SLICE;
    if slices_per_row == 0 {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    fence::launch_dependents();
    fence::grid_dependency_wait();
    let layout = BlockedScales::new(rows as usize, k as usize);
    let total = rows * slices_per_row;
    let stride = sreg::grid_dim_x() * sreg::block_dim_x();
    let mut item = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    while item < total {
        let (row, slice) = (item / slices_per_row, item % slices_per_row);
        let (stage, j) = (slice / SLICES_PER_STAGE, slice % SLICES_PER_STAGE);
        let stage_bytes = row as usize * (k as usize / 2) + stage as usize * (K_PER_STAGE as usize / 2);
        let blocks: [[u32; 8]; 4] = core::array::from_fn(|w| {
            let block = stage_block(j, w as u32);
            let column = (stage * BLOCKS_PER_STAGE + block) as usize;
            // SAFETY: the contract above: block `block` of this row's stage is 8 bytes inside
            // `data` (8-byte aligned), and the word holding its scale code (4-aligned, the
            // atom's 4 codes of this row) is inside `scales`.
            unsafe {
                let [lo, hi] =
                    mem::ld_global_nc_v2_b32(data.add(stage_bytes + 8 * block as usize) as *const u32);
                let codes =
                    mem::ld_global_nc_b32(scales.add(layout.offset(row as usize, column & !3)) as *const u32);
                scaled_pairs(lo, hi, cvt::e4m3_byte_to_f16x2_broadcast(codes, block % 4))
            }
        });
        // SAFETY: `out` holds rows × k fp16: this item's 128 bytes are inside it, 16-aligned.
        unsafe {
            let dst = out.add(item as usize * CHUNKS_PER_SLICE as usize * 4);
            for pair in 0..CHUNKS_PER_SLICE as usize {
                let chunk = [blocks[0][pair], blocks[1][pair], blocks[2][pair], blocks[3][pair]];
                mem::st_global_v4_b32(dst.add(4 * pair), chunk);
            }
        }
        item += stride;
    }
}
