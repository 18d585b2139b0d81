//! [`NvFp4Matrix`]: a row-major (K-major) NVFP4 matrix in host memory.
//!
//! Data: `rows × k/2` bytes, two e2m1 codes per byte, the lower K index in the low nibble.
//! Scales: one e4m3fn per 16 K elements of a row, in the blocked layout of
//! [`nvfp4_kernel::layout::BlockedScales`] (the cuBLAS / CUTLASS / tcgen05 layout, padding
//! included). Optional fp32 global scale: the value of element `(r, c)` is
//! `e2m1 · scale · global_scale`.

use half::{bf16, f16};
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K};

use crate::codec::{e2m1_to_f32, e4m3_to_f32};
use crate::error::{Error, Result};

/// A host NVFP4 matrix: packed e2m1 data, blocked e4m3 scales and an optional global scale.
#[derive(Clone, Debug, PartialEq)]
pub struct NvFp4Matrix {
    rows: usize,
    k: usize,
    data: Vec<u8>,
    scales: Vec<u8>,
    global_scale: Option<f32>,
}

/// Checks the shape rules shared by every NVFP4 matrix: `rows ≥ 1`, `k` a positive multiple of 16
/// (one scale block), and sizes that fit in memory.
pub(crate) fn validate_shape(rows: usize, k: usize) -> Result<()> {
    if rows == 0 {
        return Err(Error::invalid("rows", "must be at least 1", rows));
    }
    if k == 0 || !k.is_multiple_of(SCALE_BLOCK_K) {
        return Err(Error::invalid(
            "k",
            "must be a positive multiple of 16 (one scale block)",
            k,
        ));
    }
    if rows.checked_mul(k).is_none_or(|n| n > isize::MAX as usize) {
        return Err(Error::invalid(
            "rows × k",
            "must fit in memory",
            format!("{rows} × {k}"),
        ));
    }
    Ok(())
}

pub(crate) fn validate_global_scale(global_scale: Option<f32>) -> Result<()> {
    match global_scale {
        Some(g) if !(g.is_finite() && g > 0.0) => {
            Err(Error::invalid("global_scale", "must be finite and positive", g))
        }
        _ => Ok(()),
    }
}

impl NvFp4Matrix {
    /// Builds a matrix from packed data and scales already in the blocked layout.
    pub fn from_parts(
        rows: usize,
        k: usize,
        data: Vec<u8>,
        scales: Vec<u8>,
        global_scale: Option<f32>,
    ) -> Result<Self> {
        validate_shape(rows, k)?;
        validate_global_scale(global_scale)?;
        let layout = BlockedScales::new(rows, k);
        if data.len() != rows * k / 2 {
            return Err(Error::BufferLength {
                arg: "data",
                expected: rows * k / 2,
                got: data.len(),
            });
        }
        if scales.len() != layout.len() {
            return Err(Error::BufferLength {
                arg: "scales",
                expected: layout.len(),
                got: scales.len(),
            });
        }
        Ok(Self {
            rows,
            k,
            data,
            scales,
            global_scale,
        })
    }

    /// Builds a matrix from packed data and scales in the plain layout (`rows × k/16`, row-major).
    /// Padding of the blocked layout is filled with zero scales.
    pub fn from_plain_scales(
        rows: usize,
        k: usize,
        data: Vec<u8>,
        plain_scales: &[u8],
        global_scale: Option<f32>,
    ) -> Result<Self> {
        validate_shape(rows, k)?;
        let cols = k / SCALE_BLOCK_K;
        if plain_scales.len() != rows * cols {
            return Err(Error::BufferLength {
                arg: "plain_scales",
                expected: rows * cols,
                got: plain_scales.len(),
            });
        }
        let layout = BlockedScales::new(rows, k);
        let mut scales = vec![0u8; layout.len()];
        for (row, row_scales) in plain_scales.chunks_exact(cols).enumerate() {
            for (col, &s) in row_scales.iter().enumerate() {
                scales[layout.offset(row, col)] = s;
            }
        }
        Self::from_parts(rows, k, data, scales, global_scale)
    }

    /// Number of rows (M for A, N for B1/B2).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of fp4 elements per row (K).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Packed e2m1 data, `rows × k/2` bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// e4m3 scales in the blocked layout, padding included.
    pub fn scales(&self) -> &[u8] {
        &self.scales
    }

    /// The fp32 global scale, if any.
    pub fn global_scale(&self) -> Option<f32> {
        self.global_scale
    }

