//! Element-wise kernels on fp16 / bf16 rows, one thread per 8 values (16-byte loads and
//! stores) in a grid-stride loop, math in f32:
//! * `out = silu(gate) · up` on vectors: the epilogue of the unfused baseline (two library
//!   GEMMs, then this kernel) that benchmarks compare against, with the fused kernels' SiLU.
//!   Parameters: `gate`, `up`, `out` (16-byte aligned), `len` (a multiple of 8).
//! * the Mixture-of-Experts combine ([`CombineArgs`]): each token's router-weighted sum of its
//!   experts' fp16 output rows, gathered from the grouped GEMM's expert-sorted rows; each
//!   thread adds its 8 values of the token's slots in slot order (deterministic, no atomics).

use crate::common::{COMBINE_WEIGHTS_BF16, COMBINE_WEIGHTS_F16, CombineArgs, SiluMulArgs};
use crate::epilogue::silu;
use crate::ptx::{cvt, float, mem, sreg};
use crate::registry;

/// Widens and narrows one 16-bit element type.
trait Element {
    fn widen(bits: u32) -> f32;
    fn narrow(x: f32) -> u16;
}

struct F16;
impl Element for F16 {
    #[inline(always)]
    fn widen(bits: u32) -> f32 {
        cvt::f16_to_f32(bits as u16)
    }
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        cvt::f32_to_f16_rn(x)
    }
}

struct Bf16;
impl Element for Bf16 {
    #[inline(always)]
    fn widen(bits: u32) -> f32 {
        f32::from_bits((bits & 0xFFFF) << 16)
    }
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        cvt::f32_to_bf16_rn(x)
    }
}

#[inline(always)]
unsafe fn silu_mul<E: Element>(gate: *const u32, up: *const u32, out: *mut u32, len: u32) {
    let vectors = len / 8;
    let stride = sreg::grid_dim_x() * sreg::block_dim_x();
    let mut v = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    while v < vectors {
        let offset = 4 * v as usize;
        // SAFETY: v < len / 8, so the 16 bytes at `offset` words are inside every buffer.
        unsafe {
            let (g, u) = (
                mem::ld_global_nc_v4_b32(gate.add(offset)),
                mem::ld_global_nc_v4_b32(up.add(offset)),
            );
            let mut r = [0u32; 4];
            for i in 0..4 {
                let lo = silu(E::widen(g[i])) * E::widen(u[i]);
                let hi = silu(E::widen(g[i] >> 16)) * E::widen(u[i] >> 16);
                r[i] = E::narrow(lo) as u32 | (E::narrow(hi) as u32) << 16;
            }
            mem::st_global_v4_b32(out.add(offset), r);
        }
        v += stride;
    }
}

macro_rules! silu_mul_entries {
    ($($element:ident $name:ident;)*) => {$(
        /// `out = silu(gate) · up` on fp16 or bf16 vectors, as the entry's name says (see the
        /// module doc).
        ///
        /// # Safety
        /// Pointers and `len` must satisfy the module doc's contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: SiluMulArgs) {
            let SiluMulArgs { gate, up, out, len } = args;
            // SAFETY: forwarded contract.
            unsafe { silu_mul::<$element>(gate, up, out, len) }
        }
    )*};
}

registry::silu_mul_entries!(silu_mul_entries);

/// Slots of a token whose rows one thread loads before it adds any of them.
const COMBINE_SLOTS_IN_FLIGHT: usize = 4;

