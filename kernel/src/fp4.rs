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
//!
//! The GEMM kernels decode eight codes (one 32-bit word) at a time into four fp16x2 words with
//! one of two [`PairCodec`]s, each leaving the codes in its own K order.

/// Factor that undoes the `2^−14` of [`e2m1_to_f16_bits_scaled`]: `2^14`.
pub const E2M1_F16_RESCALE: f32 = 16384.0;

/// fp16 bit pattern of `e2m1(code) · 2^−14` for the 4-bit code in the low nibble of `code`.
#[inline(always)]
pub const fn e2m1_to_f16_bits_scaled(code: u32) -> u16 {
    (((code & 0x8) << 12) | ((code & 0x7) << 9)) as u16
}

/// One way to turn a word of eight e2m1 codes (`n0` in bits 0..3 … `n7` in bits 28..31) into four
/// fp16x2 words of `e2m1 · 2^−14` ([`e2m1_to_f16_bits_scaled`]), and the K order it leaves the
/// codes in. A dot product may sum K in any order as long as both operands use the same one, so
/// a kernel keeps the pairs in the order its codec gives them, and both of its operands (and any
/// buffer another kernel decodes for it) go through the same codec.
pub trait PairCodec {
    /// Scale-block elements (indices 0..16 within one 16-element block) carried by each of the
    /// eight pairs that [`PairCodec::pairs`] gives for the block's two words (elements 0..7,
    /// then 8..15): pair `p` holds elements `PAIR_ELEMENTS[p][0]` (low half) and
    /// `PAIR_ELEMENTS[p][1]` (high half).
    const PAIR_ELEMENTS: [[usize; 2]; 8];

    /// The four fp16x2 words of `word`'s eight codes.
    fn pairs(word: u32) -> [u32; 4];
}

/// Each pair's two codes moved into place by shifts and masks (Marlin's trick): in each 16-bit
/// half of `word << 4k` the code at bits 12..15 keeps its sign at bit 15 and moves its three low
/// bits down by 3, giving codes `(3 − k, 7 − k)`; about 3.75 integer instructions a pair, whose
/// left shifts ptxas issues as `IMAD.SHL` on the FMA pipe (so fewer of them land on the ALU
/// pipe than the count says).
pub struct ShiftCodec;

impl PairCodec for ShiftCodec {
    const PAIR_ELEMENTS: [[usize; 2]; 8] = [
        [3, 7],
        [2, 6],
        [1, 5],
        [0, 4],
        [11, 15],
        [10, 14],
        [9, 13],
        [8, 12],
    ];

    #[inline(always)]
    fn pairs(word: u32) -> [u32; 4] {
        let pair = |k: u32| {
            let x = word << (4 * k);
            (x & 0x8000_8000) | ((x >> 3) & 0x0E00_0E00)
        };
        [pair(0), pair(1), pair(2), pair(3)]
    }
}

/// The word's four even and four odd codes first turned into fp16 high bytes in place (the
/// fp16 of [`e2m1_to_f16_bits_scaled`] has a zero low byte), then two of those bytes spread into
/// each output word by one byte permute (`prmt`): codes `(0, 2), (4, 6), (1, 3), (5, 7)`; about
/// 2.75 integer instructions a pair, all on the ALU pipe.
pub struct PermuteCodec;

impl PairCodec for PermuteCodec {
    const PAIR_ELEMENTS: [[usize; 2]; 8] = [
        [0, 2],
        [4, 6],
        [1, 3],
        [5, 7],
        [8, 10],
        [12, 14],
        [9, 11],
        [13, 15],
    ];

    #[inline(always)]
    fn pairs(word: u32) -> [u32; 4] {
        // Even codes (bits 0..3 of each byte): sign to bit 7, the three low bits to 1..3.
        let even = ((word << 4) & 0x8080_8080) | ((word << 1) & 0x0E0E_0E0E);
        // Odd codes (bits 4..7): the sign is in place, the three low bits move down by 3.
        let odd = (word & 0x8080_8080) | ((word >> 3) & 0x0E0E_0E0E);
        [
            byte_perm(even, SPREAD_LOW),
            byte_perm(even, SPREAD_HIGH),
            byte_perm(odd, SPREAD_LOW),
            byte_perm(odd, SPREAD_HIGH),
        ]
    }
}

/// Selector of [`byte_perm`] for bytes 0 and 1 of its operand as the high bytes of an fp16x2
/// word (selector nibble 4 picks a byte of the zero second operand).
const SPREAD_LOW: u32 = 0x1404;
/// Selector of [`byte_perm`] for bytes 2 and 3 as the high bytes of an fp16x2 word.
const SPREAD_HIGH: u32 = 0x3424;

/// `prmt.b32 d, a, 0, selector` (default mode): byte `i` of the result is byte `selector`
/// nibble `i` (0..8, bit 3 clear) of the eight bytes `a`, then zero. One instruction on the
/// GPU (LLVM does not form it from shifts and masks, so the device build states it); the host
/// build computes the same bytes.
#[inline(always)]
fn byte_perm(a: u32, selector: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: u32;
        // SAFETY: pure register arithmetic.
        unsafe {
            core::arch::asm!(
                "prmt.b32 {d}, {a}, 0, {s};",
                d = out(reg32) d,
                a = in(reg32) a,
                s = in(reg32) selector,
                options(pure, nomem, nostack),
            )
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let bytes = a as u64;
        (0..4).fold(0, |d, i| {
            let pick = (selector >> (4 * i)) & 7;
            d | ((((bytes >> (8 * pick)) & 0xFF) as u32) << (8 * i))
        })
    }
}
