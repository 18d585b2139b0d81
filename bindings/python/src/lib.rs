//! `nvfp4._nvfp4`: the native module of the `nvfp4` Python package. Every function takes
//! device addresses, sizes, a device ordinal and a CUDA stream handle as integers (the Python
//! layer passes `tensor.data_ptr()`s and `torch.cuda.current_stream().cuda_stream`): nothing here
//! links or builds against PyTorch. Launches go through the library's caller-owned-memory API
//! (`NvFp4Ref::from_raw`, `launch_views`, `quantize_raw`, …): no allocation, no host↔device
//! copy, no synchronization, so they can be captured in a CUDA graph.
//!
//! One [`Device`] per ordinal holds the opened GPU (the device's primary context, which PyTorch
//! shares), the plans made so far (one per shape) and the quantizer's check words. Library
//! errors of the arguments become `ValueError`; CUDA and availability errors `RuntimeError`.

use std::collections::HashMap;
use std::sync::Mutex;

use nvfp4::dual_gemm::DualGemmPlan;
use nvfp4::gemm::{GemmPlan, GemmShape};
use nvfp4::gpu::{F16Mut, Gpu, HalfFormat, NvFp4Ref};
use nvfp4::grouped::{ContiguousAddresses, GroupedLayout, GroupedOp, GroupedPlan, UpWeights};
use nvfp4::quantize::{Element, QuantizeChecks};
use nvfp4::{DualGemmShape, Error, GlobalScale, NvFp4Matrix};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The key of a grouped plan: (gated, groups, rows, scale rows, n, k, w13 concatenated).
type GroupedKey = (bool, usize, usize, usize, usize, usize, bool);

/// One GPU as this process uses it.
struct Device {
    gpu: Gpu,
    /// The stream handle work is issued on now.
    stream: u64,
    dual: HashMap<(usize, usize, usize), DualGemmPlan>,
    gemm: HashMap<(usize, usize, usize), GemmPlan>,
    grouped: HashMap<GroupedKey, GroupedPlan>,
    checks: QuantizeChecks,
}

static DEVICES: Mutex<Vec<(usize, Device)>> = Mutex::new(Vec::new());

/// A library error as the Python exception that fits it.
fn to_py(error: Error) -> PyErr {
    match error {
        Error::InvalidArgument { .. }
        | Error::BufferLength { .. }
        | Error::ShapeMismatch(_)
        | Error::NonFinite { .. }
        | Error::DeviceOffsets { .. } => PyValueError::new_err(error.to_string()),
        _ => PyRuntimeError::new_err(error.to_string()),
    }
}

/// Runs `f` on device `ordinal` (opened on first use) with work issued on `stream`.
fn with_device<R>(
    ordinal: usize,
    stream: u64,
    f: impl FnOnce(&mut Device) -> nvfp4::Result<R>,
) -> PyResult<R> {
    let mut devices = DEVICES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let index = match devices.iter().position(|(o, _)| *o == ordinal) {
        Some(index) => index,
        None => {
            let gpu = Gpu::open(ordinal).map_err(to_py)?;
            let checks = gpu.quantize_checks().map_err(to_py)?;
            devices.push((
                ordinal,
                Device {
                    gpu,
                    stream: u64::MAX,
                    dual: HashMap::new(),
                    gemm: HashMap::new(),
                    grouped: HashMap::new(),
                    checks,
                },
            ));
            devices.len() - 1
        }
    };
    let device = &mut devices[index].1;
    if device.stream != stream {
        // SAFETY: the Python layer passes the current stream of the tensors' device, which
        // PyTorch keeps alive while work is queued on it.
        unsafe { device.gpu.set_borrowed_stream(stream) }.map_err(to_py)?;
        device.stream = stream;
    }
    f(device).map_err(to_py)
}

/// Whether a CUDA driver can be loaded.
#[pyfunction]
fn driver_available() -> bool {
    nvfp4::gpu::driver_available()
}

/// `(architecture, name, multiprocessors)` of device `ordinal` (opens it).
#[pyfunction]
fn device_info(ordinal: usize) -> PyResult<(String, String, u32)> {
    with_device(ordinal, 0, |d| {
        Ok((
            d.gpu.arch().name().to_string(),
            d.gpu.name().to_string(),
            d.gpu.multiprocessors(),
        ))
    })
}

