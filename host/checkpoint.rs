//! NVFP4 checkpoints → [`NvFp4Matrix`]: the linear layers of NVIDIA ModelOpt (`quant_algo:
//! NVFP4`) and compressed-tensors (`format: nvfp4-pack-quantized`) safetensors files.
//!
//! Per layer `P` (e.g. `model.layers.0.mlp.gate_proj`):
//!
//! | | ModelOpt | compressed-tensors |
//! | --- | --- | --- |
//! | packed e2m1, `N × K/2` u8 | `P.weight` | `P.weight_packed` |
//! | e4m3 block scales, row-major `N × K/16` | `P.weight_scale` | `P.weight_scale` |
//! | weight global scale (f32) | `P.weight_scale_2`, multiplies | `P.weight_global_scale`, divides |
//! | activation global scale (f32, optional) | `P.input_scale`, multiplies | `P.input_global_scale`, divides |
//!
//! The packed bytes are the library's (even column in the low nibble); the row-major scales are
//! permuted into the blocked layout ([`NvFp4Matrix::from_plain_scales`]); a dividing global
//! scale `g` becomes the multiplying `f32(1 / g)`. Every stored byte is kept. The Python
//! package's `nvfp4.checkpoint` reads the same formats and is checked against both packages'
//! own dequantization on checkpoints they write (`bindings/python/tests/test_checkpoint.py`).

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::error::{Error, Result};
use crate::matrix::NvFp4Matrix;

/// The format of a checkpoint's NVFP4 layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointFormat {
    /// NVIDIA ModelOpt's export: global scales that multiply.
    ModelOpt,
    /// compressed-tensors' `nvfp4-pack-quantized`: global scales that divide.
    CompressedTensors,
}

/// One NVFP4 linear layer of a checkpoint.
#[derive(Clone, Debug)]
pub struct CheckpointLinear {
    /// The weight, `out_features × in_features`, with its (multiplying) global scale.
    pub weight: NvFp4Matrix,
    /// The activations' static global scale (multiplying), where the checkpoint has one.
    pub input_scale: Option<f32>,
    /// Where it came from.
    pub format: CheckpointFormat,
}

/// The format of layer `prefix` in `tensors`, from its tensors' names.
pub fn detect(tensors: &SafeTensors, prefix: &str) -> Result<CheckpointFormat> {
    let has = |suffix: &str| tensors.tensor(&format!("{prefix}.{suffix}")).is_ok();
    if has("weight_packed") {
        Ok(CheckpointFormat::CompressedTensors)
    } else if has("weight") && has("weight_scale_2") {
        Ok(CheckpointFormat::ModelOpt)
    } else {
        Err(Error::invalid(
            "prefix",
            "must name an NVFP4 layer (`weight_packed`, or `weight` with `weight_scale_2`)",
            prefix,
        ))
    }
}

