//! CPU reference of `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)`, and the task's tolerance check.
//!
//! [`dual_gemm`] decodes every operand exactly (`e2m1 · scale` is exact in f32), accumulates both
//! products in f32 on all cores, applies the global scales once to each sum
//! (`alpha = g_A · g_B`), computes SiLU and the product in f32 and rounds once to fp16 — the
//! reference harness's arithmetic. [`dual_gemm_f64`] is a plain f64 triple loop that checks it.

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
    let DualGemmShape { m, n, k } = DualGemmShape::of(a, b1, b2)?;
    let alpha_gate = a.global_scale().unwrap_or(1.0) * b1.global_scale().unwrap_or(1.0);
    let alpha_up = a.global_scale().unwrap_or(1.0) * b2.global_scale().unwrap_or(1.0);
    let mut a_rows = vec![0f32; m * k];
    a_rows
        .par_chunks_mut(k)
        .enumerate()
        .for_each(|(r, row)| a.decode_row_unscaled(r, row));

    let blocks = n.div_ceil(COLUMN_BLOCK);
    let done = AtomicUsize::new(0);
    let column_blocks: Vec<Vec<f16>> = (0..blocks)
        .into_par_iter()
        .map(|block| {
            let cols = block * COLUMN_BLOCK..((block + 1) * COLUMN_BLOCK).min(n);
            let width = cols.len();
            let mut gate_rows = vec![0f32; width * k];
            let mut up_rows = vec![0f32; width * k];
            for (j, col) in cols.clone().enumerate() {
                b1.decode_row_unscaled(col, &mut gate_rows[j * k..(j + 1) * k]);
                b2.decode_row_unscaled(col, &mut up_rows[j * k..(j + 1) * k]);
            }
            let mut out = vec![f16::ZERO; m * width];
            for i0 in (0..m).step_by(ROW_BLOCK) {
                let rows = ROW_BLOCK.min(m - i0);
                for j in 0..width {
                    let (gate_row, up_row) = (&gate_rows[j * k..(j + 1) * k], &up_rows[j * k..(j + 1) * k]);
                    for (r, (gate, up)) in dot_block(&a_rows[i0 * k..(i0 + rows) * k], k, gate_row, up_row)
                        .into_iter()
                        .take(rows)
                        .enumerate()
                    {
                        out[(i0 + r) * width + j] = f16::from_f32(silu_mul(alpha_gate * gate, alpha_up * up));
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
        let width = values.len() / m;
        for (row, chunk) in values.chunks_exact(width).enumerate() {
            c[row * n + col0..row * n + col0 + width].copy_from_slice(chunk);
        }
    }
    Ok(c)
}

/// Dot products of up to [`ROW_BLOCK`] rows of A (`a`, `rows × k`) with one row of B1 and one of
/// B2, each accumulated in f32 over [`LANES`] interleaved partial sums.
fn dot_block(a: &[f32], k: usize, gate_row: &[f32], up_row: &[f32]) -> [(f32, f32); ROW_BLOCK] {
    let mut gate = [[0f32; LANES]; ROW_BLOCK];
    let mut up = [[0f32; LANES]; ROW_BLOCK];
    let rows = a.len() / k;
    let mut a_rows: [&[f32]; ROW_BLOCK] = [&[]; ROW_BLOCK];
    for (r, slot) in a_rows.iter_mut().enumerate() {
        // Short blocks repeat their last row; the extra sums are discarded.
        *slot = &a[r.min(rows - 1) * k..(r.min(rows - 1) + 1) * k];
    }
    for (c, (g, u)) in gate_row
        .chunks_exact(LANES)
        .zip(up_row.chunks_exact(LANES))
        .enumerate()
    {
        for r in 0..ROW_BLOCK {
            let x = &a_rows[r][c * LANES..(c + 1) * LANES];
            for l in 0..LANES {
                gate[r][l] += x[l] * g[l];
                up[r][l] += x[l] * u[l];
            }
        }
    }
    std::array::from_fn(|r| (gate[r].iter().sum(), up[r].iter().sum()))
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
