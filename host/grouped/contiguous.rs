//! The contiguous convention (vLLM / SGLang): all groups' tokens in one A sorted by group, the
//! row and scale-row offsets in device memory, weights stacked; its inputs, its launches, and a
//! host-side builder of its inputs.

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use half::f16;
use nvfp4_kernel::grouped::{GroupedPrepareArgs, SCALE_ROW_ALIGNMENT};
use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::layout::BlockedScales;

use crate::error::{Error, Result};
use crate::gpu::buffer::{check_alignment, check_device_address};
use crate::gpu::{Gpu, tensor_map};
use crate::matrix::NvFp4Matrix;

use super::{Backend, GroupedLayout, GroupedPlan, Preparation, UpWeights, WeightsView};
use crate::rules::{kernel_alpha, operand_rescale};

/// The inputs of a contiguous-convention launch (see the module doc). The plan's layout gives
/// every size; each buffer is checked against it.
pub struct ContiguousInputs<'a> {
    /// Packed e2m1 tokens of all groups, `rows × k/2` bytes.
    pub a: &'a CudaSlice<u8>,
    /// Their blocked e4m3 scales over `scale_rows` rows.
    pub a_scales: &'a CudaSlice<u8>,
    /// `G + 1` token row offsets (non-decreasing, at most `rows`).
    pub row_offsets: &'a CudaSlice<u32>,
    /// `G + 1` scale row offsets (multiples of 128, each group's rows inside its range).
    pub scale_offsets: &'a CudaSlice<u32>,
    /// Gate (dual) or plain weights: `G` groups of `N` rows (`2N` for a concatenated `w13`).
    pub gate: WeightsView<'a>,
    /// Up weights of a dual GEMM with [`UpWeights::Separate`]: `G` groups of `N` rows.
    pub up: Option<WeightsView<'a>>,
    /// Per-group scale of the gate (or plain) product (`G` values), or `None` for 1.
    pub alpha_gate: Option<&'a CudaSlice<f32>>,
    /// Per-group scale of the up product (`G` values), or `None` for 1. A dual GEMM's gate and
    /// up scales of a group, each times `scale` and the kernels' operand rescale, multiply to at
    /// most `2¹²⁶` ([`nvfp4_kernel::common::GATED_ALPHA_PRODUCT_LIMIT`]); device memory, so not
    /// checked: past it the group's outputs come out too small.
    pub alpha_up: Option<&'a CudaSlice<f32>>,
    /// A factor on both products of every group (for example the activations' global scale).
    pub scale: f32,
}

/// Device addresses of a contiguous-convention launch, for caller-owned memory
/// ([`GroupedPlan::launch_raw`]): the buffers of [`ContiguousInputs`] and C, with the sizes the
/// plan's layout gives.
#[derive(Clone, Copy, Debug)]
pub struct ContiguousAddresses {
    /// Packed tokens, `rows × k/2` bytes.
    pub a: u64,
    /// Their blocked scales over `scale_rows` rows.
    pub a_scales: u64,
    /// `G + 1` u32 token row offsets.
    pub row_offsets: u64,
    /// `G + 1` u32 scale row offsets.
    pub scale_offsets: u64,
    /// Gate (or plain) weights of group 0; group `g` is `weight_data_bytes` further on.
    pub gate: u64,
    /// Blocked scales of group 0's gate weights; group `g` is `weight_scale_bytes` further on.
    pub gate_scales: u64,
    /// Up weights of group 0 (a dual GEMM with separate up weights; else ignored).
    pub up: u64,
    /// Blocked scales of group 0's up weights.
    pub up_scales: u64,
    /// Rows of each group's up matrix (the plan's N; the gate's rows for a plain GEMM).
    pub up_rows: usize,
    /// Bytes between two groups' weights (gate and up alike).
    pub weight_data_bytes: usize,
    /// Bytes between two groups' weight scales.
    pub weight_scale_bytes: usize,
    /// `G` f32 gate (or plain) scales, or 0 for 1.
    pub alpha_gate: u64,
    /// `G` f32 up scales, or 0 for 1 (with the gate's, within the rule of
    /// [`ContiguousInputs::alpha_up`]).
    pub alpha_up: u64,
    /// A factor on both products of every group.
    pub scale: f32,
    /// C, `rows × N` fp16 (not used by [`GroupedPlan::launch_nvfp4_raw`]).
    pub out: u64,
}

