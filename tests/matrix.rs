//! NVFP4 matrices: validation, scale-layout conversion, quantization and dequantization.

use half::{bf16, f16};
use nvfp4::codec::{e2m1_to_f32, e4m3_to_f32};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{BlockedScales, Distribution, Error, GlobalScale, NvFp4Matrix};

fn assert_invalid<T: std::fmt::Debug>(result: nvfp4::Result<T>, arg: &str) {
    match result {
        Err(Error::InvalidArgument { arg: a, .. }) | Err(Error::BufferLength { arg: a, .. }) => {
            assert_eq!(a, arg)
        }
        other => panic!("expected an error naming `{arg}`, got {other:?}"),
    }
}

#[test]
fn from_parts_rejects_bad_shapes_and_lengths_naming_the_argument() {
    let scales = |rows, k| vec![0u8; BlockedScales::new(rows, k).len()];
    assert_invalid(NvFp4Matrix::from_parts(0, 16, vec![], vec![], None), "rows");
    assert_invalid(NvFp4Matrix::from_parts(1, 0, vec![], vec![], None), "k");
    assert_invalid(
        NvFp4Matrix::from_parts(1, 24, vec![0; 12], scales(1, 24), None),
        "k",
    );
    assert_invalid(
        NvFp4Matrix::from_parts(2, 32, vec![0; 31], scales(2, 32), None),
        "data",
    );
    assert_invalid(
        NvFp4Matrix::from_parts(2, 32, vec![0; 32], vec![0; 100], None),
        "scales",
    );
    for g in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_invalid(
            NvFp4Matrix::from_parts(2, 32, vec![0; 32], scales(2, 32), Some(g)),
            "global_scale",
        );
    }
    assert!(NvFp4Matrix::from_parts(2, 32, vec![0; 32], scales(2, 32), Some(0.5)).is_ok());
}

#[test]
fn plain_and_blocked_scale_layouts_convert_both_ways() {
    let mut rng = Rng::new(3);
    let m = random_matrix(200, 96, Distribution::Task, &mut rng).unwrap();
    let plain = m.plain_scales();
    assert_eq!(plain.len(), 200 * 6);
    for (i, &s) in plain.iter().enumerate() {
        assert_eq!(s, m.scale_code(i / 6, i % 6).unwrap());
    }
    let rebuilt = NvFp4Matrix::from_plain_scales(200, 96, m.data().to_vec(), &plain, None).unwrap();
    assert_eq!(rebuilt.plain_scales(), plain);
    assert_eq!(rebuilt.dequantize_f32(), m.dequantize_f32());
}

#[test]
fn element_codes_are_low_nibble_first() {
    let layout = BlockedScales::new(1, 16);
    let data = vec![0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F];
    let m = NvFp4Matrix::from_parts(1, 16, data, vec![0x38; layout.len()], None).unwrap();
    let codes: Vec<u8> = (0..16).map(|c| m.code(0, c).unwrap()).collect();
    assert_eq!(codes, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]);
}

#[test]
fn dequantize_multiplies_code_scale_and_global_scale() {
    let mut rng = Rng::new(11);
    let m = random_matrix(130, 64, Distribution::FullRange, &mut rng).unwrap();
    let g = m.global_scale().unwrap();
    let values = m.dequantize_f32();
    for r in [0, 1, 127, 128, 129] {
        for c in [0, 15, 16, 63] {
            let want = e2m1_to_f32(m.code(r, c).unwrap()) * e4m3_to_f32(m.scale_code(r, c / 16).unwrap()) * g;
            assert_eq!(values[r * 64 + c].to_bits(), want.to_bits(), "({r}, {c})");
        }
    }
    let f16s = m.dequantize_f16();
    let bf16s = m.dequantize_bf16();
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(f16s[i], f16::from_f32(v));
        assert_eq!(bf16s[i], bf16::from_f32(v));
    }
}

