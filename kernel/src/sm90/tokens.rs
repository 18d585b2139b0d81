//! The token operand of the sm_90a dual GEMM, and the kernel that pre-decodes it for large
//! token tiles.
//!
//! One token's 64-K slice is 128 bytes of fp16, each value `e2m1 · scale · 2⁻¹⁴` (exact), in
//! the K order of the weights' register fragments: 16-byte chunk `p` holds pair `p`
//! ([`crate::fp4::PAIR_ELEMENTS`]) of the slice's scale blocks 0..3, one fp16x2 each. Two
//! writers produce it:
//! * the decoder warpgroups of the dual-GEMM kernel, for token tiles below
//!   [`config::PREDECODED_MIN_TOKENS`], into 128-byte-swizzled shared memory;
//! * [`nvfp4_predecode_tokens_sm90`], once per call for larger tiles, into a row-major global
//!   buffer (`rows × k` fp16) that the kernel's producer loads with TMA and the same swizzle.
//!   Large tiles would otherwise decode every token once per 64-output tile: measured on an
//!   H200, skipping that decode made the 128-token kernel 16–24 % faster.

use crate::fp4::e2m1x8_to_f16x2_pairs;
use crate::layout::BlockedScales;
use crate::ptx::{cvt, fence, mem, sreg};
use crate::sm90::config::{self, K_PER_SLICE};

/// Packed fp4 bytes of one token's 64-K slice.
const SLICE_BYTES: usize = K_PER_SLICE as usize / 2;
/// 16-byte chunks of one token's decoded slice (128 bytes of fp16, one swizzle row).
pub const CHUNKS_PER_SLICE: u32 = 2 * K_PER_SLICE / 16;

/// The eight fp16x2 pairs of one 16-element scale block (`lo` = elements 0..7, `hi` = 8..15),
/// each `e2m1 · scale · 2⁻¹⁴`, in [`crate::fp4::PAIR_ELEMENTS`] order; `scale` is the block's
/// e4m3 scale as fp16 in both halves. Both operands decode through this one function: the
/// weights into register fragments, the tokens into the slices above (pair `p` of block `b` is
/// word `b` of chunk `p`).
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

/// Decodes an NVFP4 token matrix into the operand format above: `out` row `r` holds slice `j`
/// at bytes `128·j .. 128·j + 128`. One thread per (row, slice), grid-stride. It lets the dual
/// GEMM that follows start early (programmatic dependent launch) and, should it be launched that
/// way itself, waits for the previous kernel before it touches memory.
///
/// # Safety
/// `data`: `rows × k/2` bytes, 16-byte aligned; `scales`: the blocked layout of `rows × k/16`
/// codes, 4-byte aligned; `out`: `rows × k` fp16, 16-byte aligned; `k` a positive multiple of
/// [`K_PER_SLICE`] with `rows · k / 64 < 2^31`.
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
        // SAFETY: the contract above: (row, slice) indexes 32 data bytes, 4 scale bytes (blocks
        // 4·slice .. 4·slice + 3 of the row, contiguous and 4-aligned in an atom) and 128 output
        // bytes inside their buffers.
        unsafe {
            let src = data.add(item as usize * SLICE_BYTES) as *const u32;
            let (lo, hi) = (
                mem::ld_global_nc_v4_b32(src),
                mem::ld_global_nc_v4_b32(src.add(4)),
            );
            let words = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
            let codes = mem::ld_global_nc_b32(
                scales.add(layout.offset(row as usize, (slice * config::BLOCKS_PER_SLICE) as usize))
                    as *const u32,
            );
            let blocks: [[u32; 8]; 4] = core::array::from_fn(|b| {
                let scale = cvt::e4m3_byte_to_f16x2_broadcast(codes, b as u32);
                scaled_pairs(words[2 * b], words[2 * b + 1], scale)
            });
            let dst = out.add(item as usize * CHUNKS_PER_SLICE as usize * 4);
            for pair in 0..CHUNKS_PER_SLICE as usize {
                let chunk = [blocks[0][pair], blocks[1][pair], blocks[2][pair], blocks[3][pair]];
                mem::st_global_v4_b32(dst.add(4 * pair), chunk);
            }
        }
        item += stride;
    }
}