/// Device addresses of a grouped dual GEMM's NVFP4 output in the contiguous convention
/// ([`GroupedPlan::launch_nvfp4_raw`]): `h` laid out as A is, so that the down projection's
/// grouped GEMM takes it as its tokens with A's offsets.
#[derive(Clone, Copy, Debug)]
pub struct ContiguousNvFp4Out {
    /// Packed e2m1 data, `rows × N/2` bytes (rows past the last group's end are not written).
    pub data: u64,
    /// Blocked e4m3 scales over the plan's `scale_rows` rows and N columns: group `g`'s from
    /// the 128-row block at its scale offset, as A's; each group's padding rows written as
    /// zeros, blocks of no group's not written.
    pub scales: u64,
    /// `G` f32 global scales, one per group (static, as a serving engine calibrates them).
    pub global_scales: u64,
}

/// What a contiguous-convention launch writes.
enum ContiguousOut<'a> {
    F16(&'a mut CudaSlice<f16>),
    NvFp4 {
        data: &'a mut CudaSlice<u8>,
        scales: &'a mut CudaSlice<u8>,
        global_scales: &'a CudaSlice<f32>,
    },
}

impl GroupedPlan {
    /// Enqueues a contiguous-convention launch writing `c` (`rows × N` fp16; rows past the
    /// last group's end are not written).
    pub fn launch(&self, gpu: &Gpu, inputs: &ContiguousInputs, c: &mut CudaSlice<f16>) -> Result<()> {
        self.launch_inputs(gpu, inputs, ContiguousOut::F16(c))
    }

    /// Enqueues a contiguous-convention grouped dual GEMM writing `h = silu(α1·A·B1ᵀ) ⊙
    /// (α3·A·B3ᵀ)` as NVFP4 in A's layout (see [`ContiguousNvFp4Out`]): `h_data` `rows × N/2`
    /// bytes, `h_scales` `BlockedScales::new(scale_rows, N)`, group `g` quantized with
    /// `global_scales[g]`; bit for bit the GPU quantizer on each group's fp16 rows (as
    /// `DualGemmPlan::launch_nvfp4`). On Blackwell the tcgen05 kernel's NVFP4 entries (never
    /// run: no B200 here).
    pub fn launch_nvfp4(
        &self,
        gpu: &Gpu,
        inputs: &ContiguousInputs,
        h_data: &mut CudaSlice<u8>,
        h_scales: &mut CudaSlice<u8>,
        global_scales: &CudaSlice<f32>,
    ) -> Result<()> {
        self.launch_inputs(
            gpu,
            inputs,
            ContiguousOut::NvFp4 {
                data: h_data,
                scales: h_scales,
                global_scales,
            },
        )
    }