#[test]
fn quantize_is_lossless_for_values_on_the_nvfp4_grid() {
    // Each block holds a ±6 so that amax / 6 is exactly its e4m3 scale.
    let (rows, k) = (3, 64);
    let mut rng = Rng::new(5);
    let mut values = vec![0f32; rows * k];
    for (b, block) in values.chunks_exact_mut(16).enumerate() {
        let scale = e4m3_to_f32(1 + (rng.next_u64() % 0x7E) as u8);
        for (i, v) in block.iter_mut().enumerate() {
            let code = if i == b % 16 {
                7 | ((rng.next_u64() as u8) & 8)
            } else {
                (rng.next_u64() & 0xF) as u8
            };
            *v = e2m1_to_f32(code) * scale;
        }
    }
    let m = NvFp4Matrix::quantize(rows, k, &values, GlobalScale::None).unwrap();
    assert_eq!(m.dequantize_f32(), values);
}

#[test]
fn quantize_error_is_at_most_one_e2m1_unit_of_the_block_scale() {
    let (rows, k) = (5, 256);
    let mut rng = Rng::new(9);
    let values: Vec<f32> = (0..rows * k).map(|_| (rng.next_f32() - 0.5) * 300.0).collect();
    for global in [GlobalScale::None, GlobalScale::Auto, GlobalScale::Fixed(0.25)] {
        let m = NvFp4Matrix::quantize(rows, k, &values, global).unwrap();
        let g = m.global_scale().unwrap_or(1.0);
        let back = m.dequantize_f32();
        for (i, (&x, &y)) in values.iter().zip(&back).enumerate() {
            let unit = e4m3_to_f32(m.scale_code(i / k, (i % k) / 16).unwrap()) * g;
            assert!(
                (x - y).abs() <= unit * 1.0001,
                "{global:?}: element {i}: {x} → {y} (unit {unit})"
            );
        }
    }
}

#[test]
fn auto_global_scale_puts_the_largest_block_scale_at_448() {
    let mut rng = Rng::new(13);
    let values: Vec<f32> = (0..4 * 64).map(|_| (rng.next_f32() - 0.5) * 1e5).collect();
    let m = NvFp4Matrix::quantize(4, 64, &values, GlobalScale::Auto).unwrap();
    let max_scale = m.plain_scales().into_iter().map(e4m3_to_f32).fold(0f32, f32::max);
    assert_eq!(max_scale, 448.0);
}

#[test]
fn quantize_accepts_f16_and_bf16_like_their_f32_values() {
    let mut rng = Rng::new(17);
    let values: Vec<f32> = (0..2 * 32).map(|_| (rng.next_f32() - 0.5) * 20.0).collect();
    let halves: Vec<f16> = values.iter().map(|&v| f16::from_f32(v)).collect();
    let brains: Vec<bf16> = values.iter().map(|&v| bf16::from_f32(v)).collect();
    let widened = |v: Vec<f32>| NvFp4Matrix::quantize(2, 32, &v, GlobalScale::Auto).unwrap();
    assert_eq!(
        NvFp4Matrix::quantize(2, 32, &halves, GlobalScale::Auto).unwrap(),
        widened(halves.iter().map(|h| h.to_f32()).collect())
    );
    assert_eq!(
        NvFp4Matrix::quantize(2, 32, &brains, GlobalScale::Auto).unwrap(),
        widened(brains.iter().map(|h| h.to_f32()).collect())
    );
}

#[test]
fn quantize_rejects_non_finite_values_and_bad_arguments() {
    let mut values = vec![1f32; 32];
    values[7] = f32::NAN;
    match NvFp4Matrix::quantize(1, 32, &values, GlobalScale::None) {
        Err(Error::NonFinite { index: 7, .. }) => {}
        other => panic!("expected NonFinite at 7, got {other:?}"),
    }
    assert_invalid(
        NvFp4Matrix::quantize(1, 32, &[0f32; 31], GlobalScale::None),
        "values",
    );
    assert_invalid(
        NvFp4Matrix::quantize(1, 32, &[0f32; 32], GlobalScale::Fixed(-2.0)),
        "global_scale",
    );
}

#[test]
fn all_zero_input_quantizes_to_zero_with_unit_auto_scale() {
    let m = NvFp4Matrix::quantize(2, 16, &[0f32; 32], GlobalScale::Auto).unwrap();
    assert_eq!(m.global_scale(), Some(1.0));
    assert!(m.dequantize_f32().iter().all(|&v| v == 0.0));
}

