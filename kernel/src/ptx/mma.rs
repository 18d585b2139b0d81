//! Warp-level tensor-core MMA (`mma.sync`, sm_80+).

use core::arch::asm;

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: `d = a·b + c` for one warp, A 16×16
/// fp16 (row-major fragment: `a[0]` row `g` K `2t..2t+1`, `a[1]` row `g + 8` the same K,
/// `a[2]` row `g` K `2t+8..2t+9`, `a[3]` row `g + 8` those K), B 16×8 fp16 (`b[0]` K
/// `2t..2t+1`, `b[1]` K `2t+8..2t+9`, column `g`), C/D 16×8 f32 (`c[0..2]` row `g` columns
/// `2t, 2t+1`, `c[2..4]` row `g + 8`), with `g = lane / 4`, `t = lane % 4` (PTX ISA, "Matrix
/// Fragments for mma.m16n8k16 with floating point type").
#[inline(always)]
pub fn m16n8k16_f32_f16(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
    let d: [f32; 4];
    let (mut d0, mut d1, mut d2, mut d3) = (c[0], c[1], c[2], c[3]);
    // SAFETY: register-only; every lane of the warp executes it (callers keep warps converged).
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d0,
            d1 = inout(reg32) d1,
            d2 = inout(reg32) d2,
            d3 = inout(reg32) d3,
            a0 = in(reg32) a[0],
            a1 = in(reg32) a[1],
            a2 = in(reg32) a[2],
            a3 = in(reg32) a[3],
            b0 = in(reg32) b[0],
            b1 = in(reg32) b[1],
            options(pure, nomem, nostack),
        )
    };
    d = [d0, d1, d2, d3];
    d
}