    /// [`Self::launch_nvfp4`] on caller-owned memory (`at.out` is not used).
    ///
    /// # Safety
    /// As [`Self::launch_raw`], with `h` holding what [`ContiguousNvFp4Out`] says.
    pub unsafe fn launch_nvfp4_raw(
        &self,
        gpu: &Gpu,
        at: &ContiguousAddresses,
        h: &ContiguousNvFp4Out,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_raw_to(gpu, at, Some(h)) }
    }

    /// [`Self::launch`] and [`Self::launch_nvfp4`]: every buffer checked against the plan.
    fn launch_inputs(&self, gpu: &Gpu, inputs: &ContiguousInputs, out: ContiguousOut) -> Result<()> {
        let (groups, rows, scale_rows, n, k, up) = self.contiguous_layout()?;
        let gated = self.op.gated();
        let check_len = |arg: &'static str, got: usize, expected: usize| {
            if got == expected {
                Ok(())
            } else {
                Err(Error::BufferLength { arg, expected, got })
            }
        };
        check_len("a", inputs.a.len(), rows * k / 2)?;
        check_len(
            "a_scales",
            inputs.a_scales.len(),
            BlockedScales::new(scale_rows, k).len(),
        )?;
        check_len("row_offsets", inputs.row_offsets.len(), groups + 1)?;
        check_len("scale_offsets", inputs.scale_offsets.len(), groups + 1)?;
        match &out {
            ContiguousOut::F16(c) => check_len("c", c.len(), rows * n)?,
            ContiguousOut::NvFp4 {
                data,
                scales,
                global_scales,
            } => {
                check_len("h_data", data.len(), rows * n / 2)?;
                check_len("h_scales", scales.len(), BlockedScales::new(scale_rows, n).len())?;
                check_len("global_scales", global_scales.len(), groups)?;
            }
        }
        let concatenated = gated && up == UpWeights::Concatenated;
        let gate_rows = if concatenated { 2 * n } else { n };
        let check_weights = |arg: &'static str, w: &WeightsView, wanted_rows: usize| {
            if (w.groups, w.rows, w.k) != (groups, wanted_rows, k) {
                return Err(Error::ShapeMismatch(format!(
                    "`{arg}` holds {} groups of {} × {}, the plan needs {groups} of {wanted_rows} × {k}",
                    w.groups, w.rows, w.k
                )));
            }
            Ok(())
        };
        check_weights("gate", &inputs.gate, gate_rows)?;
        if !(inputs.scale.is_finite() && inputs.scale > 0.0) {
            return Err(Error::invalid(
                "scale",
                "must be finite and positive",
                inputs.scale,
            ));
        }
        let up_weights = match (gated, up, inputs.up) {
            (true, UpWeights::Separate, Some(w)) => {
                check_weights("up", &w, n)?;
                w
            }
            (true, UpWeights::Separate, None) => {
                return Err(Error::invalid(
                    "up",
                    "the plan's dual GEMM needs separate up weights",
                    "None",
                ));
            }
            (_, _, Some(_)) => {
                return Err(Error::invalid(
                    "up",
                    "only a dual GEMM with UpWeights::Separate takes up weights",
                    "Some",
                ));
            }
            _ => inputs.gate,
        };
        for (arg, alpha) in [("alpha_gate", inputs.alpha_gate), ("alpha_up", inputs.alpha_up)] {
            if let Some(alpha) = alpha {
                check_len(arg, alpha.len(), groups)?;
            }
        }
        if !gated && inputs.alpha_up.is_some() {
            return Err(Error::invalid(
                "alpha_up",
                "a plain GEMM has one α per group",
                "Some",
            ));
        }
        let stream = gpu.stream();
        // The guards keep each buffer's stream bookkeeping until the launch is enqueued.
        let (a, _a) = inputs.a.device_ptr(stream);
        let (a_scales, _a_scales) = inputs.a_scales.device_ptr(stream);
        let (row_offsets, _row_offsets) = inputs.row_offsets.device_ptr(stream);
        let (scale_offsets, _scale_offsets) = inputs.scale_offsets.device_ptr(stream);
        let (gate, _gate) = inputs.gate.data.device_ptr(stream);
        let (gate_scales, _gate_scales) = inputs.gate.scales.device_ptr(stream);
        let (up, _up) = up_weights.data.device_ptr(stream);
        let (up_scales, _up_scales) = up_weights.scales.device_ptr(stream);
        let alpha_gate = inputs.alpha_gate.map(|a| a.device_ptr(stream));
        let alpha_up = inputs.alpha_up.map(|a| a.device_ptr(stream));
        let (out, nvfp4, _out) = match out {
            ContiguousOut::F16(c) => {
                let (out, guard) = c.device_ptr_mut(stream);
                (out, None, vec![guard])
            }
            ContiguousOut::NvFp4 {
                data,
                scales,
                global_scales,
            } => {
                let (data, data_guard) = data.device_ptr_mut(stream);
                let (scales, scales_guard) = scales.device_ptr_mut(stream);
                let (global_scales, global_guard) = global_scales.device_ptr(stream);
                let h = ContiguousNvFp4Out {
                    data,
                    scales,
                    global_scales,
                };
                (data, Some(h), vec![data_guard, scales_guard, global_guard])
            }
        };
        self.launch_contiguous(
            gpu,
            nvfp4.as_ref(),
            &ContiguousAddresses {
                a,
                a_scales,
                row_offsets,
                scale_offsets,
                gate,
                gate_scales,
                up,
                up_scales,
                up_rows: up_weights.rows,
                weight_data_bytes: inputs.gate.group_data_bytes(),
                weight_scale_bytes: inputs.gate.group_scale_bytes(),
                alpha_gate: alpha_gate.as_ref().map_or(0, |(p, _)| *p),
                alpha_up: alpha_up.as_ref().map_or(0, |(p, _)| *p),
                scale: inputs.scale,
                out,
            },
        )
    }

    /// [`Self::launch`] on caller-owned memory: no allocation, no host↔device copy, no
    /// synchronization. Checks the alignments (16 bytes) and the scale; the sizes are the
    /// caller's to get right.
    ///
    /// # Safety
    /// Every address is device memory of this GPU's context holding what [`ContiguousAddresses`]
    /// says for the plan's layout (and, for weights, `G` groups at the given strides), live and
    /// not written by other work (C: not read either) until the launch completes.
    pub unsafe fn launch_raw(&self, gpu: &Gpu, at: &ContiguousAddresses) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_raw_to(gpu, at, None) }
    }

    /// [`Self::launch_raw`] writing C as fp16 or (`nvfp4`) as NVFP4.
    ///
    /// # Safety
    /// As [`Self::launch_raw`] and [`Self::launch_nvfp4_raw`].
    unsafe fn launch_raw_to(
        &self,
        gpu: &Gpu,
        at: &ContiguousAddresses,
        nvfp4: Option<&ContiguousNvFp4Out>,
    ) -> Result<()> {
        if !(at.scale.is_finite() && at.scale > 0.0) {
            return Err(Error::invalid("scale", "must be finite and positive", at.scale));
        }
        let (_, _, _, n, k, _) = self.contiguous_layout()?;
        if at.weight_data_bytes < n * k / 2 || at.weight_scale_bytes < BlockedScales::new(n, k).len() {
            return Err(Error::invalid(
                "weight strides",
                "must hold one group's weights and scales",
                format!("{} and {}", at.weight_data_bytes, at.weight_scale_bytes),
            ));
        }
        self.launch_contiguous(gpu, nvfp4, at)
    }

    /// The plan's contiguous layout `(groups, rows, scale_rows, n, k, up)`, or the error for a
    /// separate-convention plan.
    fn contiguous_layout(&self) -> Result<(usize, usize, usize, usize, usize, UpWeights)> {
        match self.layout {
            GroupedLayout::Contiguous {
                groups,
                rows,
                scale_rows,
                n,
                k,
                up,
            } => Ok((groups, rows, scale_rows, n, k, up)),
            GroupedLayout::Separate { .. } => Err(Error::invalid(
                "inputs",
                "this plan takes the separate convention (launch_separate)",
                "contiguous inputs",
            )),
        }
    }

    /// A contiguous-convention launch on buffers whose sizes the caller checked against the
    /// plan (the alignments are checked here), writing fp16 to `at.out` or NVFP4 to `nvfp4`.
    fn launch_contiguous(
        &self,
        gpu: &Gpu,
        nvfp4: Option<&ContiguousNvFp4Out>,
        at: &ContiguousAddresses,
    ) -> Result<()> {
        let (groups, rows, scale_rows, n, k, up) = self.contiguous_layout()?;
        let (out, out_scales, out_global_scales) = match nvfp4 {
            None => (at.out, 0, 0),
            Some(_) if !self.op.gated() => {
                return Err(Error::invalid(
                    "h",
                    "NVFP4 output is the grouped dual GEMM's",
                    self.op.name(),
                ));
            }
            Some(h) => {
                // A null scale address would select the fp16 kernel (which writes four times
                // the bytes of `h.data`): every address must be given.
                check_device_address("h scales", h.scales, 16)?;
                check_device_address("global_scales", h.global_scales, 4)?;
                (h.data, h.scales, h.global_scales)
            }
        };
        let concatenated = self.op.gated() && up == UpWeights::Concatenated;
        let gate_rows = if concatenated { 2 * n } else { n };
        // The output's data address is checked as `c` below (the NVFP4 data too).
        for (arg, address) in [
            ("a", at.a),
            ("a_scales", at.a_scales),
            ("gate", at.gate),
            ("gate scales", at.gate_scales),
            ("c", out),
        ] {
            check_device_address(arg, address, 16)?;
        }
        for (arg, address) in [
            ("row_offsets", at.row_offsets),
            ("scale_offsets", at.scale_offsets),
        ] {
            check_device_address(arg, address, 4)?;
        }
        // Up weights of their own are read only by a dual GEMM that takes them separately.
        let separate_up = self.op.gated() && up == UpWeights::Separate;
        for (arg, address) in [("up", at.up), ("up scales", at.up_scales)] {
            if separate_up {
                check_device_address(arg, address, 16)?;
            } else {
                check_alignment(arg, address, 16)?;
            }
        }
        let (up_base, up_scale_base, up_row_offset, up_rows) = if concatenated {
            // Up rows N..2N of the same matrices share the gate's scale layout of 2N rows.
            (at.gate, at.gate_scales, n as u32, gate_rows)
        } else {
            (at.up, at.up_scales, 0, at.up_rows)
        };
        // Blackwell reads tokens and weights through maps in its arguments, Hopper its weights.
        let maps = match self.backend {
            // Hopper: the weights' maps where the tiled kernel (not the decode-size one) reads
            // them through its weight ring (its tokens are the preparation pass's buffer).
            Backend::Sm90 {
                decode_window: None, ..
            } => [
                TensorMap::default(),
                tensor_map::sm90_weight_rows(at.gate, groups * gate_rows, k)?,
                tensor_map::sm90_weight_rows(up_base, groups * up_rows, k)?,
            ],
            Backend::Sm90 { .. } => [TensorMap::default(); 3],
            Backend::Sm100 { .. } => [
                tensor_map::packed_rows(at.a, rows, k)?,
                tensor_map::packed_rows(at.gate, groups * gate_rows, k)?,
                tensor_map::packed_rows(up_base, groups * up_rows, k)?,
            ],
        };
        let tile = self.launch_tile(None)?;
        let args = GroupedPrepareArgs {
            groups: groups as u32,
            separate_convention: 0,
            separate: std::ptr::null(),
            a: at.a as *const u8,
            a_scales: at.a_scales as *const u8,
            row_offsets: at.row_offsets as *const u32,
            scale_offsets: at.scale_offsets as *const u32,
            gate: at.gate,
            gate_scales: at.gate_scales,
            up: up_base,
            up_scales: up_scale_base,
            weight_stride: at.weight_data_bytes as u64,
            weight_scale_stride: at.weight_scale_bytes as u64,
            out: out as *mut u16,
            out_scales: out_scales as *mut u8,
            out_global_scales: out_global_scales as *const f32,
            alpha_gate: at.alpha_gate as *const f32,
            alpha_up: at.alpha_up as *const f32,
            alpha_factor: kernel_alpha(at.scale, operand_rescale(gpu.arch()))?,
            n: n as u32,
            k: k as u32,
            weight_rows: gate_rows as u32,
            up_row_offset,
            rows_capacity: rows as u32,
            scale_rows_capacity: scale_rows as u32,
            ..self.prepare_args(groups, tile)
        };
        self.enqueue(gpu, Preparation::Common(&args), tile, maps)
    }
}