/// Enqueues the quantization of `rows × k` values of `element` ("f32", "f16", "bf16") at
/// `values` into packed e2m1 at `data` and blocked e4m3 scales at `scales`, with an optional
/// fixed global scale.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn quantize(
    device: usize,
    stream: u64,
    element: &str,
    values: u64,
    rows: usize,
    k: usize,
    data: u64,
    scales: u64,
    global_scale: Option<f32>,
) -> PyResult<()> {
    let element = match element {
        "f32" => Element::F32,
        "f16" => Element::F16,
        "bf16" => Element::Bf16,
        other => {
            return Err(PyValueError::new_err(format!(
                "element must be f32, f16 or bf16, got {other}"
            )));
        }
    };
    let global = global_scale.map_or(GlobalScale::None, GlobalScale::Fixed);
    with_device(device, stream, |d| {
        // SAFETY: the Python layer checked the tensors' sizes, devices and contiguity.
        unsafe {
            d.gpu
                .quantize_raw(element, values, rows, k, data, scales, global, &mut d.checks)
        }
    })
}

/// Waits for the stream and returns the index of the first non-finite input of the last
/// quantization on `device`, or `None`.
#[pyfunction]
fn first_non_finite(device: usize, stream: u64) -> PyResult<Option<usize>> {
    with_device(device, stream, |d| d.checks.first_non_finite(&d.gpu))
}

/// Enqueues the dequantization of the NVFP4 matrix at `data`/`scales` (`rows × k`, optional
/// global scale) into `out` (`format` "f16" or "bf16").
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dequantize(
    device: usize,
    stream: u64,
    data: u64,
    scales: u64,
    rows: usize,
    k: usize,
    global_scale: Option<f32>,
    out: u64,
    format: &str,
) -> PyResult<()> {
    let format = match format {
        "f16" => HalfFormat::F16,
        "bf16" => HalfFormat::Bf16,
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be f16 or bf16, got {other}"
            )));
        }
    };
    with_device(device, stream, |d| {
        // SAFETY: the Python layer checked the tensors.
        unsafe {
            let m = NvFp4Ref::from_raw(data, scales, rows, k, global_scale)?;
            d.gpu.dequantize_raw(m, format, out)
        }
    })
}

/// Enqueues `out = silu(alpha_gate · a·b1ᵀ) ⊙ (alpha_up · a·b2ᵀ)` (fp16, `m × n`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dual_gemm(
    device: usize,
    stream: u64,
    a: (u64, u64),
    b1: (u64, u64),
    b2: (u64, u64),
    shape: (usize, usize, usize),
    alpha_gate: f32,
    alpha_up: f32,
    out: u64,
) -> PyResult<()> {
    let (m, n, k) = shape;
    with_device(device, stream, |d| {
        // SAFETY: the Python layer checked the tensors.
        let (a, b1, b2, out) = unsafe {
            (
                NvFp4Ref::from_raw(a.0, a.1, m, k, None)?,
                NvFp4Ref::from_raw(b1.0, b1.1, n, k, Some(alpha_gate))?,
                NvFp4Ref::from_raw(b2.0, b2.1, n, k, Some(alpha_up))?,
                F16Mut::from_raw(out, m * n)?,
            )
        };
        let plan = match d.dual.entry(shape) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(d.gpu.plan_dual_gemm(DualGemmShape { m, n, k })?)
            }
        };
        plan.launch_views(&d.gpu, a, b1, b2, out)
    })
}

/// Enqueues `out = alpha · a·bᵀ` (fp16, `m × n`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn gemm(
    device: usize,
    stream: u64,
    a: (u64, u64),
    b: (u64, u64),
    shape: (usize, usize, usize),
    alpha: f32,
    out: u64,
) -> PyResult<()> {
    let (m, n, k) = shape;
    with_device(device, stream, |d| {
        // SAFETY: the Python layer checked the tensors.
        let (a, b, out) = unsafe {
            (
                NvFp4Ref::from_raw(a.0, a.1, m, k, None)?,
                NvFp4Ref::from_raw(b.0, b.1, n, k, Some(alpha))?,
                F16Mut::from_raw(out, m * n)?,
            )
        };
        let plan = match d.gemm.entry(shape) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(d.gpu.plan_gemm(GemmShape { m, n, k })?)
            }
        };
        plan.launch_views(&d.gpu, a, b, out)
    })
}

