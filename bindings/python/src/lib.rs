//! `nvfp4._nvfp4`: the native module of the `nvfp4` Python package. Every op takes its tensors
//! as metadata ([`tensors::Tensor`]: address, shape, strides, dtype, device) and a CUDA stream
//! handle (the Python layer gathers them from PyTorch tensors and passes
//! `torch.cuda.current_stream().cuda_stream`), and checks every rule of its tensors here, in
//! Rust ([`tensors`]), before any unsafe launch: nothing here links or builds against PyTorch. Launches go through the library's caller-owned-memory API
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
use nvfp4::gpu::{F16Mut, Gpu, HalfFormat, NvFp4Mut, NvFp4Ref};
use nvfp4::grouped::{
    ContiguousAddresses, ContiguousNvFp4Out, GroupedLayout, GroupedOp, GroupedPlan, SeparateGroup, UpWeights,
};
use nvfp4::mlp::{MlpPlan, MlpShape};
use nvfp4::quantize::QuantizeChecks;
use nvfp4::{DualGemmShape, Error, GlobalScale, NvFp4Matrix};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

mod tensors;
use tensors::{Rejection, Tensor};

/// The key of a grouped plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum GroupedKey {
    /// (gated, groups, rows, scale rows, n, k, w13 concatenated).
    Contiguous(bool, usize, usize, usize, usize, usize, bool),
    /// (gated, groups, rows, max k, tokens per group), the sizes rounded up to powers of two so
    /// that launches whose groups differ a little share a plan (its capacity).
    Separate(bool, usize, usize, usize, usize),
}

/// One GPU as this process uses it.
struct Device {
    gpu: Gpu,
    /// The stream handle work is issued on now.
    stream: u64,
    dual: HashMap<(usize, usize, usize), DualGemmPlan>,
    gemm: HashMap<(usize, usize, usize), GemmPlan>,
    mlp: HashMap<MlpShape, MlpPlan>,
    grouped: HashMap<GroupedKey, GroupedPlan>,
    /// The plan of the last grouped launch (for `grouped_status`).
    last_grouped: Option<GroupedKey>,
    /// The quantizer's check words, one set per stream that quantized (so quantizations on
    /// different streams never share a status word).
    checks: HashMap<u64, QuantizeChecks>,
    /// The check words of quantizations captured on a stream that had none of its own (its
    /// own cannot be allocated inside a capture); never read: a finite check waits for the
    /// stream, which a capture refuses.
    capture_checks: QuantizeChecks,
}

static DEVICES: Mutex<Vec<(usize, Device)>> = Mutex::new(Vec::new());

/// The plan cached under `key`, made by `make` on first use.
fn cached<K: std::hash::Hash + Eq, P>(
    plans: &mut HashMap<K, P>,
    key: K,
    make: impl FnOnce() -> nvfp4::Result<P>,
) -> nvfp4::Result<&mut P> {
    Ok(match plans.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(make()?),
    })
}

