//! The rules the ops' tensors must follow, checked here, in Rust, before any unsafe launch: the
//! Python layer only gathers each tensor's metadata ([`Tensor`]) and passes it on. A broken rule
//! is a [`Rejection`] naming the argument, the rule and what was given (a `ValueError` in
//! Python).

use std::fmt::Display;

use nvfp4::BlockedScales;
use nvfp4::gpu::HalfFormat;
use nvfp4::quantize::Element;
use pyo3::FromPyObject;

/// A tensor as the Python layer describes it: `(data_ptr, shape, strides (in elements), dtype
/// (`str(tensor.dtype)`), CUDA device index or -1 for any other device)`.
#[derive(FromPyObject, Debug, Clone)]
pub struct Tensor(pub u64, pub Vec<i64>, pub Vec<i64>, pub String, pub i64);

/// A broken rule, as the message the user sees.
#[derive(Debug)]
pub struct Rejection(pub String);

/// The result of a check.
pub type Checked<T> = Result<T, Rejection>;

fn fail<T>(arg: &str, rule: impl Display, got: impl Display) -> Checked<T> {
    Err(Rejection(format!("`{arg}`: {rule} (got {got})")))
}

/// A shape or stride list as Python prints a tuple.
fn tuple(values: &[i64]) -> String {
    match values {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            values.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

const PACKED: [&str; 2] = ["uint8", "float4_e2m1fn_x2"];
const SCALE_CODES: [&str; 2] = ["float8_e4m3fn", "uint8"];

impl Tensor {
    fn address(&self) -> u64 {
        self.0
    }

    fn shape(&self) -> &[i64] {
        &self.1
    }

    /// The dtype's name without the `torch.` prefix.
    fn dtype(&self) -> &str {
        self.3.strip_prefix("torch.").unwrap_or(&self.3)
    }

    /// PyTorch's `is_contiguous`: row-major strides, dimensions of size 1 (and empty tensors)
    /// excepted.
    fn contiguous(&self) -> bool {
        if self.1.contains(&0) {
            return true;
        }
        let mut expected = 1;
        for (&size, &stride) in self.1.iter().zip(&self.2).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size;
        }
        true
    }

    fn dims<const N: usize>(&self, arg: &str, rule: &str) -> Checked<[usize; N]> {
        match <[i64; N]>::try_from(self.shape()) {
            Ok(dims) if dims.iter().all(|&d| d >= 0) => Ok(dims.map(|d| d as usize)),
            _ => fail(arg, rule, tuple(self.shape())),
        }
    }

    fn expect_contiguous(&self, arg: &str, rule: &str) -> Checked<()> {
        if self.contiguous() {
            Ok(())
        } else {
            fail(arg, rule, tuple(&self.2))
        }
    }
}

/// Packed e2m1 data, `rows × k/2` bytes, row-major; returns `(rows, k)`.
pub fn packed(arg: &str, t: &Tensor, rows: Option<usize>, k: Option<usize>) -> Checked<(usize, usize)> {
    if !PACKED.contains(&t.dtype()) {
        return fail(
            arg,
            "must be uint8 or float4_e2m1fn_x2 (two e2m1 values a byte)",
            &t.3,
        );
    }
    let [r, half_k] = t.dims(arg, "must be 2-D: rows × k/2 bytes")?;
    if let Some(rows) = rows.filter(|&rows| rows != r) {
        return fail(arg, format!("must have {rows} rows"), r);
    }
    if let Some(k) = k.filter(|&k| k != 2 * half_k) {
        return fail(arg, format!("must have k/2 = {} bytes a row", k / 2), half_k);
    }
    t.expect_contiguous(arg, "must be contiguous (row-major)")?;
    Ok((r, 2 * half_k))
}

/// The 2-D swizzled shape of the blocked scales of a `rows × k` matrix.
pub fn scale_shape(rows: usize, k: usize) -> [usize; 2] {
    [rows.div_ceil(128) * 128, (k / 16).div_ceil(4) * 4]
}

/// Blocked scales of a `rows × k` matrix: the 2-D swizzled form (contiguous) or the GPU MODE
/// harness's 6-D permuted view of the same bytes; returns their address.
pub fn scales(arg: &str, t: &Tensor, rows: usize, k: usize) -> Checked<u64> {
    if !SCALE_CODES.contains(&t.dtype()) {
        return fail(arg, "must be float8_e4m3fn or uint8 (e4m3 codes)", &t.3);
    }
    let expected = scale_shape(rows, k);
    let as_i64 = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    match t.shape().len() {
        2 => {
            if t.shape() != as_i64(&expected) {
                return fail(
                    arg,
                    format!("must be the 2-D swizzled form {}", tuple(&as_i64(&expected))),
                    tuple(t.shape()),
                );
            }
            t.expect_contiguous(arg, "must be contiguous (its bytes are the blocked layout)")?;
        }
        6 => {
            let (rest_m, rest_k) = (expected[0] / 128, expected[1] / 4);
            let shape6 = as_i64(&[32, 4, rest_m, 4, rest_k, 1]);
            if t.shape() != shape6 {
                return fail(
                    arg,
                    format!("as a 6-D permuted view must have shape {}", tuple(&shape6)),
                    tuple(t.shape()),
                );
            }
            let strides = [16, 4, rest_k as i64 * 512, 1, 512];
            if t.2[..5] != strides {
                return fail(
                    arg,
                    format!(
                        "as a 6-D permuted view must have strides {}+ (the blocked layout)",
                        tuple(&strides)
                    ),
                    tuple(&t.2),
                );
            }
        }
        _ => {
            return fail(
                arg,
                "must be the 2-D swizzled form or the 6-D permuted view",
                tuple(t.shape()),
            );
        }
    }
    Ok(t.address())
}

/// Values to quantize: `rows × k` float32 / float16 / bfloat16, rows ≥ 1, k a multiple of 16,
/// row-major; returns `(element, rows, k)`.
pub fn values(arg: &str, t: &Tensor) -> Checked<(Element, usize, usize)> {
    let element = match t.dtype() {
        "float32" => Element::F32,
        "float16" => Element::F16,
        "bfloat16" => Element::Bf16,
        _ => return fail(arg, "must be float32, float16 or bfloat16", &t.3),
    };
    let [rows, k] = t.dims(arg, "must be 2-D: rows × k")?;
    if !k.is_multiple_of(16) || rows == 0 {
        return fail(arg, "must have rows ≥ 1 and k a multiple of 16", tuple(t.shape()));
    }
    t.expect_contiguous(arg, "must be contiguous (row-major)")?;
    Ok((element, rows, k))
}

/// An output of `shape` and `dtype` (`float16` or `bfloat16`), contiguous; returns its format.
pub fn output(arg: &str, t: &Tensor, shape: [usize; 2], dtype: Option<&str>) -> Checked<HalfFormat> {
    let format = match t.dtype() {
        "float16" => HalfFormat::F16,
        "bfloat16" => HalfFormat::Bf16,
        _ => {
            return fail(
                arg,
                format!("must be {}", dtype.unwrap_or("float16 or bfloat16")),
                &t.3,
            );
        }
    };
    if let Some(dtype) = dtype.filter(|&d| d != t.dtype()) {
        return fail(arg, format!("must be torch.{dtype}"), &t.3);
    }
    let wanted = [shape[0] as i64, shape[1] as i64];
    if t.shape() != wanted {
        return fail(
            arg,
            format!("must have shape {}", tuple(&wanted)),
            tuple(t.shape()),
        );
    }
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok(format)
}

/// A contiguous 1-D tensor of `dtype`; returns its length.
pub fn vector(arg: &str, t: &Tensor, dtype: &str) -> Checked<[usize; 1]> {
    if t.dtype() != dtype {
        return fail(arg, format!("must be {dtype}"), &t.3);
    }
    let dims = t.dims::<1>(arg, "must be 1-D")?;
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok(dims)
}

/// Which of `dtypes` the tensor's dtype is (its index), or a rejection naming them all.
pub fn dtype_of(arg: &str, t: &Tensor, dtypes: &[&str]) -> Checked<usize> {
    match dtypes.iter().position(|&d| d == t.dtype()) {
        Some(i) => Ok(i),
        None => fail(arg, format!("must be one of {}", dtypes.join(", ")), &t.3),
    }
}

/// A contiguous 2-D tensor of `dtype` (`shape`'s `None` dimensions free); returns its dims.
pub fn matrix(arg: &str, t: &Tensor, dtype: &str, shape: [Option<usize>; 2]) -> Checked<[usize; 2]> {
    if t.dtype() != dtype {
        return fail(arg, format!("must be {dtype}"), &t.3);
    }
    let dims = t.dims::<2>(arg, "must be 2-D")?;
    if dims
        .iter()
        .zip(shape)
        .any(|(&d, want)| want.is_some_and(|w| w != d))
    {
        let want = shape.map(|d| d.map_or("any".to_string(), |d| d.to_string()));
        return fail(
            arg,
            format!("must have shape ({}, {})", want[0], want[1]),
            tuple(t.shape()),
        );
    }
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok(dims)
}

/// Stacked packed weights `groups × rows × k/2`; returns `(groups, rows)`.
pub fn stacked(
    arg: &str,
    t: &Tensor,
    groups: Option<usize>,
    rows: Option<usize>,
    k: usize,
) -> Checked<(usize, usize)> {
    if !PACKED.contains(&t.dtype()) {
        return fail(arg, "must be uint8 or float4_e2m1fn_x2", &t.3);
    }
    let [g, r, half_k] = t.dims(arg, "must be 3-D: groups × rows × k/2 bytes")?;
    if let Some(groups) = groups.filter(|&groups| groups != g) {
        return fail(arg, format!("must hold {groups} groups"), g);
    }
    if let Some(rows) = rows.filter(|&rows| rows != r) {
        return fail(arg, format!("must have {rows} rows a group"), r);
    }
    if 2 * half_k != k {
        return fail(arg, format!("must have k/2 = {} bytes a row", k / 2), half_k);
    }
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok((g, r))
}

/// Stacked blocked scales, `groups ×` the 2-D swizzled form of `rows × k`; returns their address.
pub fn stacked_scales(arg: &str, t: &Tensor, groups: usize, rows: usize, k: usize) -> Checked<u64> {
    if !SCALE_CODES.contains(&t.dtype()) {
        return fail(arg, "must be float8_e4m3fn or uint8", &t.3);
    }
    let [sr, sc] = scale_shape(rows, k);
    let expected = [groups as i64, sr as i64, sc as i64];
    if t.shape() != expected {
        return fail(
            arg,
            format!(
                "must have shape {} (each group's 2-D swizzled scales)",
                tuple(&expected)
            ),
            tuple(t.shape()),
        );
    }
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok(t.address())
}

/// `groups + 1` int32 (or uint32) offsets; returns their address.
pub fn offsets(arg: &str, t: &Tensor, groups: usize) -> Checked<u64> {
    if !["int32", "uint32"].contains(&t.dtype()) {
        return fail(arg, "must be int32 (or uint32)", &t.3);
    }
    if t.shape() != [groups as i64 + 1] {
        return fail(
            arg,
            format!("must hold groups + 1 = {} offsets", groups + 1),
            tuple(t.shape()),
        );
    }
    t.expect_contiguous(arg, "must be contiguous")?;
    Ok(t.address())
}

/// Per-group float32 scales on the device, or none (address 0).
pub fn alphas(arg: &str, t: Option<&Tensor>, groups: usize) -> Checked<u64> {
    let Some(t) = t else { return Ok(0) };
    if t.dtype() != "float32" || t.shape() != [groups as i64] || !t.contiguous() {
        return fail(
            arg,
            format!("must be a contiguous float32 tensor of {groups} per-group scales"),
            format!("{} {}", t.3, tuple(t.shape())),
        );
    }
    Ok(t.address())
}

/// A dense op's α held in device memory: a float32 tensor of one element (shape `()` or
/// `(1,)`); its address, or 0 for none. Its value is the caller's to keep finite and positive
/// (the kernels read it when they run; nothing reads it back).
pub fn device_scale(arg: &str, t: Option<&Tensor>) -> Checked<u64> {
    let Some(t) = t else { return Ok(0) };
    if t.dtype() != "float32" || t.shape().len() > 1 || t.shape().iter().product::<i64>() != 1 {
        return fail(
            arg,
            "must be a number or a float32 tensor of one element (shape () or (1,))",
            format!("{} {}", t.3, tuple(t.shape())),
        );
    }
    Ok(t.address())
}

/// The operand rescale the sm_90a kernels multiply every α by (`2^28`; see the library's
/// `rules::SM90_OPERAND_RESCALE`).
const KERNEL_RESCALE: f32 = (1u32 << 28) as f32;

/// A scale (α or a global scale) as the kernels take it: positive and finite in f32, also
/// after the kernels' operand rescale (so at most ≈ 1.27e30), else exact zeros would come out
/// as NaN.
pub fn scale(arg: &str, value: f64) -> Checked<f32> {
    let single = value as f32;
    if !(value > 0.0 && single > 0.0 && (single * KERNEL_RESCALE).is_finite()) {
        return fail(
            arg,
            format!(
                "must be finite and positive as an f32, at most {:.3e} (the kernels rescale by 2^28)",
                f32::MAX / KERNEL_RESCALE
            ),
            value,
        );
    }
    Ok(single)
}

/// The one CUDA device of the named tensors (`None`: skipped), checked after their structure.
pub fn device(named: &[(&str, Option<&Tensor>)]) -> Checked<usize> {
    let mut found: Option<i64> = None;
    for &(arg, t) in named {
        let Some(t) = t else { continue };
        if t.4 < 0 {
            return fail(arg, "must be a CUDA tensor", "another device");
        }
        match found {
            None => found = Some(t.4),
            Some(d) if d != t.4 => {
                return fail(
                    arg,
                    format!("must be on cuda:{d}, as the first operand"),
                    format!("cuda:{}", t.4),
                );
            }
            Some(_) => {}
        }
    }
    match found {
        Some(d) => Ok(d as usize),
        None => Err(Rejection("no tensor given".into())),
    }
}

/// Bytes of the blocked scales of a `rows × k` matrix.
pub fn scale_bytes(rows: usize, k: usize) -> usize {
    BlockedScales::new(rows, k).len()
}