/// Loads layer `prefix` (see the module doc for the tensors read).
pub fn load_linear(tensors: &SafeTensors, prefix: &str) -> Result<CheckpointLinear> {
    let format = detect(tensors, prefix)?;
    let tensor = |suffix: &str| -> Result<TensorView<'_>> {
        tensors
            .tensor(&format!("{prefix}.{suffix}"))
            .map_err(|e| Error::ShapeMismatch(format!("`{prefix}.{suffix}`: {e}")))
    };
    let data_name = match format {
        CheckpointFormat::ModelOpt => "weight",
        CheckpointFormat::CompressedTensors => "weight_packed",
    };
    let data = tensor(data_name)?;
    let [rows, half_k] = matrix_shape(prefix, data_name, &data, Dtype::U8)?;
    let k = 2 * half_k;
    if k % 16 != 0 {
        return Err(Error::ShapeMismatch(format!(
            "`{prefix}.{data_name}`: K = {k} is not a multiple of 16"
        )));
    }
    let scales = tensor("weight_scale")?;
    let scale_shape = matrix_shape(prefix, "weight_scale", &scales, Dtype::F8_E4M3)?;
    if scale_shape != [rows, k / 16] {
        return Err(Error::ShapeMismatch(format!(
            "`{prefix}.weight_scale` is {:?}, the weight needs [{rows}, {}]",
            scale_shape,
            k / 16
        )));
    }
    let global = |suffix: &str| -> Result<Option<f32>> {
        let Ok(view) = tensors.tensor(&format!("{prefix}.{suffix}")) else {
            return Ok(None);
        };
        let value = scalar_f32(prefix, suffix, &view)?;
        let multiplying = match format {
            CheckpointFormat::ModelOpt => value,
            CheckpointFormat::CompressedTensors => 1.0 / value,
        };
        if !multiplying.is_finite() {
            return Err(Error::invalid(
                "checkpoint",
                format!("`{prefix}.{suffix}` must have a finite f32 reciprocal"),
                value,
            ));
        }
        Ok(Some(multiplying))
    };
    let (weight_global, input_global) = match format {
        CheckpointFormat::ModelOpt => (global("weight_scale_2")?, global("input_scale")?),
        CheckpointFormat::CompressedTensors => {
            (global("weight_global_scale")?, global("input_global_scale")?)
        }
    };
    let weight_global = weight_global
        .ok_or_else(|| Error::invalid("checkpoint", "has no weight global scale for the layer", prefix))?;
    let weight =
        NvFp4Matrix::from_plain_scales(rows, k, data.data().to_vec(), scales.data(), Some(weight_global))?;
    Ok(CheckpointLinear {
        weight,
        input_scale: input_global,
        format,
    })
}

/// The tensors of `weight` (and `input_scale`) as ModelOpt stores layer `prefix`: owned
/// `(name, dtype, shape, bytes)` for [`safetensors::serialize`] (for writing checkpoints the
/// loader and other tools read).
pub fn modelopt_tensors(
    prefix: &str,
    weight: &NvFp4Matrix,
    input_scale: Option<f32>,
) -> Vec<(String, Dtype, Vec<usize>, Vec<u8>)> {
    let mut out = vec![
        (
            format!("{prefix}.weight"),
            Dtype::U8,
            vec![weight.rows(), weight.k() / 2],
            weight.data().to_vec(),
        ),
        (
            format!("{prefix}.weight_scale"),
            Dtype::F8_E4M3,
            vec![weight.rows(), weight.k() / 16],
            weight.plain_scales(),
        ),
        (
            format!("{prefix}.weight_scale_2"),
            Dtype::F32,
            vec![],
            weight.global_scale().unwrap_or(1.0).to_le_bytes().to_vec(),
        ),
    ];
    if let Some(scale) = input_scale {
        out.push((
            format!("{prefix}.input_scale"),
            Dtype::F32,
            vec![],
            scale.to_le_bytes().to_vec(),
        ));
    }
    out
}

/// The shape of a 2-D tensor of `dtype`.
fn matrix_shape(prefix: &str, name: &str, view: &TensorView, dtype: Dtype) -> Result<[usize; 2]> {
    match view.shape() {
        &[rows, columns] if view.dtype() == dtype => Ok([rows, columns]),
        shape => Err(Error::ShapeMismatch(format!(
            "`{prefix}.{name}`: must be 2-D {dtype:?} (got {:?} {shape:?})",
            view.dtype()
        ))),
    }
}

/// A one-element f32 tensor's value (finite and positive).
fn scalar_f32(prefix: &str, name: &str, view: &TensorView) -> Result<f32> {
    let bytes = view.data();
    if view.dtype() != Dtype::F32 || bytes.len() != 4 {
        return Err(Error::ShapeMismatch(format!(
            "`{prefix}.{name}`: must hold one f32 (got {:?} {:?})",
            view.dtype(),
            view.shape()
        )));
    }
    let value = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::invalid(
            "checkpoint",
            format!("`{prefix}.{name}` must be finite and positive"),
            value,
        ))
    }
}
