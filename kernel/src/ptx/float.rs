//! f32 arithmetic that Rust's `core` does not offer without `std` (`fma`).

use core::arch::asm;

/// `fma.rn.f32`: `a·b + c` with one rounding (to nearest even).
#[inline(always)]
pub fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
    let d: f32;
    // SAFETY: pure register arithmetic.
    unsafe {
        asm!(
            "fma.rn.f32 {d}, {a}, {b}, {c};",
            d = out(reg32) d,
            a = in(reg32) a,
            b = in(reg32) b,
            c = in(reg32) c,
            options(pure, nomem, nostack),
        )
    };
    d
}
