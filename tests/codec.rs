//! e2m1 and e4m3fn codecs, checked exhaustively against independent definitions.

use nvfp4::codec::{E4M3_NAN, e2m1_to_f32, e4m3_to_f32, f32_to_e2m1, f32_to_e4m3};

/// e4m3fn from its definition, in f64: bias 7, subnormals m·2⁻⁹, S.1111.111 is NaN.
fn e4m3_by_definition(code: u8) -> f64 {
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((code >> 3) & 0xF) as i32, (code & 7) as f64);
    if e == 15 && m == 7.0 {
        f64::NAN
    } else if e == 0 {
        sign * m * 2f64.powi(-9)
    } else {
        sign * (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

/// Nearest code by brute force over `codes` (ties → even code), as a reference encoder.
fn nearest(x: f32, codes: impl Iterator<Item = u8>, decode: fn(u8) -> f32) -> u8 {
    let mut best: Option<(f64, u8)> = None;
    for c in codes {
        let d = (x as f64 - decode(c) as f64).abs();
        best = match best {
            Some((bd, bc)) if d > bd || (d == bd && bc % 2 == 0) => Some((bd, bc)),
            _ => Some((d, c)),
        };
    }
    best.map(|(_, c)| c).unwrap_or(0)
}

#[test]
fn e2m1_decodes_every_code_to_its_value() {
    let expected = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for code in 0..16u8 {
        let v = e2m1_to_f32(code);
        let magnitude = expected[(code & 7) as usize];
        assert_eq!(v.abs(), magnitude, "code {code}");
        assert_eq!(v.is_sign_negative(), code & 8 != 0, "sign of code {code}");
    }
}

#[test]
fn e2m1_round_trips_every_code_including_negative_zero() {
    for code in 0..16u8 {
        assert_eq!(f32_to_e2m1(e2m1_to_f32(code)), code, "code {code}");
    }
}

#[test]
fn e2m1_rounds_to_nearest_with_ties_to_even() {
    let cases = [
        (0.25, 0),
        (0.2500001, 1),
        (0.75, 2),
        (1.25, 2),
        (1.75, 4),
        (2.5, 4),
        (2.5000002, 5),
        (3.5, 6),
        (5.0, 6),
        (5.0000005, 7),
        (-0.75, 0x8 | 2),
        (-5.0, 0x8 | 6),
    ];
    for (x, code) in cases {
        assert_eq!(f32_to_e2m1(x), code, "x = {x}");
    }
}

#[test]
fn e2m1_saturates_at_six_and_maps_nan_to_zero() {
    assert_eq!(f32_to_e2m1(6.5), 7);
    assert_eq!(f32_to_e2m1(1e30), 7);
    assert_eq!(f32_to_e2m1(f32::INFINITY), 7);
    assert_eq!(f32_to_e2m1(f32::NEG_INFINITY), 0xF);
    assert_eq!(f32_to_e2m1(f32::NAN), 0);
}

#[test]
fn e2m1_encoder_matches_brute_force_on_a_dense_sweep() {
    for i in -8000..=8000 {
        let x = i as f32 / 1000.0;
        let want = nearest(x, 0..16u8, e2m1_to_f32);
        let got = f32_to_e2m1(x);
        assert_eq!(
            e2m1_to_f32(got),
            e2m1_to_f32(want),
            "x = {x}: got code {got}, want {want}"
        );
    }
}

/// The encoder at and a few ulps around every midpoint and binade boundary (where a wrong tie
/// rule or off-by-one threshold shows), and on random bit patterns of every exponent.
#[test]
fn e2m1_encoder_matches_brute_force_around_midpoints_and_on_random_bits() {
    let check = |x: f32| {
        // Saturation above 6 (the brute force's f64 distances lose the ordering for huge x).
        let want = if x.abs() >= 6.0 {
            if x < 0.0 { 15 } else { 7 }
        } else {
            nearest(x, 0..16u8, e2m1_to_f32)
        };
        let got = f32_to_e2m1(x);
        assert_eq!(
            e2m1_to_f32(got),
            e2m1_to_f32(want),
            "x = {x:e}: code {got}, want {want}"
        );
        assert_eq!(got & 8 != 0, x.is_sign_negative(), "sign of the code of {x:e}");
    };
    for point in [
        0.25f32, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0,
    ] {
        for offset in -3i32..=3 {
            let x = f32::from_bits((point.to_bits() as i32 + offset) as u32);
            check(x);
            check(-x);
        }
    }
    let mut rng = nvfp4::problem::Rng::new(7);
    for _ in 0..1_000_000 {
        let x = f32::from_bits(rng.next_u64() as u32);
        if !x.is_nan() {
            check(x);
        }
    }
    check(f32::INFINITY);
    check(f32::NEG_INFINITY);
}

#[test]
fn e4m3_decodes_every_code_by_its_definition() {
    for code in 0..=255u8 {
        let (got, want) = (e4m3_to_f32(code) as f64, e4m3_by_definition(code));
        if want.is_nan() {
            assert!(got.is_nan(), "code {code:#04x} must be NaN");
        } else {
            assert_eq!(got, want, "code {code:#04x}");
            assert_eq!(got.is_sign_negative(), code & 0x80 != 0, "sign of {code:#04x}");
        }
    }
    assert_eq!(e4m3_to_f32(0x7E), 448.0);
    assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9));
    assert_eq!(e4m3_to_f32(0x08), 2f32.powi(-6));
    assert_eq!(e4m3_to_f32(0x38), 1.0);
}