/// The grouped product of a launch.
fn grouped_op(gated: bool) -> GroupedOp {
    if gated {
        GroupedOp::DualGemm
    } else {
        GroupedOp::Gemm
    }
}

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
            // SAFETY: the Python layer passes the current stream of a tensor's device (or 0).
            unsafe {
                nvfp4::gpu::check_stream_not_capturing(
                    ordinal,
                    stream,
                    "opening the GPU (the first call of the process)",
                )
            }
            .map_err(to_py)?;
            let gpu = Gpu::open(ordinal).map_err(to_py)?;
            let capture_checks = gpu.quantize_checks().map_err(to_py)?;
            devices.push((
                ordinal,
                Device {
                    gpu,
                    stream: u64::MAX,
                    dual: HashMap::new(),
                    gemm: HashMap::new(),
                    mlp: HashMap::new(),
                    grouped: HashMap::new(),
                    last_grouped: None,
                    checks: HashMap::new(),
                    capture_checks,
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

/// A broken tensor rule as the `ValueError` Python raises.
fn rejected(rejection: Rejection) -> PyErr {
    PyValueError::new_err(rejection.0)
}

/// The outputs' shape when an op is called without its outputs: every rule of its inputs is
/// checked and nothing is launched, so that the caller allocates only for valid inputs.
type Planned = Option<(usize, usize)>;

/// Enqueues the quantization of `x` (`rows × k` f32 / f16 / bf16) into packed e2m1 `data` and
/// blocked e4m3 `scales` (`outputs`), with an optional fixed global scale. Without `outputs`:
/// checks `x` and the global scale and returns `(rows, k)`.
#[pyfunction]
fn quantize(
    stream: u64,
    x: Tensor,
    outputs: Option<(Tensor, Tensor)>,
    global_scale: Option<f64>,
) -> PyResult<Planned> {
    let (element, rows, k) = tensors::values("x", &x).map_err(rejected)?;
    let global = match global_scale {
        Some(g) => GlobalScale::Fixed(tensors::scale("global_scale", g).map_err(rejected)?),
        None => GlobalScale::None,
    };
    let Some((data, scales)) = outputs else {
        return Ok(Some((rows, k)));
    };
    tensors::packed("data", &data, Some(rows), Some(k)).map_err(rejected)?;
    let scales_at = tensors::scales("scales", &scales, rows, k).map_err(rejected)?;
    let device = tensors::device(&[("x", Some(&x)), ("data", Some(&data)), ("scales", Some(&scales))])
        .map_err(rejected)?;
    with_device(device, stream, |d| {
        if !d.checks.contains_key(&stream) && !d.gpu.is_capturing()? {
            d.checks.insert(stream, d.gpu.quantize_checks()?);
        }
        let checks = d.checks.get_mut(&stream).unwrap_or(&mut d.capture_checks);
        // SAFETY: the tensors were checked above: sizes, dtypes, contiguity, one CUDA device.
        unsafe {
            d.gpu
                .quantize_raw(element, x.0, rows, k, data.0, scales_at, global, checks)
        }
    })
    .map(|()| None)
}

/// Waits for `stream` and returns the index of the first non-finite input of the last
/// quantization on that stream of `device`, or `None` (also when none ran on it).
#[pyfunction]
fn first_non_finite(device: usize, stream: u64) -> PyResult<Option<usize>> {
    with_device(device, stream, |d| {
        d.gpu.check_not_capturing("the finite check")?;
        match d.checks.get(&stream) {
            Some(checks) => checks.first_non_finite(&d.gpu),
            None => Ok(None),
        }
    })
}

/// Waits for `stream` and raises `ValueError` naming the rule and the group if the last
/// grouped launch on `device` found invalid device-side offsets (and so wrote nothing).
#[pyfunction]
fn grouped_status(device: usize, stream: u64) -> PyResult<()> {
    with_device(device, stream, |d| {
        d.gpu.check_not_capturing("reading a grouped launch's status")?;
        match d.last_grouped.and_then(|key| d.grouped.get(&key)) {
            Some(plan) => plan.device_status(&d.gpu),
            None => Ok(()),
        }
    })
}

/// Enqueues the dequantization of the NVFP4 matrix `data`/`scales` (optional global scale)
/// into `out` (`rows × k` float16 or bfloat16). Without `out`: checks and returns its shape.
#[pyfunction]
fn dequantize(
    stream: u64,
    data: Tensor,
    scales: Tensor,
    global_scale: Option<f64>,
    out: Option<Tensor>,
) -> PyResult<Planned> {
    let (rows, k) = tensors::packed("data", &data, None, None).map_err(rejected)?;
    let scales_at = tensors::scales("scales", &scales, rows, k).map_err(rejected)?;
    let Some(out) = out else {
        return Ok(Some((rows, k)));
    };
    let format = tensors::output("out", &out, [rows, k], None).map_err(rejected)?;
    let global = global_scale
        .map(|g| tensors::scale("global_scale", g))
        .transpose()
        .map_err(rejected)?;
    let device = tensors::device(&[
        ("data", Some(&data)),
        ("scales", Some(&scales)),
        ("out", Some(&out)),
    ])
    .map_err(rejected)?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above.
        unsafe {
            let m = NvFp4Ref::from_raw(data.0, scales_at, rows, k, global)?;
            d.gpu.dequantize_raw(m, format, out.0)
        }
    })
    .map(|()| None)
}

/// Enqueues the Mixture-of-Experts combine (`Gpu::moe_combine_raw`): `out[t] = Σ_j
/// weights[t, j] · rows[sources[t, j]]`, with `rows` the experts' float16 output rows, `sources`
/// int32 and `weights` float32, float16 or bfloat16 `tokens × top_k`, `out` `tokens × width`
/// float16 or bfloat16.
#[pyfunction]
fn moe_combine(stream: u64, rows: Tensor, sources: Tensor, weights: Tensor, out: Tensor) -> PyResult<()> {
    use nvfp4::elementwise::WeightFormat;
    let [row_count, width] = tensors::matrix("rows", &rows, "float16", [None, None]).map_err(rejected)?;
    let [tokens, top_k] = tensors::matrix("sources", &sources, "int32", [None, None]).map_err(rejected)?;
    const WEIGHTS: [(&str, WeightFormat); 3] = [
        ("float32", WeightFormat::F32),
        ("float16", WeightFormat::F16),
        ("bfloat16", WeightFormat::Bf16),
    ];
    let (weight_dtype, weight_format) =
        WEIGHTS[tensors::dtype_of("weights", &weights, &WEIGHTS.map(|(d, _)| d)).map_err(rejected)?];
    tensors::matrix("weights", &weights, weight_dtype, [Some(tokens), Some(top_k)]).map_err(rejected)?;
    let format = tensors::output("out", &out, [tokens, width], None).map_err(rejected)?;
    let shape = nvfp4::elementwise::CombineShape {
        rows: row_count,
        tokens,
        top_k,
        width,
    };
    let device = tensors::device(&[
        ("rows", Some(&rows)),
        ("sources", Some(&sources)),
        ("weights", Some(&weights)),
        ("out", Some(&out)),
    ])
    .map_err(rejected)?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above (shapes, dtypes, contiguity, one device).
        unsafe {
            d.gpu
                .moe_combine_raw(shape, rows.0, sources.0, weights.0, weight_format, format, out.0)
        }
    })
}

/// Enqueues the grouped-layout gather (`Gpu::gather_grouped_raw`): output row `i` is row
/// `source_rows[i]` (int32; `None`: row `i`) of the NVFP4 matrix `data` / `scales`, each group's
/// scale rows placed from its `scale_offsets` entry in `out_scales` (2-D swizzled, its rows a
/// multiple of 128), other scale rows zero.
#[pyfunction]
#[pyo3(signature = (stream, data, scales, source_rows, row_offsets, scale_offsets, out_data, out_scales))]
#[allow(clippy::too_many_arguments)]
fn gather_grouped(
    stream: u64,
    data: Tensor,
    scales: Tensor,
    source_rows: Option<Tensor>,
    row_offsets: Tensor,
    scale_offsets: Tensor,
    out_data: Tensor,
    out_scales: Tensor,
) -> PyResult<()> {
    let (count, k) = tensors::packed("data", &data, None, None).map_err(rejected)?;
    let scales_at = tensors::scales("scales", &scales, count, k).map_err(rejected)?;
    let (rows, _) = tensors::packed("out_data", &out_data, None, Some(k)).map_err(rejected)?;
    let scale_rows = out_scales.1.first().map_or(0, |&r| r.max(0) as usize);
    let out_scales_at = tensors::scales("out_scales", &out_scales, scale_rows, k).map_err(rejected)?;
    let groups = row_offsets.1.first().map_or(0, |&g| (g.max(1) - 1) as usize);
    let row_offsets_at = tensors::offsets("row_offsets", &row_offsets, groups).map_err(rejected)?;
    let scale_offsets_at = tensors::offsets("scale_offsets", &scale_offsets, groups).map_err(rejected)?;
    let source_at = match &source_rows {
        Some(t) => {
            let [n] = tensors::vector("source_rows", t, "int32").map_err(rejected)?;
            if n != rows {
                return Err(rejected(Rejection(format!(
                    "`source_rows`: must hold one source per output row ({rows}) (got {n})"
                ))));
            }
            t.0
        }
        None => 0,
    };
    let shape = nvfp4::grouped::GatherShape {
        source_rows: count,
        rows,
        groups,
        scale_rows,
        k,
    };
    let device = tensors::device(&[
        ("data", Some(&data)),
        ("scales", Some(&scales)),
        ("source_rows", source_rows.as_ref()),
        ("row_offsets", Some(&row_offsets)),
        ("scale_offsets", Some(&scale_offsets)),
        ("out_data", Some(&out_data)),
        ("out_scales", Some(&out_scales)),
    ])
    .map_err(rejected)?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above (shapes, dtypes, contiguity, one device).
        unsafe {
            d.gpu.gather_grouped_raw(
                shape,
                data.0,
                scales_at,
                source_at,
                row_offsets_at,
                scale_offsets_at,
                out_data.0,
                out_scales_at,
            )
        }
    })
}

