//! Quantization of f32 / f16 / bf16 rows to NVFP4.
//!
//! Per 16-element block: `scale = e4m3(amax / 6 / global)` (round to nearest even, saturating),
//! then every value becomes `e2m1(x / (scale · global))` (nearest even, saturating at ±6). The
//! global scale is chosen so that the largest block scale is 448, the top of the e4m3 range
//! (`global = amax(tensor) / (6 · 448)`: [`GlobalScale::Auto`], the default), fixed, or none.
//!
//! Without a suitable global scale, e4m3 block scales cover only part of the f32 range: a block
//! whose `amax / 6 / global` rounds to e4m3 zero (below 2⁻¹⁰, so `amax < 0.0059 · global`)
//! becomes all zeros (*underflow*), and a block with `amax / 6 / global > 448` is clipped to
//! `±6 · 448 · global` (*saturation*). [`NvFp4Matrix::quantize_with_stats`] counts both, so a
//! caller can tell when its choice of global scale lost information.

//!
//! The same quantization runs on the GPU (`Gpu::quantize`, `Gpu::quantize_into`,
//! `Gpu::quantize_raw`), bit for bit: both sides share one codec (`nvfp4_kernel::codec`).

use half::{bf16, f16};
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K};

use crate::codec::{E2M1_MAX, E4M3_MAX, auto_global_scale, e4m3_to_f32, f32_to_e2m1, f32_to_e4m3};
use crate::error::{Error, Result};
use crate::matrix::{NvFp4Matrix, validate_global_scale, validate_shape};

mod gpu;
pub(crate) use gpu::refuse_auto;
pub use gpu::{DeviceQuantizeInput, Element, QuantizeChecks};

/// How the fp32 global scale of a quantized matrix is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum GlobalScale {
    /// No global scale: block scales alone must cover the values. Blocks with a largest
    /// magnitude below ≈ 0.0059 (6 · 2⁻¹⁰) flush to zero and values above 2688 (6 · 448) are
    /// clipped; [`NvFp4Matrix::quantize_with_stats`] counts such blocks.
    None,
    /// `amax / (6 · 448)`, so the largest block scale is 448 and no block saturates (1 when all
    /// values are 0 or that quotient underflows: [`crate::codec::auto_global_scale`]). The
    /// default.
    #[default]
    Auto,
    /// This value (finite, positive).
    Fixed(f32),
}

/// What quantization did to a matrix's blocks (16 values each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuantizationStats {
    /// Blocks in the matrix.
    pub blocks: usize,
    /// Blocks whose values were all zero.
    pub zero_blocks: usize,
    /// Blocks with a non-zero value whose scale rounded to zero: every value became 0.
    pub underflowed_blocks: usize,
    /// Blocks whose scale saturated at 448: their largest values were clipped.
    pub saturated_blocks: usize,
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
    /// Quantizes a row-major `rows × k` matrix. Rejects NaN and infinities. See
    /// [`Self::quantize_with_stats`] for what happened to its blocks.
    pub fn quantize<T: QuantizeInput>(
        rows: usize,
        k: usize,
        values: &[T],
        global: GlobalScale,
    ) -> Result<Self> {
        Self::quantize_with_stats(rows, k, values, global).map(|(m, _)| m)
    }

    /// [`Self::quantize`], also counting the blocks that were all zero, that underflowed to zero
    /// and that saturated (see the module doc).
    pub fn quantize_with_stats<T: QuantizeInput>(
        rows: usize,
        k: usize,
        values: &[T],
        global: GlobalScale,
    ) -> Result<(Self, QuantizationStats)> {
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
                Some(auto_global_scale(amax))
            }
        };
        let g = global_scale.unwrap_or(1.0);
        let layout = BlockedScales::new(rows, k);
        let mut stats = QuantizationStats {
            blocks: rows * k / SCALE_BLOCK_K,
            ..QuantizationStats::default()
        };
        let mut data = vec![0u8; rows * k / 2];
        let mut scales = vec![0u8; layout.len()];
        for (block, (chunk, packed)) in values
            .chunks_exact(SCALE_BLOCK_K)
            .zip(data.chunks_exact_mut(SCALE_BLOCK_K / 2))
            .enumerate()
        {
            let amax = chunk.iter().fold(0f32, |m, v| m.max(v.to_f32().abs()));
            let wanted = amax / E2M1_MAX / g;
            let scale_code = f32_to_e4m3(wanted);
            if amax == 0.0 {
                stats.zero_blocks += 1;
            } else if e4m3_to_f32(scale_code) == 0.0 {
                stats.underflowed_blocks += 1;
            } else if wanted > E4M3_MAX {
                stats.saturated_blocks += 1;
            }
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
        Ok((Self::from_parts(rows, k, data, scales, global_scale)?, stats))
    }
}