#[test]
fn e4m3_round_trips_every_finite_code_including_negative_zero() {
    for code in (0..=255u8).filter(|c| c & 0x7F != 0x7F) {
        assert_eq!(f32_to_e4m3(e4m3_to_f32(code)), code, "code {code:#04x}");
    }
    assert_eq!(f32_to_e4m3(-0.0), 0x80);
}

#[test]
fn e4m3_encodes_nan_as_the_canonical_nan() {
    assert_eq!(f32_to_e4m3(f32::NAN), E4M3_NAN);
    assert!(e4m3_to_f32(0xFF).is_nan());
}

#[test]
fn e4m3_saturates_at_448() {
    for x in [448.0, 449.0, 464.0, 480.0, 1e6, f32::MAX, f32::INFINITY] {
        assert_eq!(f32_to_e4m3(x), 0x7E, "x = {x}");
        assert_eq!(f32_to_e4m3(-x), 0xFE, "x = -{x}");
    }
}

#[test]
fn e4m3_midpoints_round_to_the_even_code() {
    let positive: Vec<u8> = (0..0x7Fu8).collect();
    for pair in positive.windows(2) {
        let (lo, hi) = (pair[0], pair[1]);
        let (a, b) = (e4m3_to_f32(lo) as f64, e4m3_to_f32(hi) as f64);
        let mid = ((a + b) / 2.0) as f32;
        assert_eq!(
            mid as f64,
            (a + b) / 2.0,
            "midpoint of {lo:#04x},{hi:#04x} must be exact in f32"
        );
        let even = if lo % 2 == 0 { lo } else { hi };
        assert_eq!(f32_to_e4m3(mid), even, "midpoint between {lo:#04x} and {hi:#04x}");
        assert_eq!(
            f32_to_e4m3(mid.next_up()),
            hi,
            "just above the midpoint of {lo:#04x},{hi:#04x}"
        );
        assert_eq!(
            f32_to_e4m3(mid.next_down()),
            lo,
            "just below the midpoint of {lo:#04x},{hi:#04x}"
        );
    }
}

#[test]
fn e4m3_encoder_matches_brute_force_on_random_values() {
    let mut rng = nvfp4::problem::Rng::new(7);
    for _ in 0..20_000 {
        // Log-uniform magnitudes from 2⁻¹² to 2¹⁰, both signs.
        let x = (rng.next_f32() * 22.0 - 12.0).exp2() * if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        let want = nearest(x, (0..=255u8).filter(|c| c & 0x7F != 0x7F), e4m3_to_f32);
        let got = f32_to_e4m3(x);
        assert_eq!(
            e4m3_to_f32(got),
            e4m3_to_f32(want),
            "x = {x:e}: got {got:#04x}, want {want:#04x}"
        );
    }
}