/// Enqueues the Mixture-of-Experts routing (`Gpu::moe_route_raw`): `top_k_index` (int64,
/// tokens × top_k) sorted stably by expert into `token_rows` (int32, tokens · top_k), `sources`
/// (int32, tokens × top_k; -1 for a slot of no expert) and the `experts + 1` int32 offsets;
/// `counts` (int32, at least `route_count_words(slots, experts)`) is the kernels' scratch.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn moe_route(
    stream: u64,
    top_k_index: Tensor,
    token_rows: Tensor,
    sources: Tensor,
    row_offsets: Tensor,
    scale_offsets: Tensor,
    counts: Tensor,
) -> PyResult<()> {
    let [tokens, top_k] =
        tensors::matrix("top_k_index", &top_k_index, "int64", [None, None]).map_err(rejected)?;
    tensors::vector("token_rows", &token_rows, "int32")
        .and_then(|[n]| {
            if n == tokens * top_k {
                Ok(())
            } else {
                Err(Rejection(format!(
                    "`token_rows`: must hold {} rows (got {n})",
                    tokens * top_k
                )))
            }
        })
        .map_err(rejected)?;
    tensors::matrix("sources", &sources, "int32", [Some(tokens), Some(top_k)]).map_err(rejected)?;
    let [offsets] = tensors::vector("row_offsets", &row_offsets, "int32").map_err(rejected)?;
    let experts = offsets.saturating_sub(1);
    tensors::offsets("scale_offsets", &scale_offsets, experts).map_err(rejected)?;
    let shape = nvfp4::elementwise::RouteShape {
        slots: tokens * top_k,
        top_k,
        experts,
    };
    tensors::vector("counts", &counts, "int32")
        .and_then(|[n]| {
            if n >= shape.count_words() {
                Ok(())
            } else {
                Err(Rejection(format!(
                    "`counts`: must hold at least {} words (got {n})",
                    shape.count_words()
                )))
            }
        })
        .map_err(rejected)?;
    let device = tensors::device(&[
        ("top_k_index", Some(&top_k_index)),
        ("token_rows", Some(&token_rows)),
        ("sources", Some(&sources)),
        ("row_offsets", Some(&row_offsets)),
        ("scale_offsets", Some(&scale_offsets)),
        ("counts", Some(&counts)),
    ])
    .map_err(rejected)?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above (shapes, dtypes, contiguity, one device).
        unsafe {
            d.gpu.moe_route_raw(
                shape,
                top_k_index.0,
                token_rows.0,
                sources.0,
                row_offsets.0,
                scale_offsets.0,
                counts.0,
            )
        }
    })
}

/// `RouteShape::count_words`: the int32 words of `moe_route`'s `counts` scratch.
#[pyfunction]
fn route_count_words(slots: usize, experts: usize) -> usize {
    nvfp4::elementwise::RouteShape {
        slots,
        top_k: 1,
        experts,
    }
    .count_words()
}

/// An fp16 or bf16 output view of `len` values at `address`.
///
/// # Safety
/// `address` is a checked output tensor's, alive until the launch has run.
unsafe fn half_out(address: u64, len: usize, format: HalfFormat) -> nvfp4::Result<F16Mut<'static>> {
    // SAFETY: the caller's.
    unsafe {
        match format {
            HalfFormat::F16 => F16Mut::from_raw(address, len),
            HalfFormat::Bf16 => F16Mut::from_raw_bf16(address, len),
        }
    }
}

