//! Conversions between fp32, fp16, bf16 and e4m3 (`cvt`).
//!
//! fp16/bf16 values travel as their raw `u16` bit patterns: Rust's `f16` type is unstable and
//! the kernels only move these values, they never compute with them.

use core::arch::asm;

/// `cvt.rn.f16.f32`: round an f32 to the nearest fp16 (ties to even); NaN gives the canonical NaN.
#[inline(always)]
pub fn f32_to_f16_rn(x: f32) -> u16 {
    let h: u16;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("cvt.rn.f16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x) };
    h
}

/// `cvt.rn.bf16.f32`: round an f32 to the nearest bf16 (ties to even); NaN gives the canonical NaN.
#[inline(always)]
pub fn f32_to_bf16_rn(x: f32) -> u16 {
    let h: u16;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("cvt.rn.bf16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x) };
    h
}

/// `cvt.f32.f16`: widen an fp16 (exact).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let x: f32;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("cvt.f32.f16 {x}, {h};", x = out(reg32) x, h = in(reg16) h) };
    x
}

/// `cvt.rn.satfinite.e4m3x2.f32`: two f32 to two e4m3 (e4m3fn) codes, rounded to nearest even,
/// magnitudes above 448 (infinities included) saturated to 448, NaN to NaN (sm_89+); `high` →
/// byte 1, `low` → byte 0. For finite and infinite inputs this is the codec's `f32_to_e4m3`
/// (the GPU quantizer test checks it bit for bit, ties and subnormals included).
#[inline(always)]
pub fn f32x2_to_e4m3x2_satfinite(high: f32, low: f32) -> u16 {
    let pair: u16;
    // SAFETY: pure register arithmetic.
    unsafe {
        asm!(
            "cvt.rn.satfinite.e4m3x2.f32 {p}, {h}, {l};",
            p = out(reg16) pair,
            h = in(reg32) high,
            l = in(reg32) low,
            options(pure, nomem, nostack),
        )
    };
    pair
}

/// `cvt.rn.f16x2.e4m3x2`: two e4m3 (e4m3fn) bytes to two fp16 (exact: every e4m3 value,
/// subnormals included, is an fp16; 0x7F/0xFF give NaN). Byte 0 → low half, byte 1 → high half.
#[inline(always)]
pub fn e4m3x2_to_f16x2(pair: u16) -> u32 {
    let h: u32;
    // SAFETY: pure register arithmetic (sm_89+). Marked pure so that LLVM converts a pair once
    // when several slices use its halves.
    unsafe {
        asm!(
            "cvt.rn.f16x2.e4m3x2 {h}, {p};",
            h = out(reg32) h,
            p = in(reg16) pair,
            options(pure, nomem, nostack),
        )
    };
    h
}

/// Half `high` (false: the low half) of the fp16x2 `pair` in both halves (one `prmt`).
#[inline(always)]
pub fn f16x2_broadcast_half(pair: u32, high: bool) -> u32 {
    let selector: u32 = if high { 0x3232 } else { 0x1010 };
    let d: u32;
    // SAFETY: pure register arithmetic; the selector copies bytes of `pair` only.
    unsafe {
        asm!(
            "prmt.b32 {d}, {p}, 0, {s};",
            d = out(reg32) d,
            p = in(reg32) pair,
            s = in(reg32) selector,
            options(pure, nomem, nostack),
        )
    };
    d
}

/// Half `high` (false: the low half) of the fp16x2 `pair` in both halves, written as the
/// `mov.b32 {h, h}` of two fp16 registers, which ptxas folds into the operand of the
/// instruction that uses it (`.H0_H0` / `.H1_H1`) instead of issuing a `prmt`.
#[inline(always)]
pub fn f16x2_broadcast_half_folded(pair: u32, high: bool) -> u32 {
    let d: u32;
    // SAFETY: pure register arithmetic.
    unsafe {
        if high {
            asm!(
                "{{ .reg .b16 lo, hi; mov.b32 {{lo, hi}}, {p}; mov.b32 {d}, {{hi, hi}}; }}",
                d = out(reg32) d,
                p = in(reg32) pair,
                options(pure, nomem, nostack),
            )
        } else {
            asm!(
                "{{ .reg .b16 lo, hi; mov.b32 {{lo, hi}}, {p}; mov.b32 {d}, {{lo, lo}}; }}",
                d = out(reg32) d,
                p = in(reg32) pair,
                options(pure, nomem, nostack),
            )
        }
    };
    d
}

/// `mul.rn.f16x2`: lane-wise fp16 product (subnormals kept; no flush).
#[inline(always)]
pub fn mul_f16x2(a: u32, b: u32) -> u32 {
    let d: u32;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("mul.rn.f16x2 {d}, {a}, {b};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b) };
    d
}

/// Byte `byte` (0..4) of `word`, an e4m3 code, as fp16 in both halves of an fp16x2 (exact): one
/// `prmt` that copies the byte into the low two bytes and one `cvt.rn.f16x2.e4m3x2`.
#[inline(always)]
pub fn e4m3_byte_to_f16x2_broadcast(word: u32, byte: u32) -> u32 {
    let pair: u32;
    // SAFETY: pure register arithmetic; selector nibbles 0..3 pick bytes of `word`.
    unsafe {
        asm!(
            "prmt.b32 {d}, {w}, 0, {s};",
            d = out(reg32) pair,
            w = in(reg32) word,
            s = in(reg32) (byte & 3) * 0x11,
        )
    };
    e4m3x2_to_f16x2(pair as u16)
}

/// `ex2.approx.ftz.f32`: 2^x (max relative error about 2⁻²²; +inf for large x).
#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x) };
    y
}

/// `rcp.approx.ftz.f32`: 1/x (max relative error about 2⁻²³; 0 for +inf).
#[inline(always)]
pub fn rcp_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: pure register arithmetic.
    unsafe { asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x) };
    y
}