    /// The blocked layout of [`Self::scales`].
    pub fn scale_layout(&self) -> BlockedScales {
        BlockedScales::new(self.rows, self.k)
    }

    /// The scales in the plain layout: `rows × k/16`, row-major.
    pub fn plain_scales(&self) -> Vec<u8> {
        let cols = self.k / SCALE_BLOCK_K;
        let layout = self.scale_layout();
        (0..self.rows * cols)
            .map(|i| self.scales[layout.offset(i / cols, i % cols)])
            .collect()
    }

    /// Checks `row < rows` and `col < limit` (named `col_arg`).
    fn check_index(&self, row: usize, col: usize, col_arg: &'static str, limit: usize) -> Result<()> {
        if row >= self.rows {
            return Err(Error::invalid(
                "row",
                format!("must be below {} (the rows)", self.rows),
                row,
            ));
        }
        if col >= limit {
            return Err(Error::invalid(col_arg, format!("must be below {limit}"), col));
        }
        Ok(())
    }

    /// The e2m1 code of element `(row, col)`; an error names an index out of range.
    pub fn code(&self, row: usize, col: usize) -> Result<u8> {
        self.check_index(row, col, "col", self.k)?;
        let byte = self.data[row * self.k / 2 + col / 2];
        Ok(if col.is_multiple_of(2) {
            byte & 0xF
        } else {
            byte >> 4
        })
    }

    /// The e4m3 code of the scale of `row`, scale column `scale_col` (= k / 16); an error names
    /// an index out of range.
    pub fn scale_code(&self, row: usize, scale_col: usize) -> Result<u8> {
        self.check_index(row, scale_col, "scale_col", self.k / SCALE_BLOCK_K)?;
        Ok(self.scales[self.scale_layout().offset(row, scale_col)])
    }

    /// Row `row` decoded as `e2m1 · scale` in f32, *without* the global scale (exact), into
    /// `out` (`k` values). Kernels accumulate these products and apply the global scales once to
    /// the sum. An error names a row out of range or an `out` of the wrong length.
    pub fn decode_row_unscaled(&self, row: usize, out: &mut [f32]) -> Result<()> {
        self.check_index(row, 0, "col", self.k)?;
        if out.len() != self.k {
            return Err(Error::BufferLength {
                arg: "out",
                expected: self.k,
                got: out.len(),
            });
        }
        self.decode_row_unscaled_into(row, out);
        Ok(())
    }

    /// [`Self::decode_row_unscaled`] for callers that have checked `row` and `out`.
    pub(crate) fn decode_row_unscaled_into(&self, row: usize, out: &mut [f32]) {
        let layout = self.scale_layout();
        let bytes = &self.data[row * self.k / 2..(row + 1) * self.k / 2];
        for (block, (values, packed)) in out
            .chunks_exact_mut(SCALE_BLOCK_K)
            .zip(bytes.chunks_exact(SCALE_BLOCK_K / 2))
            .enumerate()
        {
            let scale = e4m3_to_f32(self.scales[layout.offset(row, block)]);
            for (pair, &byte) in values.chunks_exact_mut(2).zip(packed) {
                pair[0] = e2m1_to_f32(byte & 0xF) * scale;
                pair[1] = e2m1_to_f32(byte >> 4) * scale;
            }
        }
    }

    /// All elements as f32: `(e2m1 · scale) · global_scale`, one rounding (the product is exact).
    pub fn dequantize_f32(&self) -> Vec<f32> {
        let global = self.global_scale.unwrap_or(1.0);
        let mut out = vec![0f32; self.rows * self.k];
        for (row, values) in out.chunks_exact_mut(self.k).enumerate() {
            self.decode_row_unscaled_into(row, values);
            values.iter_mut().for_each(|v| *v *= global);
        }
        out
    }

    /// All elements as fp16: [`Self::dequantize_f32`] rounded to nearest even. The GPU
    /// dequantization kernel reproduces this bit for bit (NaN payloads aside).
    pub fn dequantize_f16(&self) -> Vec<f16> {
        self.dequantize_f32().into_iter().map(f16::from_f32).collect()
    }

    /// All elements as bf16: [`Self::dequantize_f32`] rounded to nearest even.
    pub fn dequantize_bf16(&self) -> Vec<bf16> {
        self.dequantize_f32().into_iter().map(bf16::from_f32).collect()
    }
}
