//! NVFP4 → fp16/bf16 dequantization kernels: `out[r·k + c] = e2m1 · scale · global_scale`.
//!
//! One thread per 16-element scale block (8 data bytes, 1 scale byte, 32 output bytes), in a
//! grid-stride loop. Memory-bound: it exists to feed cuBLAS baselines and to prove the Rust →
//! PTX → GPU pipeline. The arithmetic is fixed so that the host decoder can reproduce it bit for
//! bit: `(e2m1 · scale)` is exact in f32, then one f32 multiply by the global scale, then one
//! round-to-nearest-even to the output type.
//!
//! Kernel parameter (both entry points): [`DequantizeArgs`] — `data` (rows × k/2 bytes, 8-byte
//! aligned), `scales` (blocked layout, [`BlockedScales`]), `out` (rows × k elements, 16-byte
//! aligned), `rows`, `k` (a multiple of 16; `rows · k / 16 < 2^31`), `global_scale` (1.0 when the
//! matrix has none).

use crate::common::DequantizeArgs;
use crate::fp4::{E2M1_F16_RESCALE, e2m1_to_f16_bits_scaled};
use crate::layout::{BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{cvt, mem, sreg};
use crate::registry;

/// Rounds an f32 to the 16-bit output element type.
trait OutputElement {
    fn round(x: f32) -> u16;
}

struct F16;
impl OutputElement for F16 {
    #[inline(always)]
    fn round(x: f32) -> u16 {
        cvt::f32_to_f16_rn(x)
    }
}

struct Bf16;
impl OutputElement for Bf16 {
    #[inline(always)]
    fn round(x: f32) -> u16 {
        cvt::f32_to_bf16_rn(x)
    }
}

/// Packed fp4 bytes per scale block.
const BLOCK_BYTES: usize = SCALE_BLOCK_K / 2;

#[inline(always)]
unsafe fn dequantize<O: OutputElement>(
    data: *const u8,
    scales: *const u8,
    out: *mut u16,
    rows: u32,
    k: u32,
    global_scale: f32,
) {
    let blocks_per_row = k / SCALE_BLOCK_K as u32;
    if blocks_per_row == 0 {
        return; // also proves the divisions below cannot panic
    }
    let total_blocks = rows * blocks_per_row;
    let layout = BlockedScales::new(rows as usize, k as usize);
    let stride = sreg::grid_dim_x() * sreg::block_dim_x();
    let mut block = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    while block < total_blocks {
        let (row, col) = (block / blocks_per_row, block % blocks_per_row);
        // SAFETY: the host validated buffer lengths: `block` indexes a scale and 8 data bytes
        // inside their buffers, and 16 output elements inside `out`.
        unsafe {
            let scale_code = mem::ld_global_nc_u8(scales.add(layout.offset(row as usize, col as usize)));
            let scale = cvt::f16_to_f32(cvt::e4m3x2_to_f16x2(scale_code as u16) as u16);
            let factor = scale * E2M1_F16_RESCALE;
            let words = mem::ld_global_nc_v2_b32(data.add(block as usize * BLOCK_BYTES) as *const u32);
            let mut pairs = [0u32; 8];
            for (p, pair) in pairs.iter_mut().enumerate() {
                let byte = (words[p / 4] >> (8 * (p % 4))) & 0xFF;
                let lo = cvt::f16_to_f32(e2m1_to_f16_bits_scaled(byte)) * factor * global_scale;
                let hi = cvt::f16_to_f32(e2m1_to_f16_bits_scaled(byte >> 4)) * factor * global_scale;
                *pair = O::round(lo) as u32 | (O::round(hi) as u32) << 16;
            }
            let dst = out.add(block as usize * SCALE_BLOCK_K) as *mut u32;
            mem::st_global_v4_b32(dst, [pairs[0], pairs[1], pairs[2], pairs[3]]);
            mem::st_global_v4_b32(dst.add(4), [pairs[4], pairs[5], pairs[6], pairs[7]]);
        }
        block += stride;
    }
}

macro_rules! dequantize_entries {
    ($($element:ident $name:ident;)*) => {$(
        /// Dequantizes an NVFP4 matrix to row-major fp16 or bf16, as the entry's name says (see
        /// the module doc for the parameters).
        ///
        /// # Safety
        /// Pointers and sizes must satisfy the module doc's contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DequantizeArgs) {
            let DequantizeArgs {
                data,
                scales,
                out,
                rows,
                k,
                global_scale,
            } = args;
            // SAFETY: forwarded contract.
            unsafe { dequantize::<$element>(data, scales, out, rows, k, global_scale) }
        }
    )*};
}

registry::dequantize_entries!(dequantize_entries);