/// `view` with the scale at `address` in device memory as its device global scale (none for 0).
///
/// # Safety
/// `address` is 0 or a checked float32 tensor's, alive until the launch has run.
unsafe fn with_device_scale(view: NvFp4Ref<'static>, address: u64) -> nvfp4::Result<NvFp4Ref<'static>> {
    if address == 0 {
        return Ok(view);
    }
    // SAFETY: the caller's.
    unsafe { view.with_device_global_scale(address) }
}

/// The operands of a dual GEMM, checked: the shape, the scales' addresses and the products' α.
struct DualOperands<'t> {
    /// `a`, `b1`, `b2`, `a_sf`, `b1_sf`, `b2_sf`.
    tensors: [&'t Tensor; 6],
    m: usize,
    n: usize,
    k: usize,
    scales: [u64; 3],
    alpha_gate: f32,
    alpha_up: f32,
    /// `alpha1` and `alpha2` given as tensors (device addresses, 0 for none) and the tensors.
    device_alphas: [(u64, Option<&'t Tensor>); 2],
}

impl<'t> DualOperands<'t> {
    /// Checks `a`, `b1`, `b2`, their scales and `alpha1`, `alpha2` (the arguments of
    /// `dual_gemm` and `dual_gemm_nvfp4`).
    #[allow(clippy::too_many_arguments)]
    fn check(
        a: &'t Tensor,
        b1: &'t Tensor,
        b2: &'t Tensor,
        a_sf: &'t Tensor,
        b1_sf: &'t Tensor,
        b2_sf: &'t Tensor,
        alpha1: f64,
        alpha2: f64,
        device_alphas: [Option<&'t Tensor>; 2],
    ) -> PyResult<Self> {
        let (m, k) = tensors::packed("a", a, None, None).map_err(rejected)?;
        let (n, _) = tensors::packed("b1", b1, None, Some(k)).map_err(rejected)?;
        tensors::packed("b2", b2, Some(n), Some(k)).map_err(rejected)?;
        let scales = [
            tensors::scales("a_sf", a_sf, m, k).map_err(rejected)?,
            tensors::scales("b1_sf", b1_sf, n, k).map_err(rejected)?,
            tensors::scales("b2_sf", b2_sf, n, k).map_err(rejected)?,
        ];
        Ok(Self {
            tensors: [a, b1, b2, a_sf, b1_sf, b2_sf],
            m,
            n,
            k,
            scales,
            alpha_gate: tensors::scale("alpha1", alpha1).map_err(rejected)?,
            alpha_up: tensors::scale("alpha2", alpha2).map_err(rejected)?,
            device_alphas: [
                (
                    tensors::device_scale("alpha1", device_alphas[0]).map_err(rejected)?,
                    device_alphas[0],
                ),
                (
                    tensors::device_scale("alpha2", device_alphas[1]).map_err(rejected)?,
                    device_alphas[1],
                ),
            ],
        })
    }

    /// The device of the operands and `outputs` (all on one CUDA device).
    fn device(&self, outputs: &[(&str, &Tensor)]) -> PyResult<usize> {
        const NAMES: [&str; 6] = ["a", "b1", "b2", "a_sf", "b1_sf", "b2_sf"];
        let named: Vec<(&str, Option<&Tensor>)> = NAMES
            .into_iter()
            .zip(self.tensors)
            .chain(outputs.iter().copied())
            .map(|(name, t)| (name, Some(t)))
            .chain([
                ("alpha1", self.device_alphas[0].1),
                ("alpha2", self.device_alphas[1].1),
            ])
            .collect();
        tensors::device(&named).map_err(rejected)
    }

    /// Views of `a`, `b1`, `b2` (the products' α as B1's and B2's global scales, the tensor
    /// ones as their device global scales).
    ///
    /// # Safety
    /// The tensors are alive (checked by [`DualOperands::check`]).
    unsafe fn views(&self) -> nvfp4::Result<[NvFp4Ref<'static>; 3]> {
        let Self { m, n, k, scales, .. } = *self;
        let [a, b1, b2, ..] = self.tensors;
        // SAFETY: the caller's.
        unsafe {
            Ok([
                NvFp4Ref::from_raw(a.0, scales[0], m, k, None)?,
                with_device_scale(
                    NvFp4Ref::from_raw(b1.0, scales[1], n, k, Some(self.alpha_gate))?,
                    self.device_alphas[0].0,
                )?,
                with_device_scale(
                    NvFp4Ref::from_raw(b2.0, scales[2], n, k, Some(self.alpha_up))?,
                    self.device_alphas[1].0,
                )?,
            ])
        }
    }

    /// The plan for the shape among a device's `plans` (made on `gpu` on first use).
    fn plan<'d>(
        &self,
        gpu: &Gpu,
        plans: &'d mut HashMap<(usize, usize, usize), DualGemmPlan>,
    ) -> nvfp4::Result<&'d DualGemmPlan> {
        let (m, n, k) = (self.m, self.n, self.k);
        cached(plans, (m, n, k), || gpu.plan_dual_gemm(DualGemmShape { m, n, k })).map(|plan| &*plan)
    }
}

/// Enqueues `out = silu(alpha1 · a·b1ᵀ) ⊙ (alpha2 · a·b2ᵀ)` (float16 `m × n`), each α times its
/// tensor of `device_alphas` (float32, one element, read by the kernel) when given. Without `out`:
/// checks every input and returns `(m, n)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dual_gemm(
    stream: u64,
    a: Tensor,
    b1: Tensor,
    b2: Tensor,
    a_sf: Tensor,
    b1_sf: Tensor,
    b2_sf: Tensor,
    alpha1: f64,
    alpha2: f64,
    out: Option<Tensor>,
    device_alphas: (Option<Tensor>, Option<Tensor>),
) -> PyResult<Planned> {
    let device_alphas = [device_alphas.0.as_ref(), device_alphas.1.as_ref()];
    let operands = DualOperands::check(&a, &b1, &b2, &a_sf, &b1_sf, &b2_sf, alpha1, alpha2, device_alphas)?;
    let (m, n) = (operands.m, operands.n);
    let Some(out) = out else {
        return Ok(Some((m, n)));
    };
    // float16, or bfloat16 (the kernels round to it instead).
    let format = tensors::output("out", &out, [m, n], None).map_err(rejected)?;
    let device = operands.device(&[("out", &out)])?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above.
        let ([a, b1, b2], out) = unsafe { (operands.views()?, half_out(out.0, m * n, format)?) };
        operands
            .plan(&d.gpu, &mut d.dual)?
            .launch_views(&d.gpu, a, b1, b2, out)
    })
    .map(|()| None)
}