/// `Divisor::quotient` against the IEEE division: bit-identical on `[2⁻³, 8)`, the same e2m1
/// magnitude code everywhere, on divisors over the whole handled range and quotients placed on and around
/// every e2m1 midpoint (where a one-ulp error would change the code), random, tiny and huge.
#[test]
fn divisor_quotient_matches_the_division() {
    use nvfp4::codec::{Divisor, e2m1_magnitude_code};
    use nvfp4::problem::Rng;

    let mut rng = Rng::new(41);
    let fma = |a: f32, b: f32, c: f32| a.mul_add(b, c);
    let random_divisor = |rng: &mut Rng| {
        // Exponent uniform over the handled range, mantissa random; every 4th an e4m3 scale
        // times a random global scale, as the quantizer forms them.
        let bits = rng.next_u64();
        if bits.is_multiple_of(4) {
            let scale = e4m3_to_f32((bits >> 8) as u8 & 0x7E);
            scale * f32::from_bits((((bits >> 16) % 120 + 67) as u32) << 23 | (bits >> 40) as u32 & 0x7F_FFFF)
        } else {
            let exponent = (bits >> 32) % 193; // 2⁻⁹⁶ ..= 2⁹⁶
            f32::from_bits(((exponent as u32 + 127 - 96) << 23) | (bits as u32 & 0x7F_FFFF))
        }
    };
    let midpoints = [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0];
    let (mut exact, mut checked) = (0u64, 0u64);
    for i in 0..4_000_000u64 {
        let d = random_divisor(&mut rng);
        let Some(divisor) = Divisor::new(d) else {
            continue; // e4m3 zero or a product outside the range: the quantizer divides
        };
        let bits = rng.next_u64();
        let x = match i % 4 {
            // On or a few ulps around a midpoint times d (the products' roundings land on every
            // side of the exact midpoint quotient).
            0 | 1 => {
                let m = midpoints[(bits % 7) as usize];
                let near = (m * d).to_bits() as i64 + ((bits >> 8) % 9) as i64 - 4;
                f32::from_bits(near as u32)
            }
            // Any quotient magnitude from 2⁻³⁰ to 2³⁰.
            2 => d * f32::from_bits((((bits >> 8) % 60 + 97) as u32) << 23 | (bits >> 32) as u32 & 0x7F_FFFF),
            // Any finite f32.
            _ => loop {
                let v = f32::from_bits(rng.next_u64() as u32 & 0x7FFF_FFFF);
                if v.is_finite() {
                    break v;
                }
            },
        };
        let x = if bits & (1 << 63) != 0 { -x } else { x };
        if !x.is_finite() {
            continue;
        }
        let (q, expected) = (divisor.quotient(x, fma), x / d);
        checked += 1;
        if (0.125..8.0).contains(&expected.abs()) {
            assert_eq!(q.to_bits(), expected.to_bits(), "{x:e} / {d:e}");
            exact += 1;
        }
        assert_eq!(
            e2m1_magnitude_code(q),
            e2m1_magnitude_code(expected),
            "code of {x:e} / {d:e}: {q:e} vs {expected:e}"
        );
    }
    for d in [2f32.powi(-96), 2f32.powi(96), 1.0, 448.0, 1.0 / 512.0] {
        let divisor = Divisor::new(d).expect("inside the handled range");
        for x in [0.0f32, -0.0, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, -1e-45] {
            assert_eq!(
                e2m1_magnitude_code(divisor.quotient(x, fma)),
                e2m1_magnitude_code(x / d),
                "{x:e} / {d:e}"
            );
        }
    }
    for d in [0.0f32, 2f32.powi(-97), 2f32.powi(97), f32::INFINITY, f32::NAN] {
        assert!(Divisor::new(d).is_none(), "{d:e} is outside the handled range");
    }
    assert!(exact > checked / 3, "{exact} of {checked} quotients in [2⁻³, 8)");
}