/// Enqueues a contiguous-convention grouped launch: `gated` (dual: w13 `concatenated` or
/// separate up weights) or plain, over `groups` groups of a `rows`-token buffer.
/// `layout = (groups, rows, scale_rows, n, k)`; `a`, `gate`, `up` are (data, scales) addresses;
/// `offsets = (row_offsets, scale_offsets)`; `strides = (weight bytes, weight scale bytes)` per
/// group; `alphas = (gate, up)` addresses of per-group f32 scales (0: none).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn grouped(
    device: usize,
    stream: u64,
    gated: bool,
    concatenated: bool,
    layout: (usize, usize, usize, usize, usize),
    a: (u64, u64),
    offsets: (u64, u64),
    gate: (u64, u64),
    up: (u64, u64),
    strides: (usize, usize),
    alphas: (u64, u64),
    out: u64,
) -> PyResult<()> {
    let (groups, rows, scale_rows, n, k) = layout;
    let key = (gated, groups, rows, scale_rows, n, k, concatenated);
    with_device(device, stream, |d| {
        let plan = match d.grouped.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(d.gpu.plan_grouped(
                if gated {
                    GroupedOp::DualGemm
                } else {
                    GroupedOp::Gemm
                },
                GroupedLayout::Contiguous {
                    groups,
                    rows,
                    scale_rows,
                    n,
                    k,
                    up: if concatenated {
                        UpWeights::Concatenated
                    } else {
                        UpWeights::Separate
                    },
                },
                None,
            )?),
        };
        let at = ContiguousAddresses {
            a: a.0,
            a_scales: a.1,
            row_offsets: offsets.0,
            scale_offsets: offsets.1,
            gate: gate.0,
            gate_scales: gate.1,
            up: up.0,
            up_scales: up.1,
            up_rows: n,
            weight_data_bytes: strides.0,
            weight_scale_bytes: strides.1,
            alpha_gate: alphas.0,
            alpha_up: alphas.1,
            scale: 1.0,
            out,
        };
        // SAFETY: the Python layer checked the tensors against the layout.
        unsafe { plan.launch_raw(&d.gpu, &at) }
    })
}

/// The CPU quantizer (the reference the GPU quantizer is bit-identical to): `rows × k` f32
/// values (little-endian bytes) → (packed e2m1 bytes, blocked e4m3 scale bytes, global scale or
/// None). `global_scale`: None for none, a number for a fixed one.
#[pyfunction]
fn quantize_host<'py>(
    py: Python<'py>,
    values: &[u8],
    rows: usize,
    k: usize,
    global_scale: Option<f32>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Option<f32>)> {
    if values.len() != 4 * rows * k {
        return Err(PyValueError::new_err(format!(
            "values must hold rows × k = {} f32 ({} bytes), got {} bytes",
            rows * k,
            4 * rows * k,
            values.len()
        )));
    }
    let floats: Vec<f32> = values
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let global = global_scale.map_or(GlobalScale::None, GlobalScale::Fixed);
    let m = NvFp4Matrix::quantize(rows, k, &floats, global).map_err(to_py)?;
    Ok((
        PyBytes::new(py, m.data()),
        PyBytes::new(py, m.scales()),
        m.global_scale(),
    ))
}

/// Bytes of the blocked scales of a `rows × k` matrix (128-row × 64-K atoms of 512 bytes).
#[pyfunction]
fn scale_bytes(rows: usize, k: usize) -> usize {
    nvfp4::BlockedScales::new(rows, k).len()
}

/// The native module.
#[pymodule]
fn _nvfp4(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(driver_available, module)?)?;
    module.add_function(wrap_pyfunction!(device_info, module)?)?;
    module.add_function(wrap_pyfunction!(quantize, module)?)?;
    module.add_function(wrap_pyfunction!(first_non_finite, module)?)?;
    module.add_function(wrap_pyfunction!(dequantize, module)?)?;
    module.add_function(wrap_pyfunction!(dual_gemm, module)?)?;
    module.add_function(wrap_pyfunction!(gemm, module)?)?;
    module.add_function(wrap_pyfunction!(grouped, module)?)?;
    module.add_function(wrap_pyfunction!(quantize_host, module)?)?;
    module.add_function(wrap_pyfunction!(scale_bytes, module)?)?;
    Ok(())
}
