//! Element-wise ops on the GPU:
//! * `silu(gate) ⊙ up` on fp16 / bf16 vectors, the last step of the unfused gate/up projection
//!   that the benchmarks compare against;
//! * the Mixture-of-Experts combine ([`Gpu::moe_combine_f16`], [`combine_reference`]): each
//!   token's router-weighted sum of its experts' output rows, read from the grouped GEMM's
//!   expert-sorted output, in one pass (deterministic: slot order, f32, no atomics);
//! * the Mixture-of-Experts routing ([`Gpu::moe_route_raw`], [`route_reference`]): the routed
//!   slots sorted by expert (stably), the grouped ops' offset tables and the combine's sources.

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use half::{bf16, f16};
/// The most experts the routing kernel ([`Gpu::moe_route_raw`]) sorts by.
pub use nvfp4_kernel::common::ROUTE_MAX_EXPERTS;
use nvfp4_kernel::common::{
    COMBINE_WEIGHTS_BF16, COMBINE_WEIGHTS_F16, COMBINE_WEIGHTS_F32, CombineArgs, RouteArgs, SiluMulArgs,
    route_count_words, route_ctas, route_shared_bytes,
};

use crate::error::{Error, Result};
use crate::gpu::buffer::check_device_address;
use crate::gpu::{Gpu, HalfFormat, LoadedKernel};

/// The sizes of a Mixture-of-Experts combine: `tokens` outputs of `width` values, each the sum
/// over its `top_k` slots of `weight · row`, the rows taken from `rows` expert output rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CombineShape {
    /// Expert output rows (the grouped GEMM's `row_offsets[G]`).
    pub rows: usize,
    /// Tokens (output rows).
    pub tokens: usize,
    /// Expert slots per token.
    pub top_k: usize,
    /// Values per row (a positive multiple of 8).
    pub width: usize,
}

impl CombineShape {
    /// Checks the kernel's limits: `width` a positive multiple of 8, `top_k ≥ 1`, and the
    /// counts it indexes with 32 bits.
    pub fn validate(&self) -> Result<()> {
        if self.width == 0 || !self.width.is_multiple_of(8) {
            return Err(Error::invalid(
                "width",
                "must be a positive multiple of 8",
                self.width,
            ));
        }
        if self.top_k == 0 {
            return Err(Error::invalid("top_k", "must be at least 1", self.top_k));
        }
        let limit = 1usize << 31;
        if self.rows >= limit || self.tokens.saturating_mul(self.top_k) >= limit {
            return Err(Error::invalid(
                "rows, tokens × top_k",
                "must be below 2^31",
                format!("{}, {} × {}", self.rows, self.tokens, self.top_k),
            ));
        }
        if self.tokens.saturating_mul(self.width) / 8 >= limit {
            return Err(Error::invalid(
                "tokens × width",
                "must be below 2^34",
                format!("{} × {}", self.tokens, self.width),
            ));
        }
        Ok(())
    }
}

/// The sizes of a Mixture-of-Experts routing: `slots` routed slots (tokens × `top_k`) over
/// `experts` experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteShape {
    /// Routed slots (tokens × top_k).
    pub slots: usize,
    /// Slots per token.
    pub top_k: usize,
    /// Experts (1 ..= 256).
    pub experts: usize,
}

impl RouteShape {
    /// Checks the kernel's limits.
    pub fn validate(&self) -> Result<()> {
        if self.top_k == 0 || !self.slots.is_multiple_of(self.top_k) {
            return Err(Error::invalid(
                "top_k",
                "must be at least 1 and divide the slots",
                format!("{} slots, top_k {}", self.slots, self.top_k),
            ));
        }
        if self.experts == 0 || self.experts > ROUTE_MAX_EXPERTS as usize {
            return Err(Error::invalid(
                "experts",
                format!("must be 1 to {ROUTE_MAX_EXPERTS} for the routing kernel"),
                self.experts,
            ));
        }
        if self.slots >= 1 << 31 {
            return Err(Error::invalid("slots", "must be below 2^31", self.slots));
        }
        Ok(())
    }

    /// u32 words of the count table that [`Gpu::moe_route_raw`] needs for this shape (0 when
    /// one CTA routes all slots: up to 4096).
    pub fn count_words(&self) -> usize {
        route_count_words(self.slots as u32, self.experts as u32) as usize
    }
}

