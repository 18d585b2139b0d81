//! Quantization of f32 / f16 / bf16 rows to NVFP4.
//!
//! Per 16-element block: `scale = e4m3(amax / 6 / global)` (round to nearest even, saturating),
//! then every value becomes `e2m1(x / (scale · global))` (nearest even, saturating at ±6). The
//! global scale is none, fixed, or chosen so that the largest block scale is 448, the top of the
//! e4m3 range: `global = amax(tensor) / (6 · 448)`.

use half::{bf16, f16};
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K};

use crate::codec::{E2M1_MAX, E4M3_MAX, e4m3_to_f32, f32_to_e2m1, f32_to_e4m3};
use crate::error::{Error, Result};
use crate::matrix::{NvFp4Matrix, validate_global_scale, validate_shape};

/// How the fp32 global scale of a quantized matrix is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GlobalScale {
    /// No global scale: block scales alone must cover the values (|x| ≤ 6 · 448).
    None,
    /// `amax / (6 · 448)`, so block scales use the whole e4m3 range (1 when all values are 0).
    Auto,
    /// This value (finite, positive).
    Fixed(f32),
}

/// Element types that can be quantized.
pub trait QuantizeInput: Copy + Send + Sync {
    /// The value as f32 (exact for f16 and bf16).
    fn to_f32(self) -> f32;
}

impl QuantizeInput for f32 {
    fn to_f32(self) -> f32 {
        self
    }
}

impl QuantizeInput for f16 {
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
}

impl QuantizeInput for bf16 {
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

impl NvFp4Matrix {
    /// Quantizes a row-major `rows × k` matrix. Rejects NaN and infinities.
    pub fn quantize<T: QuantizeInput>(
        rows: usize,
        k: usize,
        values: &[T],
        global: GlobalScale,
    ) -> Result<Self> {
        validate_shape(rows, k)?;
        if values.len() != rows * k {
            return Err(Error::BufferLength {
                arg: "values",
                expected: rows * k,
                got: values.len(),
            });
        }
        if let Some((index, v)) = values
            .iter()
            .map(|v| v.to_f32())
            .enumerate()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(Error::NonFinite {
                arg: "values",
                index,
                value: v,
            });
        }
        let global_scale = match global {
            GlobalScale::None => None,
            GlobalScale::Fixed(g) => {
                validate_global_scale(Some(g))?;
                Some(g)
            }
            GlobalScale::Auto => {
                let amax = values.iter().fold(0f32, |m, v| m.max(v.to_f32().abs()));
                Some(if amax > 0.0 {
                    amax / (E2M1_MAX * E4M3_MAX)
                } else {
                    1.0
                })
            }
        };
        let g = global_scale.unwrap_or(1.0);
        let layout = BlockedScales::new(rows, k);
        let mut data = vec![0u8; rows * k / 2];
        let mut scales = vec![0u8; layout.len()];
        for (block, (chunk, packed)) in values
            .chunks_exact(SCALE_BLOCK_K)
            .zip(data.chunks_exact_mut(SCALE_BLOCK_K / 2))
            .enumerate()
        {
            let amax = chunk.iter().fold(0f32, |m, v| m.max(v.to_f32().abs()));
            let scale_code = f32_to_e4m3(amax / E2M1_MAX / g);
            let (row, col) = (block / (k / SCALE_BLOCK_K), block % (k / SCALE_BLOCK_K));
            scales[layout.offset(row, col)] = scale_code;
            let denominator = e4m3_to_f32(scale_code) * g;
            let encode = |x: T| {
                if denominator > 0.0 {
                    f32_to_e2m1(x.to_f32() / denominator)
                } else {
                    0
                }
            };
            for (byte, pair) in packed.iter_mut().zip(chunk.chunks_exact(2)) {
                *byte = encode(pair[0]) | (encode(pair[1]) << 4);
            }
        }
        Self::from_parts(rows, k, data, scales, global_scale)
    }
}
