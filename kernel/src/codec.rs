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

/// The sign bit of an f32.
pub const SIGN_BIT: u32 = 0x8000_0000;

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
    (e2m1_sign_bit(x) | e2m1_magnitude_code(x)) as u8
}

/// The sign bit of the e2m1 code of `x` (0 or 8): `x`'s sign bit, also for ±0.
#[inline(always)]
pub fn e2m1_sign_bit(x: f32) -> u32 {
    (x.to_bits() & SIGN_BIT) >> 28
}

/// The e2m1 magnitude code (0..=7) nearest `|x|` (`x` not NaN; ties to even, saturating at 6).
/// Branch-free, about ten integer and float instructions on the GPU.
#[inline(always)]
pub fn e2m1_magnitude_code(x: f32) -> u32 {
    let a = x.abs().min(E2M1_MAX);
    // e2m1 magnitudes step by 1/2 below 2 (binade 0), by 1 below 4 (binade 1), by 2 up to 6
    // (binade 2); binade b starts at code 2b. The binade is a's f32 exponent, clamped.
    let biased_binade = (a.to_bits() >> 23).max(127); // 127 + b
    // 2^(22 + b) has an ulp of 2^(b − 1), binade b's step: adding it rounds `a` to a whole
    // number of steps, ties to an even count (the sum stays in 2^(22 + b)'s binade), and leaves
    // the count in the low mantissa bits. Binades start at even codes, so ties go to the even
    // code, as the format's rounding asks, also across binade boundaries (1.75 → 2.0, 3.5 → 4.0).
    let magic = f32::from_bits((biased_binade + 22) << 23);
    (a + magic).to_bits() - magic.to_bits() + 2 * biased_binade - 2 * 127
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

/// A block's divisor with its correctly rounded reciprocal, for quotients `x / d` that are
/// bit-identical to the IEEE division but cost three multiply-adds each instead of one division
/// (the GPU quantizer divides 16 values by one divisor; `div.rn.f32` per value made it
/// instruction-bound).
///
/// Method (Markstein's theorem: P. Markstein, IBM J. Res. Dev. 34(1), 1990; also Muller et al.,
/// *Handbook of Floating-Point Arithmetic*, on division with an FMA):
/// with `y = RN(1/d)`, `q₀ = RN(x·y)` is within 1.5 ulp of `x/d`; one Newton step
/// `q₁ = RN(q₀ + RN(x − q₀·d)·y)` brings it within 1 ulp; then the residual `r = x − q₁·d` is
/// exact and `RN(q₁ + r·y)` is `RN(x/d)`. Every step is one fused multiply-add (`fma`, passed
/// in: `f32::mul_add` on the host, `fma.rn.f32` on the GPU).
///
/// The theorem needs no overflow or underflow on the way, which [`Divisor::new`] and
/// [`Divisor::quotient`] ensure: `d` in `[2⁻⁹⁶, 2⁹⁶]` (else `None`: divide), and quotients whose
/// first estimate is 8 or more in magnitude are returned unrefined (the exact quotient then
/// exceeds 7.99…, and both round to the same saturated e2m1 code, which is all the quantizer
/// reads from them). A zero quotient may have lost its sign (x = −0 gives +0: take the sign
/// from `x`, as [`e2m1_sign_bit`] does). Below 2⁻³ in magnitude the refined quotient may differ
/// from the division in its last bits when the residual underflows, but both stay below the
/// first e2m1 midpoint 0.25: the same code. So [`e2m1_magnitude_code`] of [`Divisor::quotient`]
/// equals it of `x / d` for every finite `x`; the quotient itself equals `x / d` whenever
/// `|x / d|` is in `[2⁻³, 8)` (host tests: `tests/codec.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    /// −d: the residual steps are `fma(q, −d, x)`.
    negative_d: f32,
    reciprocal: f32,
}

impl Divisor {
    /// Smallest divisor handled: residuals of quotients ≥ 2⁻³ are then multiples of 2⁻¹⁴⁹.
    const MIN: f32 = 1.0 / (1u128 << 96) as f32;
    /// Largest divisor handled: its reciprocal is a normal f32.
    const MAX: f32 = (1u128 << 96) as f32;
    /// Quotients at least this large in magnitude saturate the e2m1 code unrefined.
    const SATURATED: f32 = 8.0;

    /// `d` prepared for [`Divisor::quotient`], or `None` when `d` is outside `[2⁻⁹⁶, 2⁹⁶]`
    /// (or NaN): divide by it instead.
    #[inline(always)]
    pub fn new(d: f32) -> Option<Self> {
        if (Self::MIN..=Self::MAX).contains(&d) {
            Some(Self {
                negative_d: -d,
                reciprocal: 1.0 / d,
            })
        } else {
            None
        }
    }

    /// `x / d` rounded to nearest even for finite `x` (see the type's doc for the exact range and
    /// the sign of zero), with `fma(a, b, c) = RN(a·b + c)`.
    #[inline(always)]
    pub fn quotient(&self, x: f32, fma: impl Fn(f32, f32, f32) -> f32) -> f32 {
        let (negative_d, y) = (self.negative_d, self.reciprocal);
        let q0 = x * y;
        let q1 = fma(fma(q0, negative_d, x), y, q0);
        let q2 = fma(fma(q1, negative_d, x), y, q1);
        if q0.abs() < Self::SATURATED { q2 } else { q0 }
    }
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
