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

/// Scale-block elements (indices 0..16 within one 16-element block) carried by each of the eight
/// fp16 pairs that [`e2m1x8_to_f16x2_pairs`] produces from the block's two words: pair `p`
/// holds elements `PAIR_ELEMENTS[p][0]` (low half) and `PAIR_ELEMENTS[p][1]` (high half).
///
/// This order is the K permutation of the Hopper kernel: a dot product may sum K in any order as
/// long as both operands use the same one, so the register operand keeps the pairs as they come
/// out of the shift trick and the shared-memory operand is written in the same order.
pub const PAIR_ELEMENTS: [[usize; 2]; 8] = [
    [3, 7],
    [2, 6],
    [1, 5],
    [0, 4],
    [11, 15],
    [10, 14],
    [9, 13],
    [8, 12],
];

/// Four fp16x2 words, each `e2m1 · 2^−14` of two codes, from one word of eight e2m1 codes
/// (`n0` in bits 0..3 … `n7` in bits 28..31): `[(n3, n7), (n2, n6), (n1, n5), (n0, n4)]`.
///
/// In each 16-bit half, the code whose bits sit at 12..15 is moved to the layout of
/// [`e2m1_to_f16_bits_scaled`]: its sign stays at bit 15 and its three low bits move down by 3
/// to 9..11; shifting the word left by 4 brings the next code of each half into place (Marlin's
/// trick; about three integer instructions per pair).
#[inline(always)]
pub const fn e2m1x8_to_f16x2_pairs(word: u32) -> [u32; 4] {
    [
        e2m1x8_pair(word, 0),
        e2m1x8_pair(word, 1),
        e2m1x8_pair(word, 2),
        e2m1x8_pair(word, 3),
    ]
}

/// Pair `k` (0..4) of [`e2m1x8_to_f16x2_pairs`]: codes `(3 − k, 7 − k)` of `word`.
#[inline(always)]
pub const fn e2m1x8_pair(word: u32, k: u32) -> u32 {
    let x = word << (4 * k);
    (x & 0x8000_8000) | ((x >> 3) & 0x0E00_0E00)
}
