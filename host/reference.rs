//! CPU reference of `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)`, and the task's tolerance check.
//!
//! [`dual_gemm`] decodes every operand exactly (`e2m1 · scale` is exact in f32), accumulates both
//! products in f32 on all cores, applies the global scales once to each sum
//! (`alpha = g_A · g_B`), computes SiLU and the product in f32 and rounds once to fp16 — the
//! reference harness's arithmetic. [`gemm`] is the plain product with the same arithmetic.
//! [`dual_gemm_f64`] and [`gemm_f64`] are plain f64 triple loops that check them. The grouped
//! ops are these per group (see `crate::grouped`).

use half::f16;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::matrix::NvFp4Matrix;
use crate::problem::DualGemmShape;

/// `silu(gate) · up` in f32, with `silu(x) = x / (1 + e^−x)`.
pub fn silu_mul(gate: f32, up: f32) -> f32 {
    gate / (1.0 + (-gate).exp()) * up
}

/// Columns of C (rows of B1/B2) one task computes; their decoded rows stay in cache while all
/// rows of A stream past.
const COLUMN_BLOCK: usize = 16;
/// Rows of A one micro-kernel call multiplies with one row of B1 and of B2.
const ROW_BLOCK: usize = 4;
/// Accumulator lanes per row (one SSE register; auto-vectorized).
const LANES: usize = 4;

/// Computes C on the CPU (see the module doc). Returns `M × N` fp16, row-major.
pub fn dual_gemm(a: &NvFp4Matrix, b1: &NvFp4Matrix, b2: &NvFp4Matrix) -> Result<Vec<f16>> {
    dual_gemm_with_progress(a, b1, b2, &|_, _| {})
}

/// [`dual_gemm`], calling `progress(done, total)` as column blocks finish (from worker threads).
pub fn dual_gemm_with_progress(
    a: &NvFp4Matrix,
    b1: &NvFp4Matrix,
    b2: &NvFp4Matrix,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<f16>> {
    DualGemmShape::of(a, b1, b2)?;
    let alpha_gate = global(a) * global(b1);
    let alpha_up = global(a) * global(b2);
    Ok(products(a, [b1, b2], progress, |[gate, up]| {
        silu_mul(alpha_gate * gate, alpha_up * up)
    }))
}

/// The plain GEMM `C = α · A·Bᵀ` (`α` = the product of the operands' global scales) on the
/// CPU, with the arithmetic of [`dual_gemm`]: exact decoding, f32 sums, one rounding to fp16.
/// Returns `M × N` fp16, row-major.
pub fn gemm(a: &NvFp4Matrix, b: &NvFp4Matrix) -> Result<Vec<f16>> {
    if b.k() != a.k() {
        return Err(Error::ShapeMismatch(format!(
            "A and B must share K (got {} and {})",
            a.k(),
            b.k()
        )));
    }
    let alpha = global(a) * global(b);
    Ok(products(a, [b], &|_, _| {}, |[sum]| alpha * sum))
}

fn global(m: &NvFp4Matrix) -> f32 {
    m.global_scale().unwrap_or(1.0)
}

/// `C[i][j] = epilogue([A_i · W_j for each of the W weight matrices])`, rounded to fp16, on all
/// cores: column blocks of the weights in parallel, their decoded rows cached while all of A's
/// rows stream past. The weights must share A's K and each other's rows.
fn products<const W: usize>(
    a: &NvFp4Matrix,
    weights: [&NvFp4Matrix; W],
    progress: &(dyn Fn(usize, usize) + Sync),
    epilogue: impl Fn([f32; W]) -> f32 + Sync,
) -> Vec<f16> {
    let (m, n, k) = (a.rows(), weights[0].rows(), a.k());
    let mut a_rows = vec![0f32; m * k];
    a_rows
        .par_chunks_mut(k)
        .enumerate()
        .for_each(|(r, row)| a.decode_row_unscaled_into(r, row));

    let blocks = n.div_ceil(COLUMN_BLOCK);
    let done = AtomicUsize::new(0);
    let column_blocks: Vec<Vec<f16>> = (0..blocks)
        .into_par_iter()
        .map(|block| {
            let cols = block * COLUMN_BLOCK..((block + 1) * COLUMN_BLOCK).min(n);
            let width = cols.len();
            let decoded: [Vec<f32>; W] = std::array::from_fn(|w| {
                let mut rows = vec![0f32; width * k];
                for (j, col) in cols.clone().enumerate() {
                    weights[w].decode_row_unscaled_into(col, &mut rows[j * k..(j + 1) * k]);
                }
                rows
            });
            let mut out = vec![f16::ZERO; m * width];
            for i0 in (0..m).step_by(ROW_BLOCK) {
                let rows = ROW_BLOCK.min(m - i0);
                for j in 0..width {
                    let weight_rows: [&[f32]; W] = std::array::from_fn(|w| &decoded[w][j * k..(j + 1) * k]);
                    for (r, sums) in dot_block(&a_rows[i0 * k..(i0 + rows) * k], k, weight_rows)
                        .into_iter()
                        .take(rows)
                        .enumerate()
                    {
                        out[(i0 + r) * width + j] = f16::from_f32(epilogue(sums));
                    }
                }
            }
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, blocks);
            out
        })
        .collect();

    let mut c = vec![f16::ZERO; m * n];
    for (block, values) in column_blocks.iter().enumerate() {
        let col0 = block * COLUMN_BLOCK;
        let width = values.len() / m.max(1);
        for (row, chunk) in values.chunks_exact(width.max(1)).enumerate().take(m) {
            c[row * n + col0..row * n + col0 + width].copy_from_slice(chunk);
        }
    }
    c
}

