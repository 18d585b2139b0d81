//! Element-wise `out = silu(gate) · up` on fp16 or bf16 vectors: the epilogue of the unfused
//! baseline (two library GEMMs, then this kernel) that benchmarks compare against.
//!
//! One thread per 8 elements (16-byte loads and stores) in a grid-stride loop; math in f32 with
//! the same SiLU as the fused kernels. Parameters: `gate`, `up`, `out` (16-byte aligned), `len`
//! (a multiple of 8).

use crate::common::SiluMulArgs;
use crate::epilogue::silu;
use crate::ptx::{cvt, mem, sreg};
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
