//! Bit tricks that turn e2m1 (fp4) codes into fp16 without lookup tables.
//!
//! An e2m1 code is `s e1 e0 m`: sign, a 2-bit exponent with bias 1, one mantissa bit, so the
//! magnitudes of codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6. Shift the low three bits left by 9
//! and they land on the two low exponent bits and the top mantissa bit of an fp16:
//!
//! * `e > 0`: the fp16 is `2^(e − 15)·(1 + m/2)` = `2^−14 · 2^(e − 1)·(1 + m/2)` = `2^−14 · e2m1`;
//! * `e = 0`: the fp16 is subnormal, `m·2^9 · 2^−24` = `2^−14 · (m · 0.5)` = `2^−14 · e2m1`.
//!
//! So `((c & 8) << 12) | ((c & 7) << 9)` is exactly `e2m1(c) · 2^−14` in fp16 for all 16 codes,
//! signs and both zeros included; multiplying by [`E2M1_F16_RESCALE`] (exact) restores the value.

/// Factor that undoes the `2^−14` of [`e2m1_to_f16_bits_scaled`]: `2^14`.
pub const E2M1_F16_RESCALE: f32 = 16384.0;

/// fp16 bit pattern of `e2m1(code) · 2^−14` for the 4-bit code in the low nibble of `code`.
#[inline(always)]
pub const fn e2m1_to_f16_bits_scaled(code: u32) -> u16 {
    (((code & 0x8) << 12) | ((code & 0x7) << 9)) as u16
}