#[test]
fn the_default_global_scale_keeps_every_block_representable_and_none_reports_what_it_lost() {
    use nvfp4::QuantizationStats;
    // Blocks of magnitude 1e-4 (below e4m3's reach without a global scale), 1, and 1e4 (above
    // 6 · 448), and one all-zero block.
    let k = 64;
    let mut values = vec![0f32; k];
    for (i, v) in values.iter_mut().enumerate() {
        *v = match i / 16 {
            0 => 1e-4 * (1 + i % 3) as f32,
            1 => 1.0 + (i % 5) as f32,
            2 => 1e4 * (1 + i % 2) as f32,
            _ => 0.0,
        };
    }
    assert_eq!(GlobalScale::default(), GlobalScale::Auto);
    let (_, none) = NvFp4Matrix::quantize_with_stats(1, k, &values, GlobalScale::None).unwrap();
    assert_eq!(
        none,
        QuantizationStats {
            blocks: 4,
            zero_blocks: 1,
            underflowed_blocks: 1,
            saturated_blocks: 1
        }
    );
    let (m, auto) = NvFp4Matrix::quantize_with_stats(1, k, &values, GlobalScale::default()).unwrap();
    assert_eq!(auto.saturated_blocks, 0, "Auto never saturates");

    let decoded = m.dequantize_f32();
    let largest = decoded[32..48].iter().fold(0f32, |a, v| a.max(v.abs()));
    assert!(
        (largest - 2e4).abs() / 2e4 < 0.07,
        "the largest block survives: {largest}"
    );
}

/// The hostile inputs found on revision 9b6c49e, each now a typed error or a documented panic.
#[test]
fn reported_reproducers_give_typed_errors_or_documented_panics() {
    use nvfp4::dual_gemm::{Sm90Geometry, grid_size};
    // A plan whose tile count wrapped to 0 in u32 (then a division by it), or to a wrong plan.
    for n in [1 << 22, (1 << 22) + 64] {
        let shape = nvfp4::DualGemmShape {
            m: 1 << 23,
            n,
            k: 256,
        };
        assert!(
            matches!(Sm90Geometry::new(shape, 132), Err(Error::InvalidArgument { .. })),
            "{shape:?}"
        );
    }
    // `grid_size` with no tiles or no SMs.
    assert!(matches!(
        grid_size(nvfp4_kernel::sm90::config::Tile { tokens: 128 }, 0, 1, 132),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        grid_size(nvfp4_kernel::sm90::config::Tile { tokens: 128 }, 4, 1, 0),
        Err(Error::InvalidArgument { .. })
    ));
    // A scale layout whose size overflows: `checked_len` says so, `len` panics (documented).
    let huge = BlockedScales::new(1, 1 << 62);
    assert_eq!(huge.checked_len(), None);
    assert!(std::panic::catch_unwind(|| huge.len()).is_err());
    // Out-of-range element, scale and row accessors on a 2 × 32 matrix.
    let m = NvFp4Matrix::from_parts(
        2,
        32,
        vec![0; 32],
        vec![0x38; BlockedScales::new(2, 32).len()],
        None,
    )
    .unwrap();
    let mut row = vec![0f32; 32];
    assert!(matches!(m.code(5, 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(m.scale_code(0, 7), Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        m.decode_row_unscaled(3, &mut row),
        Err(Error::InvalidArgument { .. })
    ));
    // Column 40 of a 32-wide row is an error, not an element of the next row.
    assert!(matches!(m.code(0, 40), Err(Error::InvalidArgument { .. })));
}

#[test]
fn auto_global_scale_falls_back_to_one_when_the_quotient_underflows() {
    // amax / (6 · 448) is 0 in f32 below about 1.9e-42: the scale falls back to 1 (every block
    // then underflows to zeros) instead of an invalid global scale of 0.
    let mut values = vec![0f32; 32];
    values[3] = 1e-44;
    let (m, stats) = NvFp4Matrix::quantize_with_stats(1, 32, &values, GlobalScale::Auto).unwrap();
    assert_eq!(m.global_scale(), Some(1.0));
    assert!(m.data().iter().all(|&b| b == 0));
    assert_eq!((stats.zero_blocks, stats.underflowed_blocks), (1, 1));
    let values = vec![0f32; 32];
    assert_eq!(
        NvFp4Matrix::quantize(1, 32, &values, GlobalScale::Auto)
            .unwrap()
            .global_scale(),
        Some(1.0)
    );
}
