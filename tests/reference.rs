//! The CPU reference against an f64 evaluation and a hand-computed case; the tolerance checker.

use half::f16;
use nvfp4::reference::{self, TASK_TOLERANCE, Tolerance, check, silu_mul};
use nvfp4::{BlockedScales, Distribution, DualGemmShape, Error, NvFp4Matrix, Problem};

#[test]
fn f32_reference_matches_the_f64_evaluation_on_small_shapes() {
    let shapes = [(1, 8, 16), (3, 40, 64), (130, 72, 256), (17, 129, 1024)];
    for (m, n, k) in shapes {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let p = Problem::random(DualGemmShape { m, n, k }, distribution, (m * n + k) as u64).unwrap();
            let fast = reference::dual_gemm(&p.a, &p.b1, &p.b2).unwrap();
            let exact = reference::dual_gemm_f64(&p.a, &p.b1, &p.b2).unwrap();
            let report = check(&fast, &exact, n, TASK_TOLERANCE).unwrap();
            assert!(report.passed(), "{m}×{n}×{k} {distribution:?}: {report}");
        }
    }
}

#[test]
fn reference_computes_a_hand_checked_case() {
    // A = 1.0 (code 2), B1 = 0.5 (code 1), B2 = 2.0 (code 4), all scales 1.0 (0x38), K = 16:
    // gate = 16 · 0.5 = 8, up = 16 · 2 = 32, C = silu(8) · 32.
    let matrix = |nibble: u8, global| {
        let scales = vec![0x38; BlockedScales::new(1, 16).len()];
        NvFp4Matrix::from_parts(1, 16, vec![nibble * 0x11; 8], scales, global).unwrap()
    };
    let c = reference::dual_gemm(&matrix(2, None), &matrix(1, None), &matrix(4, None)).unwrap();
    let want = 8.0f32 / (1.0 + (-8.0f32).exp()) * 32.0;
    assert_eq!(c, vec![f16::from_f32(want)]);
    // Global scales multiply each sum: alpha_gate = 2 · 0.25, alpha_up = 2 · 4.
    let c = reference::dual_gemm(
        &matrix(2, Some(2.0)),
        &matrix(1, Some(0.25)),
        &matrix(4, Some(4.0)),
    )
    .unwrap();
    assert_eq!(c, vec![f16::from_f32(silu_mul(8.0 * 0.5, 32.0 * 8.0))]);
}

#[test]
fn reference_rejects_operands_that_disagree() {
    let p = Problem::random(DualGemmShape { m: 2, n: 3, k: 32 }, Distribution::Task, 1).unwrap();
    let q = Problem::random(DualGemmShape { m: 2, n: 4, k: 64 }, Distribution::Task, 1).unwrap();
    assert!(matches!(
        reference::dual_gemm(&p.a, &q.b1, &q.b2),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        reference::dual_gemm(&p.a, &p.b1, &q.b2),
        Err(Error::ShapeMismatch(_))
    ));
}

#[test]
fn silu_saturates_without_nan() {
    assert_eq!(silu_mul(-1000.0, 3.0), -0.0);
    assert_eq!(silu_mul(1000.0, 2.0), 2000.0);
    assert!(silu_mul(f32::NAN, 1.0).is_nan());
}

fn h(values: &[f32]) -> Vec<f16> {
    values.iter().map(|&v| f16::from_f32(v)).collect()
}

#[test]
fn check_passes_within_the_tolerance_boundary_and_fails_past_it() {
    // Allowed error at 1000 is 1e-3 + 1 = 1.001.
    let report = check(&h(&[1001.0]), &h(&[1000.0]), 1, TASK_TOLERANCE).unwrap();
    assert!(report.passed(), "{report}");
    let report = check(&h(&[1002.0]), &h(&[1000.0]), 1, TASK_TOLERANCE).unwrap();
    assert!(!report.passed(), "{report}");
}

#[test]
fn check_requires_nan_and_infinities_to_match() {
    let tol = Tolerance { atol: 1.0, rtol: 1.0 };
    let pass = |got: f32, want: f32| check(&h(&[got]), &h(&[want]), 1, tol).unwrap().passed();
    assert!(pass(f32::NAN, f32::NAN));
    assert!(!pass(f32::NAN, 1.0));
    assert!(!pass(1.0, f32::NAN));
    assert!(pass(f32::INFINITY, f32::INFINITY));
    assert!(!pass(f32::INFINITY, f32::NEG_INFINITY));
    assert!(!pass(65504.0, f32::INFINITY));
}

#[test]
fn check_reports_the_worst_element_with_its_position_and_values() {
    let reference = h(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let out = h(&[1.0, 2.5, 3.0, 4.0, 9.0, 6.0]);
    let report = check(&out, &reference, 3, TASK_TOLERANCE).unwrap();
    assert_eq!(report.mismatches, 2);
    let worst = report.worst.unwrap();
    assert_eq!(
        (worst.row, worst.col, worst.got, worst.expected),
        (1, 1, 9.0, 5.0)
    );
    assert!(report.to_string().contains("row 1, col 1"), "{report}");
}

#[test]
fn check_rejects_mismatched_lengths() {
    assert!(matches!(
        check(&h(&[1.0]), &h(&[1.0, 2.0]), 1, TASK_TOLERANCE),
        Err(Error::BufferLength { arg: "out", .. })
    ));
}

#[test]
fn moe_combine_reference_computes_a_hand_checked_case() {
    use nvfp4::elementwise::{CombineShape, combine_reference};
    // Three expert rows of width 8; token 0 takes rows 2 and 0, token 1 row 1 and a slot whose
    // expert ran elsewhere (−1) and one past the rows (3): both add nothing.
    let rows: Vec<f16> = (0..24).map(|i| f16::from_f32(i as f32)).collect();
    let shape = CombineShape {
        rows: 3,
        tokens: 2,
        top_k: 3,
        width: 8,
    };
    let out = combine_reference(
        shape,
        &rows,
        &[2, 0, 0, 1, -1, 3],
        &[0.5, 2.0, 0.0, -1.0, 7.0, 9.0],
    );
    let want: Vec<f32> = (0..8)
        .map(|c| 0.5 * (16 + c) as f32 + 2.0 * c as f32)
        .chain((0..8).map(|c| -((8 + c) as f32)))
        .collect();
    assert_eq!(out, want);
    assert!(shape.validate().is_ok());
    for bad in [
        CombineShape { width: 12, ..shape },
        CombineShape { width: 0, ..shape },
        CombineShape { top_k: 0, ..shape },
        CombineShape {
            tokens: 1 << 30,
            top_k: 2,
            ..shape
        },
    ] {
        assert!(
            matches!(bad.validate(), Err(Error::InvalidArgument { .. })),
            "{bad:?}"
        );
    }
}