/// Dot products of up to [`ROW_BLOCK`] rows of A (`a`, `rows × k`) with one row of each weight
/// matrix, each accumulated in f32 over [`LANES`] interleaved partial sums.
fn dot_block<const W: usize>(a: &[f32], k: usize, weight_rows: [&[f32]; W]) -> [[f32; W]; ROW_BLOCK] {
    let mut sums = [[[0f32; LANES]; W]; ROW_BLOCK];
    let rows = a.len() / k;
    let mut a_rows: [&[f32]; ROW_BLOCK] = [&[]; ROW_BLOCK];
    for (r, slot) in a_rows.iter_mut().enumerate() {
        // Short blocks repeat their last row; the extra sums are discarded.
        *slot = &a[r.min(rows - 1) * k..(r.min(rows - 1) + 1) * k];
    }
    for c in 0..k / LANES {
        for r in 0..ROW_BLOCK {
            let x = &a_rows[r][c * LANES..(c + 1) * LANES];
            for w in 0..W {
                let y = &weight_rows[w][c * LANES..(c + 1) * LANES];
                for l in 0..LANES {
                    sums[r][w][l] += x[l] * y[l];
                }
            }
        }
    }
    std::array::from_fn(|r| std::array::from_fn(|w| sums[r][w].iter().sum()))
}

/// The plain GEMM evaluated in f64 (products, sums), rounded once to fp16. Slow: for checking
/// [`gemm`] on small shapes.
pub fn gemm_f64(a: &NvFp4Matrix, b: &NvFp4Matrix) -> Result<Vec<f16>> {
    if b.k() != a.k() {
        return Err(Error::ShapeMismatch("A and B must share K".into()));
    }
    let (m, n, k) = (a.rows(), b.rows(), a.k());
    let decode = |x: &NvFp4Matrix| -> Vec<f64> { x.dequantize_f32().into_iter().map(f64::from).collect() };
    let (a, b) = (decode(a), decode(b));
    let mut c = vec![f16::ZERO; m * n];
    c.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, c_row)| {
        for (j, out) in c_row.iter_mut().enumerate() {
            let dot: f64 = (0..k).map(|x| a[i * k + x] * b[j * k + x]).sum();
            *out = f16::from_f64(dot);
        }
    });
    Ok(c)
}