/// The format of the combine's router weights ([`Gpu::moe_combine_raw`]): each is widened to
/// f32 exactly, so the result is the same as for the f32 values they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl WeightFormat {
    /// The kernel's code for the format.
    fn code(self) -> u32 {
        match self {
            Self::F32 => COMBINE_WEIGHTS_F32,
            Self::F16 => COMBINE_WEIGHTS_F16,
            Self::Bf16 => COMBINE_WEIGHTS_BF16,
        }
    }

    /// Bytes of one weight (and the alignment the kernel needs).
    pub fn bytes(self) -> u64 {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::Bf16 => 2,
        }
    }
}

/// The routing on the CPU: `(token_rows, sources, row_offsets, scale_offsets)` as the kernel
/// writes them for `expert_of` (one expert per slot; one outside `0..experts` is in no group and
/// sorts last, its source `u32::MAX`).
pub fn route_reference(shape: RouteShape, expert_of: &[i64]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let bin = |e: i64| {
        if (0..shape.experts as i64).contains(&e) {
            e as usize
        } else {
            shape.experts
        }
    };
    let mut order: Vec<usize> = (0..shape.slots).collect();
    order.sort_by_key(|&i| bin(expert_of[i])); // stable
    let token_rows = order.iter().map(|&i| (i / shape.top_k) as u32).collect();
    let mut sources = vec![u32::MAX; shape.slots];
    for (row, &i) in order.iter().enumerate() {
        if bin(expert_of[i]) < shape.experts {
            sources[i] = row as u32;
        }
    }
    let mut counts = vec![0u32; shape.experts + 1];
    for &e in expert_of {
        counts[bin(e)] += 1;
    }
    let (mut rows, mut padded) = (vec![0u32], vec![0u32]);
    for &c in &counts[..shape.experts] {
        rows.push(rows.last().unwrap() + c);
        padded.push(padded.last().unwrap() + c.div_ceil(128) * 128);
    }
    (token_rows, sources, rows, padded)
}

/// The combine on the CPU, the kernel's arithmetic: `out[t·width + c] = Σ_j weights[t·top_k +
/// j] · rows[sources[t·top_k + j]·width + c]`, fused multiply-adds in f32 in slot order from
/// 0; a source outside `0..rows` adds nothing. Returned unrounded (f32).
pub fn combine_reference(shape: CombineShape, rows: &[f16], sources: &[i32], weights: &[f32]) -> Vec<f32> {
    let CombineShape {
        rows: row_count,
        tokens,
        top_k,
        width,
    } = shape;
    let mut out = vec![0f32; tokens * width];
    for t in 0..tokens {
        let sum = &mut out[t * width..(t + 1) * width];
        for j in 0..top_k {
            let source = sources[t * top_k + j];
            if source < 0 || source as usize >= row_count {
                continue;
            }
            let row = &rows[source as usize * width..(source as usize + 1) * width];
            let weight = weights[t * top_k + j];
            for (s, v) in sum.iter_mut().zip(row) {
                *s = weight.mul_add(v.to_f32(), *s);
            }
        }
    }
    out
}