/// The combine (see [`CombineArgs`]) into `E` values.
///
/// # Safety
/// The buffers of [`CombineArgs`] with its sizes; `tokens · top_k` and `tokens · width / 8`
/// below 2³¹.
#[inline(always)]
unsafe fn combine<E: Element>(args: CombineArgs) {
    let CombineArgs {
        rows,
        sources,
        weights,
        out,
        row_count,
        tokens,
        top_k,
        width,
        weight_format,
    } = args;
    // SAFETY (all three): slot `at`'s weight, inside `weights` (the caller's index).
    let weight_of = |at: usize| unsafe {
        match weight_format {
            COMBINE_WEIGHTS_F16 => {
                F16::widen(mem::ld_global_nc_u16(weights.add(2 * at) as *const u16) as u32)
            }
            COMBINE_WEIGHTS_BF16 => {
                Bf16::widen(mem::ld_global_nc_u16(weights.add(2 * at) as *const u16) as u32)
            }
            _ => f32::from_bits(mem::ld_global_nc_b32(weights.add(4 * at) as *const u32)),
        }
    };
    let vectors_per_row = width / 8;
    if vectors_per_row == 0 {
        return; // never with a valid launch; also proves the divisions cannot panic
    }
    let words_per_row = (width / 2) as usize;
    let total = tokens * vectors_per_row;
    let stride = sreg::grid_dim_x() * sreg::block_dim_x();
    let mut v = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    while v < total {
        let (token, vector) = (v / vectors_per_row, v % vectors_per_row);
        let mut sum = [0f32; 8];
        let mut first = 0;
        while first < top_k {
            // The slots' sources first, then up to COMBINE_SLOTS_IN_FLIGHT rows at once (each
            // row load waits only for its own source); a missing slot adds 0 · 0.
            let mut source = [u32::MAX; COMBINE_SLOTS_IN_FLIGHT];
            for (i, source) in source.iter_mut().enumerate() {
                let slot = first + i as u32;
                if slot < top_k {
                    // SAFETY: token · top_k + slot < tokens · top_k.
                    *source = unsafe {
                        mem::ld_global_nc_b32(sources.add((token * top_k + slot) as usize) as *const u32)
                    };
                }
            }
            let mut weight = [0f32; COMBINE_SLOTS_IN_FLIGHT];
            let mut values = [[0u32; 4]; COMBINE_SLOTS_IN_FLIGHT];
            for i in 0..COMBINE_SLOTS_IN_FLIGHT {
                if source[i] < row_count {
                    let at = (token * top_k + first) as usize + i;
                    // SAFETY: the slot exists (a missing one kept u32::MAX); its source names a
                    // row of `rows`, whose vector `vector` is inside it.
                    weight[i] = weight_of(at);
                    unsafe {
                        values[i] = mem::ld_global_nc_v4_b32(
                            rows.add(source[i] as usize * words_per_row + 4 * vector as usize),
                        );
                    }
                }
            }
            for i in 0..COMBINE_SLOTS_IN_FLIGHT {
                for (w, word) in values[i].iter().enumerate() {
                    sum[2 * w] = float::fma_rn(weight[i], F16::widen(*word), sum[2 * w]);
                    sum[2 * w + 1] = float::fma_rn(weight[i], F16::widen(*word >> 16), sum[2 * w + 1]);
                }
            }
            first += COMBINE_SLOTS_IN_FLIGHT as u32;
        }
        let packed: [u32; 4] =
            core::array::from_fn(|w| E::narrow(sum[2 * w]) as u32 | (E::narrow(sum[2 * w + 1]) as u32) << 16);
        // SAFETY: token < tokens: the vector is inside `out`'s row.
        unsafe {
            mem::st_global_v4_b32(
                out.add(token as usize * words_per_row + 4 * vector as usize),
                packed,
            )
        };
        v += stride;
    }
}

macro_rules! combine_entries {
    ($($element:ident $name:ident;)*) => {$(
        /// The Mixture-of-Experts combine of fp16 expert rows into the output type the entry's
        /// name says (see [`CombineArgs`]).
        ///
        /// # Safety
        /// The buffers and sizes of [`CombineArgs`]; `tokens · top_k` and `tokens · width / 8`
        /// below 2³¹.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: CombineArgs) {
            // SAFETY: forwarded contract.
            unsafe { combine::<$element>(args) }
        }
    )*};
}

registry::combine_entries!(combine_entries);