/// Host-side builder of contiguous-convention inputs from per-group token matrices (as a
/// router would produce them): A's rows concatenated in group order, the scales re-laid so each
/// group starts on a 128-row block, and the two offset arrays.
#[derive(Clone, Debug)]
pub struct ContiguousTokens {
    /// Packed tokens, `rows × k/2` bytes (rows past the groups' are zero).
    pub data: Vec<u8>,
    /// Blocked scales over `scale_rows` rows.
    pub scales: Vec<u8>,
    /// `G + 1` token row offsets.
    pub row_offsets: Vec<u32>,
    /// `G + 1` scale row offsets.
    pub scale_offsets: Vec<u32>,
    /// Rows (the capacity).
    pub rows: usize,
    /// Rows of the scale layout.
    pub scale_rows: usize,
    /// K.
    pub k: usize,
}

impl ContiguousTokens {
    /// Rows of A's scales that any routing of `rows` tokens over `groups` groups fits in, each
    /// group starting on a 128-row block: `rows + 127·groups`, rounded up to 128.
    pub fn scale_rows_for(rows: usize, groups: usize) -> usize {
        let align = SCALE_ROW_ALIGNMENT as usize;
        (rows + (align - 1) * groups).next_multiple_of(align).max(align)
    }

    /// The contiguous form of `groups` (each `M_g × k`; a group may have zero rows when given as
    /// `None`), in a buffer of `rows` rows (at least the sum of the groups' rows).
    pub fn new(groups: &[Option<&NvFp4Matrix>], k: usize, rows: usize) -> Result<Self> {
        let total: usize = groups.iter().flatten().map(|m| m.rows()).sum();
        if total > rows {
            return Err(Error::invalid(
                "rows",
                format!("must be at least the groups' {total} rows"),
                rows,
            ));
        }
        let mut row_offsets = vec![0u32];
        let mut scale_offsets = vec![0u32];
        for (g, m) in groups.iter().enumerate() {
            let m_rows = match m {
                Some(m) if m.k() != k => {
                    return Err(Error::ShapeMismatch(format!(
                        "group {g} has K = {}, expected {k}",
                        m.k()
                    )));
                }
                Some(m) => m.rows(),
                None => 0,
            };
            row_offsets.push(row_offsets[g] + m_rows as u32);
            scale_offsets
                .push(scale_offsets[g] + m_rows.next_multiple_of(SCALE_ROW_ALIGNMENT as usize) as u32);
        }
        let scale_rows = Self::scale_rows_for(rows, groups.len());
        let mut data = vec![0u8; rows * k / 2];
        let layout = BlockedScales::new(scale_rows, k);
        let mut scales = vec![0u8; layout.len()];
        for (g, m) in groups.iter().enumerate() {
            let Some(m) = m else { continue };
            let (row0, scale_row0) = (row_offsets[g] as usize, scale_offsets[g] as usize);
            data[row0 * k / 2..(row0 + m.rows()) * k / 2].copy_from_slice(m.data());
            for r in 0..m.rows() {
                for column in 0..k / 16 {
                    scales[layout.offset(scale_row0 + r, column)] = m.scale_code(r, column)?;
                }
            }
        }
        Ok(Self {
            data,
            scales,
            row_offsets,
            scale_offsets,
            rows,
            scale_rows,
            k,
        })
    }
}
