//! SIMD integer arithmetic on the 16-bit halves of a 32-bit register.

use core::arch::asm;

/// `max.u16x2`: the larger of `a`'s and `b`'s low halves in the low half, of their high halves
/// in the high half (unsigned; sm_90+).
#[inline(always)]
pub fn max_u16x2(a: u32, b: u32) -> u32 {
    let d: u32;
    // SAFETY: pure register arithmetic.
    unsafe {
        asm!(
            "max.u16x2 {d}, {a}, {b};",
            d = out(reg32) d,
            a = in(reg32) a,
            b = in(reg32) b,
            options(pure, nomem, nostack),
        )
    };
    d
}
