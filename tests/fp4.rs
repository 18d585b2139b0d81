//! The fp4 → fp16 decoding tricks of `nvfp4_kernel::fp4`: every e2m1 code in every position,
//! exactly, for both pair codecs.

use half::f16;
use nvfp4::codec::e2m1_to_f32;
use nvfp4_kernel::fp4::{PairCodec, PermuteCodec, ShiftCodec, e2m1_to_f16_bits_scaled};

fn scaled_f16(code: u32) -> u16 {
    f16::from_f32(e2m1_to_f32(code as u8) * 2f32.powi(-14)).to_bits()
}

#[test]
fn single_code_trick_is_exactly_e2m1_times_2_pow_minus_14() {
    for code in 0..16 {
        assert_eq!(e2m1_to_f16_bits_scaled(code), scaled_f16(code), "code {code}");
    }
}

/// Every code at every position of a block (a different code everywhere else) comes out of
/// codec `C` exactly, in the pair and half that its `PAIR_ELEMENTS` names.
fn decodes_every_code_in_every_position<C: PairCodec>() {
    for position in 0..16u32 {
        for code in 0..16u32 {
            let mut block = [0u32; 16];
            for (i, c) in block.iter_mut().enumerate() {
                *c = if i as u32 == position {
                    code
                } else {
                    (i as u32 * 7 + 3) % 16
                };
            }
            let word = |half: usize| (0..8).fold(0u32, |w, i| w | (block[8 * half + i] << (4 * i)));
            let pairs: Vec<u32> = [word(0), word(1)].iter().flat_map(|&w| C::pairs(w)).collect();
            for (p, elements) in C::PAIR_ELEMENTS.iter().enumerate() {
                assert_eq!(pairs[p] as u16, scaled_f16(block[elements[0]]), "pair {p} low");
                assert_eq!(
                    (pairs[p] >> 16) as u16,
                    scaled_f16(block[elements[1]]),
                    "pair {p} high"
                );
            }
        }
    }
}

fn pair_elements_are_a_permutation_of_the_block<C: PairCodec>() {
    let mut seen = [false; 16];
    for e in C::PAIR_ELEMENTS.iter().flatten() {
        assert!(!seen[*e], "element {e} twice");
        seen[*e] = true;
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn shift_codec_decodes_every_code_in_every_position_in_pair_element_order() {
    decodes_every_code_in_every_position::<ShiftCodec>();
    pair_elements_are_a_permutation_of_the_block::<ShiftCodec>();
}

#[test]
fn permute_codec_decodes_every_code_in_every_position_in_pair_element_order() {
    decodes_every_code_in_every_position::<PermuteCodec>();
    pair_elements_are_a_permutation_of_the_block::<PermuteCodec>();
}