/// Enqueues `h = silu(alpha1 · a·b1ᵀ) ⊙ (alpha2 · a·b2ᵀ)` written as NVFP4 with
/// `global_scale` into `outputs = (data, scales)` (`m × n/2` uint8 and the blocked scales),
/// bit for bit `quantize(dual_gemm(...), global_scale)`. Without `outputs`: checks every input
/// and returns `(m, n)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dual_gemm_nvfp4(
    stream: u64,
    a: Tensor,
    b1: Tensor,
    b2: Tensor,
    a_sf: Tensor,
    b1_sf: Tensor,
    b2_sf: Tensor,
    alpha1: f64,
    alpha2: f64,
    global_scale: f64,
    outputs: Option<(Tensor, Tensor)>,
    device_alphas: (Option<Tensor>, Option<Tensor>),
) -> PyResult<Planned> {
    let device_alphas = [device_alphas.0.as_ref(), device_alphas.1.as_ref()];
    let operands = DualOperands::check(&a, &b1, &b2, &a_sf, &b1_sf, &b2_sf, alpha1, alpha2, device_alphas)?;
    let (m, n) = (operands.m, operands.n);
    let global = tensors::scale("global_scale", global_scale).map_err(rejected)?;
    let Some((data, scales)) = outputs else {
        return Ok(Some((m, n)));
    };
    tensors::packed("data", &data, Some(m), Some(n)).map_err(rejected)?;
    let scales_at = tensors::scales("scales", &scales, m, n).map_err(rejected)?;
    let device = operands.device(&[("data", &data), ("scales", &scales)])?;
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above.
        let ([a, b1, b2], h) = unsafe {
            (
                operands.views()?,
                NvFp4Mut::from_raw(data.0, scales_at, m, n, global)?,
            )
        };
        operands
            .plan(&d.gpu, &mut d.dual)?
            .launch_nvfp4_views(&d.gpu, a, b1, b2, h)
    })
    .map(|()| None)
}

/// Enqueues `out = alpha · a·bᵀ` (float16 `m × n`), `alpha` times `device_alpha` (a float32
/// tensor of one element the kernel reads) when given. Without `out`: checks every input and
/// returns `(m, n)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn gemm(
    stream: u64,
    a: Tensor,
    b: Tensor,
    a_sf: Tensor,
    b_sf: Tensor,
    alpha: f64,
    out: Option<Tensor>,
    device_alpha: Option<Tensor>,
) -> PyResult<Planned> {
    let (m, k) = tensors::packed("a", &a, None, None).map_err(rejected)?;
    let device_alpha_at = tensors::device_scale("alpha", device_alpha.as_ref()).map_err(rejected)?;
    let (n, _) = tensors::packed("b", &b, None, Some(k)).map_err(rejected)?;
    let a_sf_at = tensors::scales("a_sf", &a_sf, m, k).map_err(rejected)?;
    let b_sf_at = tensors::scales("b_sf", &b_sf, n, k).map_err(rejected)?;
    let Some(out) = out else {
        return Ok(Some((m, n)));
    };
    // float16, or bfloat16 (the kernels round to it instead).
    let format = tensors::output("out", &out, [m, n], None).map_err(rejected)?;
    let alpha = tensors::scale("alpha", alpha).map_err(rejected)?;
    let device = tensors::device(&[
        ("a", Some(&a)),
        ("b", Some(&b)),
        ("a_sf", Some(&a_sf)),
        ("b_sf", Some(&b_sf)),
        ("out", Some(&out)),
        ("alpha", device_alpha.as_ref()),
    ])
    .map_err(rejected)?;
    let shape = (m, n, k);
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above.
        let (a, b, out) = unsafe {
            (
                NvFp4Ref::from_raw(a.0, a_sf_at, m, k, None)?,
                with_device_scale(
                    NvFp4Ref::from_raw(b.0, b_sf_at, n, k, Some(alpha))?,
                    device_alpha_at,
                )?,
                half_out(out.0, m * n, format)?,
            )
        };
        let plan = cached(&mut d.gemm, shape, || d.gpu.plan_gemm(GemmShape { m, n, k }))?;
        plan.launch_views(&d.gpu, a, b, out)
    })
    .map(|()| None)
}

/// Enqueues the SwiGLU MLP block `out = (silu(alpha1 · x_q·w1ᵀ) ⊙ (alpha3 · x_q·w3ᵀ)) ·
/// w2ᵀ · alpha2`, `x_q` being `x` quantized with `x_scale` (or none) and the gated product
/// quantized to NVFP4 with `h_scale` on the way (`weight_scales` = the weights' global scales
/// (w1, w3, w2); each α the product of its operands' global scales): the library's MLP op,
/// bit for bit the three calls `quantize`, `dual_gemm_nvfp4`, `gemm`, without their
/// pre-decoding passes. Without `out`: checks every input and returns `(tokens, hidden)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mlp(
    stream: u64,
    x: Tensor,
    w1: Tensor,
    w3: Tensor,
    w2: Tensor,
    w1_sf: Tensor,
    w3_sf: Tensor,
    w2_sf: Tensor,
    weight_scales: (f64, f64, f64),
    x_scale: Option<f64>,
    h_scale: f64,
    out: Option<Tensor>,
) -> PyResult<Planned> {
    let (element, tokens, hidden) = tensors::values("x", &x).map_err(rejected)?;
    let (intermediate, _) = tensors::packed("w1", &w1, None, Some(hidden)).map_err(rejected)?;
    tensors::packed("w3", &w3, Some(intermediate), Some(hidden)).map_err(rejected)?;
    tensors::packed("w2", &w2, Some(hidden), Some(intermediate)).map_err(rejected)?;
    let scales_at = [
        tensors::scales("w1_sf", &w1_sf, intermediate, hidden).map_err(rejected)?,
        tensors::scales("w3_sf", &w3_sf, intermediate, hidden).map_err(rejected)?,
        tensors::scales("w2_sf", &w2_sf, hidden, intermediate).map_err(rejected)?,
    ];
    let globals = [
        tensors::scale("w1_scale", weight_scales.0).map_err(rejected)?,
        tensors::scale("w3_scale", weight_scales.1).map_err(rejected)?,
        tensors::scale("w2_scale", weight_scales.2).map_err(rejected)?,
    ];
    let x_global = match x_scale {
        Some(g) => GlobalScale::Fixed(tensors::scale("x_scale", g).map_err(rejected)?),
        None => GlobalScale::None,
    };
    let h_global = tensors::scale("h_scale", h_scale).map_err(rejected)?;
    let Some(out) = out else {
        return Ok(Some((tokens, hidden)));
    };
    let format = tensors::output("out", &out, [tokens, hidden], None).map_err(rejected)?;
    let device = tensors::device(&[
        ("x", Some(&x)),
        ("w1", Some(&w1)),
        ("w3", Some(&w3)),
        ("w2", Some(&w2)),
        ("w1_sf", Some(&w1_sf)),
        ("w3_sf", Some(&w3_sf)),
        ("w2_sf", Some(&w2_sf)),
        ("out", Some(&out)),
    ])
    .map_err(rejected)?;
    let shape = MlpShape {
        tokens,
        hidden,
        intermediate,
    };
    with_device(device, stream, |d| {
        // SAFETY: the tensors were checked above: sizes, dtypes, contiguity, one CUDA device.
        let (w1, w3, w2, out) = unsafe {
            (
                NvFp4Ref::from_raw(w1.0, scales_at[0], intermediate, hidden, Some(globals[0]))?,
                NvFp4Ref::from_raw(w3.0, scales_at[1], intermediate, hidden, Some(globals[1]))?,
                NvFp4Ref::from_raw(w2.0, scales_at[2], hidden, intermediate, Some(globals[2]))?,
                half_out(out.0, tokens * hidden, format)?,
            )
        };
        let plan = cached(&mut d.mlp, shape, || d.gpu.plan_mlp(shape))?;
        // SAFETY: `x` was checked above (`tokens × hidden` values of `element`, on the device).
        unsafe { plan.launch_raw(&d.gpu, element, x.0, x_global, w1, w3, w2, h_global, out) }
    })
    .map(|()| None)
}

