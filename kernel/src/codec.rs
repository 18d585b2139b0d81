//! Scalar codecs of NVFP4: e2m1 (the fp4 data) and e4m3fn (the block scales), the one
//! definition the host quantizer and the GPU quantizer share (`no_std`, exact f32 arithmetic:
//! both give the same bits).
//!
//! * e2m1: `s e1 e0 m`, exponent bias 1, no infinities or NaN; magnitudes 0, 0.5, 1, 1.5, 2, 3,
//!   4, 6 for codes 0..7, bit 3 is the sign (code 8 is −0).
//! * e4m3fn: `s eeee mmm`, exponent bias 7, no infinities; 0x7F and 0xFF are NaN; largest finite
//!   448; subnormals `m · 2⁻⁹`.
//!
//! Encoders round to nearest with ties to even and saturate to the largest finite magnitude, as
//! NVFP4 quantizers do (the e4m3 encoder is PyTorch's `float8_e4m3fn` cast with saturation).

/// Largest finite e2m1 magnitude.
pub const E2M1_MAX: f32 = 6.0;
/// Largest finite e4m3fn magnitude.
pub const E4M3_MAX: f32 = 448.0;
/// The canonical e4m3fn NaN code.
pub const E4M3_NAN: u8 = 0x7F;

/// Magnitudes of e2m1 codes 0..7.
const E2M1_MAGNITUDES: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// Rounds `v` (`0 ≤ v < 2^23`) to the nearest integer, ties to even: adding 2^23 leaves no
/// fraction bits, so the f32 addition rounds (to nearest even) exactly there.
#[inline(always)]
fn round_ties_even_small(v: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    (v + TWO_23) - TWO_23
}

/// Decodes the e2m1 code in the low nibble of `code`.
#[inline(always)]
pub fn e2m1_to_f32(code: u8) -> f32 {
    let magnitude = E2M1_MAGNITUDES[(code & 0x7) as usize];
    if code & 0x8 != 0 { -magnitude } else { magnitude }
}

/// Encodes `x` as the nearest e2m1 code (ties to even, saturating at ±6). NaN encodes as +0:
/// callers that can see NaN must reject it first (the quantizers do).
#[inline(always)]
pub fn f32_to_e2m1(x: f32) -> u8 {
    if x.is_nan() {
        return 0;
    }
    f32_to_e2m1_not_nan(x)
}

/// [`f32_to_e2m1`] for an `x` known not to be NaN (the GPU quantizer's path, where a NaN input
/// is reported as an error instead): the same code for every other `x`, without the test.
#[inline(always)]
pub fn f32_to_e2m1_not_nan(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x8 } else { 0 };
    let a = x.abs();
    // Code c + 1 starts above midpoint c; at a midpoint the even code (mantissa bit 0) wins,
    // so even codes own both of their boundaries: the midpoints after even codes (0.25, 2.5,
    // 5.0) are exclusive, those after odd codes (0.75, 1.75, 3.5) inclusive. A binary search:
    // three comparisons, which select branch-free on the GPU.
    let high = a >= 1.75; // code ≥ 4
    let code = if high {
        if a >= 3.5 {
            if a > 5.0 { 7 } else { 6 }
        } else if a > 2.5 {
            5
        } else {
            4
        }
    } else if a >= 0.75 {
        if a > 1.25 { 3 } else { 2 }
    } else if a > 0.25 {
        1
    } else {
        0
    };
    sign | code
}

/// Decodes an e4m3fn byte exactly (NaN for 0x7F and 0xFF).
#[inline(always)]
pub fn e4m3_to_f32(code: u8) -> f32 {
    let exponent = ((code >> 3) & 0xF) as u32;
    let mantissa = (code & 0x7) as u32;
    let magnitude = if code & 0x7F == 0x7F {
        f32::NAN
    } else if exponent == 0 {
        mantissa as f32 * (1.0 / 512.0) // m · 2⁻⁹, exact
    } else {
        // (1 + m/8) · 2^(e − 7), built from its bits.
        f32::from_bits(((exponent + 127 - 7) << 23) | (mantissa << 20))
    };
    if code & 0x80 != 0 { -magnitude } else { magnitude }
}

/// Encodes `x` as the nearest e4m3fn code (ties to even, saturating at ±448; NaN → 0x7F).
#[inline(always)]
pub fn f32_to_e4m3(x: f32) -> u8 {
    if x.is_nan() {
        return E4M3_NAN;
    }
    f32_to_e4m3_not_nan(x)
}

/// [`f32_to_e4m3`] for an `x` known not to be NaN: the same code for every other `x`.
#[inline(always)]
pub fn f32_to_e4m3_not_nan(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    const MIN_NORMAL: f32 = 1.0 / 64.0; // 2⁻⁶
    let magnitude = if a >= E4M3_MAX {
        0x7E
    } else if a < MIN_NORMAL {
        // Subnormal steps of 2⁻⁹ (exact in f32); rounding up to 8 steps gives 0x08, the
        // smallest normal.
        round_ties_even_small(a * 512.0) as u8
    } else {
        // `a` is a normal f32: read its exponent and its 23 mantissa bits exactly.
        let bits = a.to_bits();
        let exponent = (bits >> 23) as i32 - 127;
        let mantissa = round_ties_even_small((bits & 0x7F_FFFF) as f32 / (1 << 20) as f32) as i32;
        // A mantissa that rounds up to 8 carries into the exponent: ((e + 7) << 3) + 8 does that.
        let code = ((exponent + 7) << 3) + mantissa;
        if code < 0x7E { code as u8 } else { 0x7E }
    };
    sign | magnitude
}

/// The global scale `GlobalScale::Auto` chooses for a tensor whose largest magnitude is `amax`:
/// `amax / (6 · 448)`, so that the largest block scale is 448 and no block saturates; 1 when
/// that is not a positive number (all values 0, or `amax` so small that the quotient underflows
/// to 0: every block then underflows to zeros whatever the scale).
#[inline(always)]
pub fn auto_global_scale(amax: f32) -> f32 {
    let g = amax / (E2M1_MAX * E4M3_MAX);
    if g > 0.0 { g } else { 1.0 }
}