impl Gpu {
    /// `out = silu(gate) ⊙ up` element-wise on fp16 buffers of one length (a multiple of 8),
    /// stream-ordered: the last step of an unfused gate/up projection.
    pub fn silu_mul_f16(
        &self,
        gate: &CudaSlice<f16>,
        up: &CudaSlice<f16>,
        out: &mut CudaSlice<f16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.kernels.silu_mul_f16, gate, up, out)
    }

    /// `out = silu(gate) ⊙ up` element-wise on bf16 buffers (see [`Self::silu_mul_f16`]).
    pub fn silu_mul_bf16(
        &self,
        gate: &CudaSlice<bf16>,
        up: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.kernels.silu_mul_bf16, gate, up, out)
    }

    fn launch_silu_mul<T: cudarc::driver::DeviceRepr>(
        &self,
        kernel: &LoadedKernel<SiluMulArgs>,
        gate: &CudaSlice<T>,
        up: &CudaSlice<T>,
        out: &mut CudaSlice<T>,
    ) -> Result<()> {
        let len = gate.len();
        if up.len() != len {
            return Err(Error::BufferLength {
                arg: "up",
                expected: len,
                got: up.len(),
            });
        }
        if out.len() != len {
            return Err(Error::BufferLength {
                arg: "out",
                expected: len,
                got: out.len(),
            });
        }
        if !len.is_multiple_of(8) || len >= 1 << 31 {
            return Err(Error::invalid("len", "must be a multiple of 8 below 2^31", len));
        }
        let stream = self.stream();
        let (gate, _gate) = gate.device_ptr(stream);
        let (up, _up) = up.device_ptr(stream);
        let (out, _out) = out.device_ptr_mut(stream);
        let args = SiluMulArgs {
            gate: gate as *const u32,
            up: up as *const u32,
            out: out as *mut u32,
            len: len as u32,
        };
        // SAFETY: the three buffers hold `len` elements (checked), allocations are 256-aligned.
        unsafe {
            kernel.launch(
                stream,
                self.grid_stride_blocks(kernel, (len / 8) as u32),
                0,
                &args,
                false,
            )
        }
    }

    /// The Mixture-of-Experts combine into fp16 `out` (`tokens × width`): `out[t] = Σ_j
    /// weights[t·top_k + j] · rows[sources[t·top_k + j]]` (see [`combine_reference`]), with
    /// `rows` the experts' fp16 output rows (`row_count × width`, for example the grouped
    /// GEMM's expert-sorted output), `sources` and `weights` `tokens × top_k`; `tokens` and
    /// `width` follow from the buffers' lengths. A source outside `0..row_count` (say −1 for a
    /// slot whose expert ran on another GPU) adds nothing. Stream-ordered.
    pub fn moe_combine_f16(
        &self,
        rows: &CudaSlice<f16>,
        sources: &CudaSlice<i32>,
        weights: &CudaSlice<f32>,
        top_k: usize,
        out: &mut CudaSlice<f16>,
    ) -> Result<()> {
        self.launch_combine(HalfFormat::F16, rows, sources, weights, top_k, out)
    }

    /// [`Self::moe_combine_f16`] into bf16 `out`.
    pub fn moe_combine_bf16(
        &self,
        rows: &CudaSlice<f16>,
        sources: &CudaSlice<i32>,
        weights: &CudaSlice<f32>,
        top_k: usize,
        out: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        self.launch_combine(HalfFormat::Bf16, rows, sources, weights, top_k, out)
    }

    fn launch_combine<T: cudarc::driver::DeviceRepr>(
        &self,
        format: HalfFormat,
        rows: &CudaSlice<f16>,
        sources: &CudaSlice<i32>,
        weights: &CudaSlice<f32>,
        top_k: usize,
        out: &mut CudaSlice<T>,
    ) -> Result<()> {
        if top_k == 0 || !sources.len().is_multiple_of(top_k) {
            return Err(Error::invalid(
                "sources",
                "must hold tokens × top_k entries (top_k ≥ 1)",
                format!("{} entries, top_k {top_k}", sources.len()),
            ));
        }
        let tokens = sources.len() / top_k;
        if weights.len() != sources.len() {
            return Err(Error::BufferLength {
                arg: "weights",
                expected: sources.len(),
                got: weights.len(),
            });
        }
        if tokens == 0 {
            return Ok(());
        }
        if !out.len().is_multiple_of(tokens) {
            return Err(Error::invalid(
                "out",
                "must hold tokens × width values",
                format!("{} values for {tokens} tokens", out.len()),
            ));
        }
        let width = out.len() / tokens;
        if width == 0 || !rows.len().is_multiple_of(width) {
            return Err(Error::invalid(
                "rows",
                "must hold whole rows of the output's width",
                format!("{} values, width {width}", rows.len()),
            ));
        }
        let shape = CombineShape {
            rows: rows.len() / width,
            tokens,
            top_k,
            width,
        };
        let stream = self.stream();
        let (rows, _rows) = rows.device_ptr(stream);
        let (sources, _sources) = sources.device_ptr(stream);
        let (weights, _weights) = weights.device_ptr(stream);
        let (out, _out) = out.device_ptr_mut(stream);
        // SAFETY: the buffers hold the sizes of `shape` (checked above) and live until the
        // launch has run (their guards).
        unsafe { self.moe_combine_raw(shape, rows, sources, weights, WeightFormat::F32, format, out) }
    }

    /// [`Self::moe_combine_f16`] on caller-owned memory: `rows` (`shape.rows × width` fp16,
    /// 16-byte aligned), `sources` (i32, 4-byte aligned) and `weights` (`weight_format`,
    /// aligned to its size), `tokens × top_k` each, `out` (`tokens × width` of `format`,
    /// 16-byte aligned). Stream-ordered.
    ///
    /// # Safety
    /// The addresses are device memory of this GPU's context with those sizes, not written by
    /// other work until the kernel completes (`out` not read either).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn moe_combine_raw(
        &self,
        shape: CombineShape,
        rows: u64,
        sources: u64,
        weights: u64,
        weight_format: WeightFormat,
        format: HalfFormat,
        out: u64,
    ) -> Result<()> {
        shape.validate()?;
        if shape.tokens == 0 {
            return Ok(());
        }
        check_device_address("rows", rows, 16)?;
        check_device_address("sources", sources, 4)?;
        check_device_address("weights", weights, weight_format.bytes())?;
        check_device_address("out", out, 16)?;
        let kernel = &self.kernels.combine[match format {
            HalfFormat::F16 => 0,
            HalfFormat::Bf16 => 1,
        }];
        let args = CombineArgs {
            rows: rows as *const u32,
            sources: sources as *const i32,
            weights: weights as *const u8,
            out: out as *mut u32,
            row_count: shape.rows as u32,
            tokens: shape.tokens as u32,
            top_k: shape.top_k as u32,
            width: shape.width as u32,
            weight_format: weight_format.code(),
        };
        let vectors = (shape.tokens * shape.width / 8) as u32;
        // SAFETY: the caller's buffers hold the shape's sizes (contract), which fit the
        // kernel's 32-bit indices (validated).
        unsafe {
            kernel.launch(
                self.stream(),
                self.grid_stride_blocks(kernel, vectors),
                0,
                &args,
                false,
            )
        }
    }

    /// The Mixture-of-Experts routing on the GPU, one kernel ([`route_reference`] on the CPU):
    /// the `shape.slots` slots' experts at `expert_of` (int64, 8-byte aligned; PyTorch's `topk`
    /// indices) sorted stably by expert into `token_rows` (u32, the token of each sorted row),
    /// `sources` (u32, each slot's sorted row, `u32::MAX` for a slot of no expert: an expert
    /// outside `0..experts`, which sorts last and is in no group), and the grouped ops'
    /// `row_offsets` and `scale_offsets` (`experts + 1` u32 each, the scale offsets each expert's
    /// rows rounded up to 128). `counts` is a scratch table of [`RouteShape::count_words`] u32
    /// (0 for up to 4096 slots, and then unused: may be 0): above that each CTA routes 4096
    /// slots, after a counting pass. Stream-ordered; deterministic.
    ///
    /// # Safety
    /// The addresses are device memory of this GPU's context with those sizes (4-byte aligned),
    /// not written by other work until the kernels complete (the outputs not read either).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn moe_route_raw(
        &self,
        shape: RouteShape,
        expert_of: u64,
        token_rows: u64,
        sources: u64,
        row_offsets: u64,
        scale_offsets: u64,
        counts: u64,
    ) -> Result<()> {
        shape.validate()?;
        check_device_address("expert_of", expert_of, 8)?;
        for (arg, address) in [
            ("token_rows", token_rows),
            ("sources", sources),
            ("row_offsets", row_offsets),
            ("scale_offsets", scale_offsets),
        ] {
            check_device_address(arg, address, 4)?;
        }
        let ctas = route_ctas(shape.slots as u32);
        if ctas > 1 {
            check_device_address("counts", counts, 4)?;
        }
        let args = RouteArgs {
            expert_of: expert_of as *const u32,
            token_rows: token_rows as *mut u32,
            sources: sources as *mut u32,
            row_offsets: row_offsets as *mut u32,
            scale_offsets: scale_offsets as *mut u32,
            slots: shape.slots as u32,
            top_k: shape.top_k as u32,
            experts: shape.experts as u32,
            counts: counts as *mut u32,
        };
        let shared = route_shared_bytes(args.experts);
        // SAFETY: the caller's buffers hold the shape's sizes, the count table included
        // (contract); the tables' shared memory is at most 34 KiB (no opt-in needed); the
        // routing launch reads the counts after the counting launch (stream order).
        unsafe {
            if ctas > 1 {
                self.kernels
                    .route_count
                    .launch(self.stream(), ctas, shared, &args, false)?;
            }
            self.kernels
                .route
                .launch(self.stream(), ctas, shared, &args, false)
        }
    }
}