/// Enqueues a contiguous-convention grouped launch: `gated` (a dual GEMM whose up weights are
/// `b3`, or the second half of each group's `b1` rows when `b3` is None) or plain, with `n`
/// outputs per group, into `out` (fp16) or, for a dual GEMM, into `h` = `(data, scales,
/// global_scales)` (NVFP4 in A's layout, group `g` quantized with `global_scales[g]`).
/// Without either: checks every input and returns `(rows, n)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn grouped(
    stream: u64,
    gated: bool,
    a: Tensor,
    b1: Tensor,
    b3: Option<Tensor>,
    a_sf: Tensor,
    b1_sf: Tensor,
    b3_sf: Option<Tensor>,
    row_offsets: Tensor,
    scale_offsets: Tensor,
    alpha1: Option<Tensor>,
    alpha3: Option<Tensor>,
    n: usize,
    out: Option<Tensor>,
    h: Option<(Tensor, Tensor, Tensor)>,
) -> PyResult<Planned> {
    let (rows, k) = tensors::packed("a", &a, None, None).map_err(rejected)?;
    let scale_columns = tensors::scale_shape(1, k)[1] as i64;
    let scale_rows = match a_sf.1[..] {
        [r, c] if c == scale_columns && r >= 0 && r % 128 == 0 => r as usize,
        _ => {
            return Err(PyValueError::new_err(format!(
                "`a_sf`: must be 2-D swizzled scales of (a multiple of 128) rows × {scale_columns} (got {:?})",
                a_sf.1
            )));
        }
    };
    let a_sf_at = tensors::scales("a_sf", &a_sf, scale_rows, k).map_err(rejected)?;
    // The public arguments' names: `b`, `b_sf`, `alpha` for the plain grouped GEMM.
    let (b1_arg, b1_sf_arg, alpha1_arg) = if gated {
        ("b1", "b1_sf", "alpha1")
    } else {
        ("b", "b_sf", "alpha")
    };
    let concatenated = gated && b3.is_none();
    let weight_rows = if concatenated { 2 * n } else { n };
    let (groups, _) = tensors::stacked(b1_arg, &b1, None, Some(weight_rows), k).map_err(rejected)?;
    let b1_sf_at = tensors::stacked_scales(b1_sf_arg, &b1_sf, groups, weight_rows, k).map_err(rejected)?;
    let up = match (gated, &b3, &b3_sf) {
        (true, Some(b3), Some(b3_sf)) => {
            tensors::stacked("b3", b3, Some(groups), Some(n), k).map_err(rejected)?;
            (
                b3.0,
                tensors::stacked_scales("b3_sf", b3_sf, groups, n, k).map_err(rejected)?,
            )
        }
        (true, Some(_), None) => {
            return Err(PyValueError::new_err("`b3_sf`: must be given with b3 (got None)"));
        }
        (_, None, None) => (b1.0, b1_sf_at),
        _ => {
            return Err(PyValueError::new_err(
                "`b3`: only a dual GEMM with separate up weights takes b3 (got a tensor)",
            ));
        }
    };
    let offsets = (
        tensors::offsets("row_offsets", &row_offsets, groups).map_err(rejected)?,
        tensors::offsets("scale_offsets", &scale_offsets, groups).map_err(rejected)?,
    );
    let alphas = (
        tensors::alphas(alpha1_arg, alpha1.as_ref(), groups).map_err(rejected)?,
        tensors::alphas("alpha3", alpha3.as_ref(), groups).map_err(rejected)?,
    );
    if !gated && alpha3.is_some() {
        return Err(PyValueError::new_err(
            "`alpha3`: a plain grouped GEMM has one α per group (got a tensor)",
        ));
    }
    let output = match (out, h) {
        (None, None) => return Ok(Some((rows, n))),
        (Some(out), None) => {
            tensors::output("out", &out, [rows, n], Some("float16")).map_err(rejected)?;
            GroupedOutput::F16(out)
        }
        (None, Some((data, scales, global_scales))) if gated => {
            tensors::packed("h_data", &data, Some(rows), Some(n)).map_err(rejected)?;
            let scales_at = tensors::scales("h_scales", &scales, scale_rows, n).map_err(rejected)?;
            let global_at =
                tensors::alphas("global_scales", Some(&global_scales), groups).map_err(rejected)?;
            GroupedOutput::NvFp4(
                ContiguousNvFp4Out {
                    data: data.0,
                    scales: scales_at,
                    global_scales: global_at,
                },
                [data, scales, global_scales],
            )
        }
        (None, Some(_)) => {
            return Err(PyValueError::new_err(
                "`h`: only a grouped dual GEMM writes NVFP4 (got a plain grouped GEMM)",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "`out`: an fp16 output and an NVFP4 one cannot both be given",
            ));
        }
    };
    let mut named = vec![
        ("a", Some(&a)),
        ("a_sf", Some(&a_sf)),
        (b1_arg, Some(&b1)),
        (b1_sf_arg, Some(&b1_sf)),
        ("b3", b3.as_ref()),
        ("b3_sf", b3_sf.as_ref()),
        ("row_offsets", Some(&row_offsets)),
        ("scale_offsets", Some(&scale_offsets)),
        (alpha1_arg, alpha1.as_ref()),
        ("alpha3", alpha3.as_ref()),
    ];
    match &output {
        GroupedOutput::F16(out) => named.push(("out", Some(out))),
        GroupedOutput::NvFp4(_, [data, scales, global]) => named.extend([
            ("h_data", Some(data)),
            ("h_scales", Some(scales)),
            ("global_scales", Some(global)),
        ]),
    }
    let device = tensors::device(&named).map_err(rejected)?;
    let key = GroupedKey::Contiguous(gated, groups, rows, scale_rows, n, k, concatenated);
    with_device(device, stream, |d| {
        d.last_grouped = Some(key);
        let layout = GroupedLayout::Contiguous {
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
        };
        let plan = cached(&mut d.grouped, key, || {
            d.gpu.plan_grouped(grouped_op(gated), layout, None)
        })?;
        let at = ContiguousAddresses {
            a: a.0,
            a_scales: a_sf_at,
            row_offsets: offsets.0,
            scale_offsets: offsets.1,
            gate: b1.0,
            gate_scales: b1_sf_at,
            up: up.0,
            up_scales: up.1,
            up_rows: n,
            weight_data_bytes: weight_rows * k / 2,
            weight_scale_bytes: tensors::scale_bytes(weight_rows, k),
            alpha_gate: alphas.0,
            alpha_up: alphas.1,
            scale: 1.0,
            out: match &output {
                GroupedOutput::F16(out) => out.0,
                GroupedOutput::NvFp4(..) => 0,
            },
        };
        // SAFETY: the tensors were checked above against the plan's layout.
        match &output {
            GroupedOutput::F16(_) => unsafe { plan.launch_raw(&d.gpu, &at) },
            GroupedOutput::NvFp4(h, _) => unsafe { plan.launch_nvfp4_raw(&d.gpu, &at, h) },
        }
    })
    .map(|()| None)
}