/// The same function evaluated in f64 (products, sums, SiLU), rounded once to fp16. Slow: for checking [`dual_gemm`] on small shapes.
pub fn dual_gemm_f64(a: &NvFp4Matrix, b1: &NvFp4Matrix, b2: &NvFp4Matrix) -> Result<Vec<f16>> {
    let DualGemmShape { m, n, k } = DualGemmShape::of(a, b1, b2)?;
    let decode = |x: &NvFp4Matrix| -> Vec<f64> { x.dequantize_f32().into_iter().map(f64::from).collect() };
    let (a, b1, b2) = (decode(a), decode(b1), decode(b2));
    let mut c = vec![f16::ZERO; m * n];
    c.par_chunks_mut(n).enumerate().for_each(|(i, c_row)| {
        let a_row = &a[i * k..(i + 1) * k];
        for (j, out) in c_row.iter_mut().enumerate() {
            let dot = |b: &[f64]| {
                a_row
                    .iter()
                    .zip(&b[j * k..(j + 1) * k])
                    .map(|(x, y)| x * y)
                    .sum::<f64>()
            };
            let (gate, up) = (dot(&b1), dot(&b2));
            *out = f16::from_f64(gate / (1.0 + (-gate).exp()) * up);
        }
    });
    Ok(c)
}

/// An element-wise tolerance `|out − ref| ≤ atol + rtol · |ref|`; NaN and ±inf must match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub atol: f32,
    /// Relative part.
    pub rtol: f32,
}

/// The task's tolerance: rtol = atol = 1e-3.
pub const TASK_TOLERANCE: Tolerance = Tolerance {
    atol: 1e-3,
    rtol: 1e-3,
};

/// The element that misses its tolerance by the largest factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorstElement {
    /// Row of C.
    pub row: usize,
    /// Column of C.
    pub col: usize,
    /// The checked value.
    pub got: f32,
    /// The reference value.
    pub expected: f32,
    /// `|got − expected| / (atol + rtol·|expected|)`; above 1 fails, infinite for NaN/inf mismatch.
    pub ratio: f32,
}

/// Result of comparing an output with a reference.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// Elements compared.
    pub elements: usize,
    /// Elements outside the tolerance.
    pub mismatches: usize,
    /// The element with the largest error ratio (`None` only for empty outputs).
    pub worst: Option<WorstElement>,
}

impl CheckReport {
    /// True when every element is within the tolerance.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.passed() { "pass" } else { "FAIL" };
        write!(
            f,
            "{verdict}: {} of {} elements outside tolerance",
            self.mismatches, self.elements
        )?;
        if let Some(w) = self.worst {
            write!(
                f,
                "; worst at (row {}, col {}): got {:e}, expected {:e}, error {:.3} of the allowed",
                w.row, w.col, w.got, w.expected, w.ratio
            )?;
        }
        Ok(())
    }
}

/// Compares `out` with `reference` (both `rows × cols` row-major fp16) under `tolerance`.
pub fn check(out: &[f16], reference: &[f16], cols: usize, tolerance: Tolerance) -> Result<CheckReport> {
    if out.len() != reference.len() {
        return Err(Error::BufferLength {
            arg: "out",
            expected: reference.len(),
            got: out.len(),
        });
    }
    if cols == 0 || !out.len().is_multiple_of(cols) {
        return Err(Error::invalid("cols", "must divide the number of elements", cols));
    }
    let mut report = CheckReport {
        elements: out.len(),
        mismatches: 0,
        worst: None,
    };
    for (index, (&got, &expected)) in out.iter().zip(reference).enumerate() {
        let (got, expected) = (got.to_f32(), expected.to_f32());
        let ratio = if got.is_nan() || expected.is_nan() || got.is_infinite() || expected.is_infinite() {
            let same = (got.is_nan() && expected.is_nan()) || got == expected;
            if same { 0.0 } else { f32::INFINITY }
        } else {
            (got - expected).abs() / (tolerance.atol + tolerance.rtol * expected.abs())
        };
        if ratio > 1.0 {
            report.mismatches += 1;
        }
        if report.worst.is_none_or(|w| ratio > w.ratio) {
            let (row, col) = (index / cols, index % cols);
            report.worst = Some(WorstElement {
                row,
                col,
                got,
                expected,
                ratio,
            });
        }
    }
    Ok(report)
}