/// What a contiguous grouped launch writes: fp16 `out`, or NVFP4 `h` (with its tensors).
enum GroupedOutput {
    F16(Tensor),
    NvFp4(ContiguousNvFp4Out, [Tensor; 3]),
}

/// One group of a separate-convention launch as the Python layer passes it: `(a, b1, b3,
/// a_sf, b1_sf, b3_sf, alpha1, alpha3, out)`; `b3`/`b3_sf` only for a dual GEMM; a group
/// without tokens has `a`, `a_sf` and `out` all None.
type SeparateTensors = (
    Option<Tensor>,
    Tensor,
    Option<Tensor>,
    Option<Tensor>,
    Tensor,
    Option<Tensor>,
    f64,
    f64,
    Option<Tensor>,
);

/// A separate-convention group's checked views' parts: `(a, gate, up, out)` as
/// `(data, scales, rows, k, global scale)` and `(address, elements)`.
type SeparateParts = (
    Option<(u64, u64, usize, usize)>,
    (u64, u64, usize, usize, f32),
    Option<(u64, u64, usize, usize, f32)>,
    Option<(u64, usize)>,
);

/// Checks one group of a separate-convention launch (argument names `a[g]`, `b[g]`, …).
fn separate_group(gated: bool, g: usize, group: &SeparateTensors) -> PyResult<SeparateParts> {
    let (a, b1, b3, a_sf, b1_sf, b3_sf, alpha1, alpha3, out) = group;
    // The public arguments' names: `b`, `b_sf`, `alpha` for the plain GEMM.
    let name = |arg: &str| {
        let public = match (gated, arg) {
            (false, "b1") => "b",
            (false, "b1_sf") => "b_sf",
            (false, "alpha1") => "alpha",
            _ => arg,
        };
        format!("{public}[{g}]")
    };
    let (n, k) = tensors::packed(&name("b1"), b1, None, None).map_err(rejected)?;
    let gate_scales = tensors::scales(&name("b1_sf"), b1_sf, n, k).map_err(rejected)?;
    let gate = (
        b1.0,
        gate_scales,
        n,
        k,
        tensors::scale(&name("alpha1"), *alpha1).map_err(rejected)?,
    );
    let up = match (gated, b3, b3_sf) {
        (true, Some(b3), Some(b3_sf)) => {
            tensors::packed(&name("b3"), b3, Some(n), Some(k)).map_err(rejected)?;
            let scales = tensors::scales(&name("b3_sf"), b3_sf, n, k).map_err(rejected)?;
            Some((
                b3.0,
                scales,
                n,
                k,
                tensors::scale(&name("alpha3"), *alpha3).map_err(rejected)?,
            ))
        }
        (true, _, _) => {
            return Err(PyValueError::new_err(format!(
                "`{}`: a dual GEMM needs up weights and their scales in every group (got None)",
                name(if b3.is_none() { "b3" } else { "b3_sf" })
            )));
        }
        (false, None, None) => None,
        (false, _, _) => {
            return Err(PyValueError::new_err(format!(
                "`{}`: a plain GEMM takes no up weights (got a tensor)",
                name("b3")
            )));
        }
    };
    let (a, out) = match (a, a_sf, out) {
        (Some(a), Some(a_sf), Some(out)) => {
            let (m, _) = tensors::packed(&name("a"), a, None, Some(k)).map_err(rejected)?;
            let a_scales = tensors::scales(&name("a_sf"), a_sf, m, k).map_err(rejected)?;
            tensors::output(&name("out"), out, [m, n], Some("float16")).map_err(rejected)?;
            (Some((a.0, a_scales, m, k)), Some((out.0, m * n)))
        }
        (None, None, None) => (None, None),
        _ => {
            return Err(PyValueError::new_err(format!(
                "`{}`: a, a_sf and out are given together, or (a group without tokens) all None",
                name("a")
            )));
        }
    };
    Ok((a, gate, up, out))
}

/// Enqueues a separate-convention grouped launch (`gated`: dual GEMMs): group `g` computes
/// `out_g = alpha1_g · a_g·b1_gᵀ` (or `silu(alpha1_g · a_g·b1_gᵀ) ⊙ (alpha3_g · a_g·b3_gᵀ)`)
/// with its own M, N and K, on the tensors' own memory (one launch, no copy).
#[pyfunction]
fn grouped_separate(stream: u64, gated: bool, groups: Vec<SeparateTensors>) -> PyResult<()> {
    if groups.is_empty() {
        return Err(PyValueError::new_err(
            "`groups`: must hold at least one group (got none)",
        ));
    }
    let parts = groups
        .iter()
        .enumerate()
        .map(|(g, group)| separate_group(gated, g, group))
        .collect::<PyResult<Vec<_>>>()?;
    let named: Vec<(&str, Option<&Tensor>)> = groups
        .iter()
        .flat_map(|(a, b1, b3, a_sf, b1_sf, b3_sf, _, _, out)| {
            [
                a.as_ref(),
                Some(b1),
                b3.as_ref(),
                a_sf.as_ref(),
                Some(b1_sf),
                b3_sf.as_ref(),
                out.as_ref(),
            ]
        })
        .map(|t| ("groups", t))
        .collect();
    let device = tensors::device(&named).map_err(rejected)?;
    let rows: usize = parts.iter().map(|(a, ..)| a.map_or(0, |a| a.2)).sum();
    let with_rows = parts.iter().filter(|(a, ..)| a.is_some()).count().max(1);
    let max_k = parts.iter().map(|(_, gate, ..)| gate.3).max().unwrap_or(0);
    // Sizes rounded up to powers of two, so that launches whose groups differ a little share a
    // plan; past the most groups a plan takes, the exact count (which planning then refuses).
    let plan_groups = groups.len().next_power_of_two().min(1024).max(groups.len());
    let (plan_rows, plan_k) = (rows.max(1).next_power_of_two(), max_k.next_power_of_two());
    let tokens = (rows / with_rows).clamp(1, 128).next_power_of_two();
    let key = GroupedKey::Separate(gated, plan_groups, plan_rows, plan_k, tokens);
    with_device(device, stream, |d| {
        d.last_grouped = Some(key);
        let layout = GroupedLayout::Separate {
            groups: plan_groups,
            rows: plan_rows,
            max_k: plan_k,
        };
        let plan = cached(&mut d.grouped, key, || {
            d.gpu.plan_grouped(grouped_op(gated), layout, Some(tokens))
        })?;
        let matrix = |(data, scales, rows, k, global): (u64, u64, usize, usize, Option<f32>)| {
            // SAFETY: the tensors were checked above (shapes, dtypes, contiguity, one device).
            unsafe { NvFp4Ref::from_raw(data, scales, rows, k, global) }
        };
        let list = parts
            .iter()
            .map(|&(a, gate, up, out)| {
                Ok(SeparateGroup {
                    a: a.map(|(d, s, r, k)| matrix((d, s, r, k, None))).transpose()?,
                    gate: matrix((gate.0, gate.1, gate.2, gate.3, Some(gate.4)))?,
                    up: up.map(|u| matrix((u.0, u.1, u.2, u.3, Some(u.4)))).transpose()?,
                    // SAFETY: as above.
                    c: out
                        .map(|(at, len)| unsafe { F16Mut::from_raw(at, len) })
                        .transpose()?,
                })
            })
            .collect::<nvfp4::Result<Vec<_>>>()?;
        plan.launch_separate(&d.gpu, &list)
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
    tensors::scale_bytes(rows, k)
}

/// The 2-D swizzled shape `(rows rounded up to 128, k/16 rounded up to 4)` of the blocked
/// scales of a `rows × k` matrix.
#[pyfunction]
fn scale_shape(rows: usize, k: usize) -> (usize, usize) {
    let [r, c] = tensors::scale_shape(rows, k);
    (r, c)
}

/// The native module.
#[pymodule]
fn _nvfp4(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("ROUTE_MAX_EXPERTS", nvfp4::elementwise::ROUTE_MAX_EXPERTS)?;
    module.add_function(wrap_pyfunction!(driver_available, module)?)?;
    module.add_function(wrap_pyfunction!(device_info, module)?)?;
    module.add_function(wrap_pyfunction!(quantize, module)?)?;
    module.add_function(wrap_pyfunction!(first_non_finite, module)?)?;
    module.add_function(wrap_pyfunction!(grouped_status, module)?)?;
    module.add_function(wrap_pyfunction!(dequantize, module)?)?;
    module.add_function(wrap_pyfunction!(moe_combine, module)?)?;
    module.add_function(wrap_pyfunction!(gather_grouped, module)?)?;
    module.add_function(wrap_pyfunction!(moe_route, module)?)?;
    module.add_function(wrap_pyfunction!(route_count_words, module)?)?;
    module.add_function(wrap_pyfunction!(dual_gemm, module)?)?;
    module.add_function(wrap_pyfunction!(dual_gemm_nvfp4, module)?)?;
    module.add_function(wrap_pyfunction!(gemm, module)?)?;
    module.add_function(wrap_pyfunction!(mlp, module)?)?;
    module.add_function(wrap_pyfunction!(grouped, module)?)?;
    module.add_function(wrap_pyfunction!(grouped_separate, module)?)?;
    module.add_function(wrap_pyfunction!(quantize_host, module)?)?;
    module.add_function(wrap_pyfunction!(scale_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(scale_shape, module)?)?;
    Ok(())
}
