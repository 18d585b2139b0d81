//! The fused dual GEMM on the GPU: `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` from device NVFP4 matrices to a
//! device fp16 buffer, and the dense plan it shares with the plain GEMM (`crate::gemm`), whose
//! sm_90a kernels are the same with a one-product epilogue.
//!
//! A [`DualGemmPlan`] is built once per (M, N, K) on a [`Gpu`]: it checks the shape against the
//! kernel's rules, picks the tile and the persistent grid, and holds the kernel function. Each
//! [`DualGemmPlan::launch`] checks the operands against the plan and enqueues the kernel (on
//! Hopper with 64 or more tokens per tile, after the token pre-decoding kernel; on Hopper with
//! M ≤ 16 where its K split runs in one wave, and the plain GEMM's M ≤ 8 in any, the
//! decode-size kernel with its in-kernel K-split reduction) on the GPU's stream,
//! without synchronizing the host. On Hopper the kernels are programmatic dependent
//! launches by default (see [`DualGemmPlan::set_programmatic_launch`]).
//!
//! This module is the op's front end (plan, launch, checks); the planning of each architecture
//! is in `sm90_plan.rs` ([`Sm90Geometry`], [`DecodeSplit`]) and `sm100_plan.rs`
//! ([`Sm100Geometry`]).

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4_kernel::sm90::config::{
    self as sm90, DECODE_MAX_TOKENS, decode_partial_words, decode_shared_bytes, decode_token_tiles, padded_k,
    tile_n,
};
use nvfp4_kernel::sm90::registry::TileEpilogue;
use nvfp4_kernel::sm100::config as sm100;

use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{
    Arch, DecodeForm, DeviceNvFp4Matrix, F16Mut, Gpu, HalfFormat, NvFp4Mut, NvFp4Ref, tensor_map,
};
use crate::problem::DualGemmShape;
use crate::rules::{SM90_OPERAND_RESCALE, StreamKState, device_globals, kernel_alphas, set_a_collector};

mod sm100_plan;
mod sm90_plan;

pub use sm90_plan::{DecodeSplit, DecodeWholeK, MAX_MULTIPROCESSORS, Sm90Geometry, grid_size};
use sm90_plan::{DecodeState, PredecodedTokens};
pub use sm100_plan::Sm100Geometry;

/// A validated dual-GEMM launch for one shape on one GPU, with its stream-K workspace (the
/// dense plan of the gated kernels, which the plain GEMM's plan shares).
pub struct DualGemmPlan(DensePlan);

/// A validated launch of the dense kernels for one shape on one GPU: the dual GEMM (`gated`) or
/// the plain GEMM (`crate::gemm`, sm_90a), with its stream-K workspace.
///
/// Launches of one plan must be stream-ordered (one stream at a time): they share the
/// workspace, the publication flags, the launch-ticket counter and, on Hopper for M large
/// enough for 64-token tiles, an M × padded-K fp16 token buffer (2·M·K bytes) that each launch
/// first rewrites from A with a small pre-decoding kernel. No launch depends on an earlier one
/// having finished cleanly: flags carry the launch's epoch (see
/// [`nvfp4_kernel::schedule::Ticket`]).
pub(crate) struct DensePlan {
    shape: DualGemmShape,
    /// The dual GEMM, else the plain GEMM (`b2` unused).
    gated: bool,
    kernel: PlannedKernel,
    programmatic: bool,
    a_collector: sm100::ACollectorUse,
    /// Test support (`Self::abort_next_launch`): 0, or the next launch's stop point.
    abort_next: std::sync::atomic::AtomicU32,
}

/// What a dense launch writes: C in fp16, or (dual GEMM, Hopper) C quantized to NVFP4 in the
/// epilogue.
pub(crate) enum DenseOut<'a> {
    /// `M × N` fp16, row-major.
    F16(F16Mut<'a>),
    /// An `M × N` NVFP4 matrix, bit-identical to quantizing the fp16 C with its global scale.
    NvFp4(NvFp4Mut<'a>),
}

/// How a dense launch takes part in a chain of kernels that hand the sm_90a decoded token
/// operand on (`nvfp4_kernel::sm90::tokens`), so that no pre-decoding pass runs between them:
/// the MLP op's quantizer writes x's operand into the dual GEMM's buffer, the dual GEMM's NVFP4
/// epilogue writes h's into the down projection's.
#[derive(Clone, Copy, Default)]
pub(crate) struct TokenChain {
    /// The stream's previous kernel wrote A's decoded operand into this plan's buffer
    /// ([`DensePlan::decoded_tokens`]) from the same A: the launch runs no pre-decoding pass.
    pub tokens_written: bool,
    /// The address of the next plan's decoded token operand for C (0: none; NVFP4 output of
    /// the tiled kernel only), written beside C.
    pub decoded_out: u64,
}

/// Resident CTAs per SM by split length, as a function (0 past the table: does not fit).
fn per_split(resident: &[u32]) -> impl Fn(u32) -> u32 + '_ {
    |steps| resident.get(steps as usize).copied().unwrap_or(0)
}

/// The kernel a plan launches.
#[allow(clippy::large_enum_variant)] // one per plan, never moved in a loop
enum PlannedKernel {
    /// Hopper, with its stream-K state and, for large token tiles, the pre-decoded tokens.
    Sm90 {
        geometry: Sm90Geometry,
        stream_k: StreamKState,
        tokens: Option<Box<PredecodedTokens>>,
    },
    /// Hopper, decode-size token counts (M ≤ `DECODE_MAX_TOKENS`, see
    /// [`DecodeSplit::serves`]): the K-split partial sums and the split
    /// (`nvfp4_kernel::sm90::decode`).
    Sm90Decode(Box<DecodeState>),
    /// Hopper, one token tile whose whole-K CTAs are all resident at once
    /// ([`DecodeWholeK::choose`]; `nvfp4_kernel::sm90::decode`): nothing to reduce between CTAs.
    Sm90WholeK(DecodeWholeK),
    /// Blackwell (never run here).
    Sm100 { geometry: Sm100Geometry },
}

impl Gpu {
    /// Plans `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` for `shape` on this GPU.
    pub fn plan_dual_gemm(&self, shape: DualGemmShape) -> Result<DualGemmPlan> {
        self.check_not_capturing("planning a dual GEMM")?;
        self.plan_dense(shape, true).map(DualGemmPlan)
    }

    /// The decode-size plan of `shape` on sm_90a, if one of those kernels serves it: for one
    /// token tile the whole-K CTAs where a block of them fills the SMs in one wave
    /// ([`DecodeWholeK::choose`]), else (M ≤ `DECODE_MAX_TOKENS`) a split whose CTAs are
    /// resident in one wave, or the plain GEMM's one token tile ([`DecodeSplit::serves`]); for
    /// two token tiles the wide entries' split where it pays ([`DecodeSplit::takes_wide`]).
    fn plan_sm90_decode(&self, shape: DualGemmShape, gated: bool) -> Result<Option<PlannedKernel>> {
        if shape.m == 0 || shape.m > DECODE_MAX_TOKENS as usize {
            return Ok(None);
        }
        let kernels = self.sm90_kernels(op_name(gated))?;
        // The tiled plan validates the shape (N, K multiples, sizes) for both paths.
        Sm90Geometry::for_op(shape, self.multiprocessors(), gated)?;
        let (m, n, k) = (shape.m as u32, shape.n as u32, shape.k as u32);
        if let Some(whole_k) = self.plan_sm90_whole_k(m, n, k, gated)? {
            return Ok(Some(PlannedKernel::Sm90WholeK(whole_k)));
        }
        let tiles = decode_token_tiles(m);
        let fit = |form: DecodeForm| -> Result<(DecodeSplit, Vec<u32>)> {
            // Resident CTAs per SM for each split length (its token rows in shared memory).
            let kernel = kernels.decode(tiles, TileEpilogue::f16(gated), form)?;
            let resident = (0..=sm90::DECODE_MAX_STEPS_PER_SPLIT)
                .map(|steps| {
                    kernel.resident_per_sm_with(decode_shared_bytes(
                        m,
                        steps,
                        false,
                        false,
                        form.warps_per_matrix(),
                    ))
                })
                .collect::<Result<Vec<u32>>>()?;
            let group_n = sm90::decode_group_n(form.warps_per_matrix());
            let split = DecodeSplit::fitted_rows(n, k, self.multiprocessors(), per_split(&resident), group_n);
            Ok((split, resident))
        };
        let (standard, resident) = fit(DecodeForm::Standard)?;
        let standard_serves = standard.serves(m, gated, self.multiprocessors(), per_split(&resident));
        // Two token tiles: the wide entries where their split pays (`DecodeSplit::takes_wide`).
        let wide_n = sm90::decode_group_n(sm90::DECODE_WIDE_WARPS_PER_MATRIX);
        let mut choice = standard_serves.then_some((DecodeForm::Standard, standard));
        if tiles == 2 && n.is_multiple_of(wide_n) {
            let (wide, resident) = fit(DecodeForm::Wide)?;
            if wide.takes_wide(standard_serves, self.multiprocessors(), per_split(&resident)) {
                choice = Some((DecodeForm::Wide, wide));
            }
        }
        let Some((form, split)) = choice else {
            return Ok(None);
        };
        // Two token tiles copy their packed rows first where that keeps the wave resident.
        // (The occupancy query only where there is a copy to weigh.)
        let copied_tokens = tiles > 1 && {
            let kernel = kernels.decode(tiles, TileEpilogue::f16(gated), form)?;
            let with_copy = kernel.resident_per_sm_with(decode_shared_bytes(
                m,
                split.steps_per_split,
                false,
                true,
                form.warps_per_matrix(),
            ))?;
            split.copies_tokens(m, self.multiprocessors(), |_| with_copy)
        };
        let partial_words = usize::try_from(decode_partial_words(m, n, split.splits))
            .map_err(|_| Error::invalid("m × n", "too large for one launch", format!("{m} × {n}")))?;
        Ok(Some(PlannedKernel::Sm90Decode(Box::new(DecodeState {
            partials: DeviceBuffer::zeros(self.stream(), partial_words)?,
            arrivals: DeviceBuffer::zeros(self.stream(), (n / split.group_n) as usize)?,
            split,
            copied_tokens,
            // The one-tile dual GEMM's long splits: two steps an iteration.
            form: match form {
                DecodeForm::Standard if split.paired(m, gated) => DecodeForm::Paired,
                form => form,
            },
        }))))
    }

    /// The whole-K decode-size block for `m × n × k` on sm_90a, if one fits a wave
    /// ([`DecodeWholeK::choose`]; the residency with the NVFP4 output's staging, so that every
    /// output format gets the same block).
    fn plan_sm90_whole_k(&self, m: u32, n: u32, k: u32, gated: bool) -> Result<Option<DecodeWholeK>> {
        if decode_token_tiles(m) != 1 {
            return Ok(None);
        }
        let kernels = self.sm90_kernels(op_name(gated))?;
        let epilogue = TileEpilogue::f16(gated);
        let mut resident = Vec::new();
        for (warps, small) in DecodeWholeK::BLOCKS {
            // Each op's own shared memory: the plain GEMM stages no token rows, so 5–8 tokens
            // fit whole-K blocks too (H100: 8×4096×7168 0.946, 8×4096×14336 0.966 the split
            // kernel's time).
            let shared = sm90::decode_whole_k_shared_bytes(m, k, warps, gated, true);
            let count = if shared > self.shared_bytes_per_block() || (small && !gated) {
                0
            } else {
                kernels
                    .decode_whole_k(epilogue, small)?
                    .resident_per_sm_of(32 * warps, shared)?
            };
            resident.push(((warps, small), count));
        }
        Ok(DecodeWholeK::choose(
            [m, n, k],
            gated,
            self.multiprocessors(),
            |warps, small| {
                resident
                    .iter()
                    .find(|(block, _)| *block == (warps, small))
                    .map_or(0, |&(_, count)| count)
            },
        ))
    }

    /// Plans the dense kernels for `shape`: the dual GEMM (`gated`) or the plain GEMM.
    pub(crate) fn plan_dense(&self, shape: DualGemmShape, gated: bool) -> Result<DensePlan> {
        let op = op_name(gated);
        let kernel = match self.arch() {
            Arch::Sm90a if let Some(decode) = self.plan_sm90_decode(shape, gated)? => decode,
            Arch::Sm90a => {
                self.sm90_kernels(op)?;
                let geometry = Sm90Geometry::for_op(shape, self.multiprocessors(), gated)?;
                let stream_k = StreamKState::new(self, geometry.workspace_words(), geometry.flag_words())?;
                let tokens = if geometry.tile.predecoded_tokens() {
                    let pitch = padded_k(shape.k as u32) as usize;
                    let buffer = DeviceBuffer::zeros(self.stream(), shape.m * pitch)?;
                    let map = tensor_map::predecoded_tokens(
                        buffer.address(),
                        shape.m,
                        pitch,
                        geometry.tile.tokens,
                    )?;
                    Some(Box::new(PredecodedTokens { buffer, map }))
                } else {
                    None
                };
                PlannedKernel::Sm90 {
                    geometry,
                    stream_k,
                    tokens,
                }
            }
            Arch::Sm100f => {
                self.sm100_kernels(op)?;
                PlannedKernel::Sm100 {
                    geometry: Sm100Geometry::for_op(shape, self.multiprocessors(), gated)?,
                }
            }
        };
        let programmatic = !matches!(kernel, PlannedKernel::Sm100 { .. });
        Ok(DensePlan {
            shape,
            gated,
            kernel,
            programmatic,
            a_collector: sm100::ACollectorUse::default(),
            abort_next: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// Plans, allocates C and launches in one call (see [`DualGemmPlan::launch`]).
    pub fn dual_gemm(
        &self,
        a: &DeviceNvFp4Matrix,
        b1: &DeviceNvFp4Matrix,
        b2: &DeviceNvFp4Matrix,
    ) -> Result<CudaSlice<f16>> {
        let shape = DualGemmShape {
            m: a.rows(),
            n: b1.rows(),
            k: a.k(),
        };
        let plan = self.plan_dual_gemm(shape)?;
        // SAFETY: the kernel writes every element of C before anyone can read it.
        let mut c = unsafe { self.stream().alloc::<f16>(shape.m * shape.n) }?;
        plan.launch(self, a, b1, b2, &mut c)?;
        Ok(c)
    }

    /// Plans, allocates H and launches the dual GEMM with NVFP4 output in one call (see
    /// [`DualGemmPlan::launch_nvfp4`]).
    pub fn dual_gemm_nvfp4(
        &self,
        a: &DeviceNvFp4Matrix,
        b1: &DeviceNvFp4Matrix,
        b2: &DeviceNvFp4Matrix,
        global_scale: f32,
    ) -> Result<DeviceNvFp4Matrix> {
        let plan = self.plan_dual_gemm(DualGemmShape {
            m: a.rows(),
            n: b1.rows(),
            k: a.k(),
        })?;
        let mut h = self.alloc_nvfp4(a.rows(), b1.rows())?;
        plan.launch_nvfp4(self, a, b1, b2, &mut h, global_scale)?;
        Ok(h)
    }
}

impl DualGemmPlan {
    /// The planned shape.
    pub fn shape(&self) -> DualGemmShape {
        self.0.shape
    }

    /// Whether launches are programmatic dependent launches (see
    /// [`DualGemmPlan::set_programmatic_launch`]).
    pub fn programmatic_launch(&self) -> bool {
        self.0.programmatic
    }

    /// Chooses whether the Hopper kernels are enqueued as *programmatic dependent launches*
    /// (the default there): their CTAs may start while the stream's previous kernel finishes,
    /// set up shared memory, and wait (`griddepcontrol.wait`) for that kernel to complete before
    /// they touch any memory, so results and stream order are unchanged and only the launch
    /// latency overlaps. Back-to-back calls gain the most (measured in `benches/dual_gemm`,
    /// which times both). Blackwell plans launch plainly: asking for it there is an error.
    pub fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        self.0.set_programmatic_launch(enabled)
    }

    /// Test support: makes the next launch (Hopper) stop mid-way on purpose, as an interrupted
    /// launch would: every CTA takes its stream-K ticket, the `ctas` that started first compute
    /// their shares and publish their partial sums, the others leave at once, and no reducer
    /// waits (split tiles get no output). The launches after it must be right: flags carry
    /// their launch's epoch and are never reset, so what a stopped launch leaves behind never
    /// matches a later one (`tests/gpu_dual_gemm.rs`). `ctas` in `1..=grid`; the Blackwell
    /// kernels take no tickets (an error there).
    pub fn abort_next_launch(&self, ctas: u32) -> Result<()> {
        self.0.abort_next_launch(ctas)
    }

    /// Blackwell: whether A stays in the MMA's collector between the gate and up MMAs
    /// ([`sm100::ACollectorUse`]; `Reuse` by default). Hopper has no MMA collector: asking for
    /// `Discard` there is an error.
    pub fn set_a_collector_use(&mut self, collector: sm100::ACollectorUse) -> Result<()> {
        set_a_collector(
            &mut self.0.a_collector,
            matches!(self.0.kernel, PlannedKernel::Sm100 { .. }),
            collector,
        )
    }

    /// Tile size (tokens × outputs) and persistent CTAs of the launch.
    pub fn tile_and_grid(&self) -> ((u32, u32), u32) {
        self.0.tile_and_grid()
    }

    /// Enqueues `c = silu(a·b1ᵀ) ⊙ (a·b2ᵀ)` (`c`: M × N fp16, row-major) on `gpu`'s stream.
    /// Operands must have the planned shape; global scales are applied to each product.
    pub fn launch(
        &self,
        gpu: &Gpu,
        a: &DeviceNvFp4Matrix,
        b1: &DeviceNvFp4Matrix,
        b2: &DeviceNvFp4Matrix,
        c: &mut CudaSlice<f16>,
    ) -> Result<()> {
        let stream = gpu.stream();
        self.launch_views(
            gpu,
            a.view(stream),
            b1.view(stream),
            b2.view(stream),
            F16Mut::of(c, stream),
        )
    }

    /// [`Self::launch`] on views (for example of caller-owned memory: [`NvFp4Ref::from_raw`]):
    /// no allocation, no host↔device copy, no synchronization.
    pub fn launch_views(&self, gpu: &Gpu, a: NvFp4Ref, b1: NvFp4Ref, b2: NvFp4Ref, c: F16Mut) -> Result<()> {
        self.0.launch_views(gpu, a, b1, Some(b2), DenseOut::F16(c))
    }

    /// Enqueues `h = silu(a·b1ᵀ) ⊙ (a·b2ᵀ)` written as NVFP4 (`h`: M × N, quantized along N in
    /// 16-output blocks with `global_scale`, which becomes `h`'s): bit for bit what
    /// [`Gpu::quantize_into`] of the fp16 result of [`Self::launch`] gives, without that fp16
    /// result in memory or the quantization pass. `h` is what the MLP's down projection takes
    /// as its activations. Static global scale: a serving engine calibrates it, as it does the
    /// activations' `input_scale`; values beyond `6 · 448 · global_scale` saturate.
    ///
    /// The quantizer reports a non-finite value as an error; this epilogue has no such check:
    /// an fp16 overflow (|h| > 65504) saturates its block's scale instead. On Blackwell the
    /// epilogue is written and checked statically but has never run (no B200 here).
    pub fn launch_nvfp4(
        &self,
        gpu: &Gpu,
        a: &DeviceNvFp4Matrix,
        b1: &DeviceNvFp4Matrix,
        b2: &DeviceNvFp4Matrix,
        h: &mut DeviceNvFp4Matrix,
        global_scale: f32,
    ) -> Result<()> {
        let stream = gpu.stream();
        self.launch_nvfp4_views(
            gpu,
            a.view(stream),
            b1.view(stream),
            b2.view(stream),
            NvFp4Mut::of(h, stream, global_scale)?,
        )
    }

    /// [`Self::launch_nvfp4`] on views (the global scale is `h`'s).
    pub fn launch_nvfp4_views(
        &self,
        gpu: &Gpu,
        a: NvFp4Ref,
        b1: NvFp4Ref,
        b2: NvFp4Ref,
        h: NvFp4Mut,
    ) -> Result<()> {
        self.0.launch_views(gpu, a, b1, Some(b2), DenseOut::NvFp4(h))
    }
}

/// The name of the dense op in errors.
fn op_name(gated: bool) -> &'static str {
    if gated { "dual GEMM" } else { "GEMM" }
}

impl DensePlan {
    /// As [`DualGemmPlan::set_programmatic_launch`].
    pub(crate) fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        match self.kernel {
            PlannedKernel::Sm90 { .. } | PlannedKernel::Sm90Decode(_) | PlannedKernel::Sm90WholeK(_) => {
                self.programmatic = enabled;
                Ok(())
            }
            PlannedKernel::Sm100 { .. } if enabled => Err(Error::invalid(
                "programmatic launch",
                "only the sm_90a kernels wait for the previous kernel (griddepcontrol.wait)",
                enabled,
            )),
            PlannedKernel::Sm100 { .. } => Ok(()),
        }
    }

    /// As [`DualGemmPlan::abort_next_launch`].
    pub(crate) fn abort_next_launch(&self, ctas: u32) -> Result<()> {
        match &self.kernel {
            PlannedKernel::Sm90 { geometry, .. } if (1..=geometry.grid).contains(&ctas) => {
                self.abort_next.store(ctas, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            PlannedKernel::Sm90 { geometry, .. } => Err(Error::invalid(
                "ctas",
                format!("must be in 1..={} (the launch's CTAs)", geometry.grid),
                ctas,
            )),
            PlannedKernel::Sm100 { .. } | PlannedKernel::Sm90Decode(_) | PlannedKernel::Sm90WholeK(_) => {
                Err(Error::invalid(
                    "abort",
                    "only the tiled sm_90a kernels take stream-K tickets",
                    ctas,
                ))
            }
        }
    }

    /// Tile size (tokens × outputs) and persistent CTAs of the launch.
    pub(crate) fn tile_and_grid(&self) -> ((u32, u32), u32) {
        match &self.kernel {
            PlannedKernel::Sm90 { geometry, .. } => {
                ((geometry.tile.tokens, tile_n(self.gated)), geometry.grid)
            }
            PlannedKernel::Sm90Decode(decode) => (
                (
                    decode_token_tiles(self.shape.m as u32) * sm90::DECODE_TOKEN_TILE,
                    decode.split.group_n,
                ),
                decode.split.grid,
            ),
            PlannedKernel::Sm90WholeK(whole_k) => (
                (sm90::DECODE_TOKEN_TILE, sm90::DECODE_ROWS_PER_WARP),
                whole_k.grid,
            ),
            PlannedKernel::Sm100 { geometry } => {
                ((sm100::TILE_M, geometry.tile.outputs(self.gated)), geometry.grid)
            }
        }
    }

    /// Enqueues the planned op on views of the operands: `c = silu(a·b1ᵀ) ⊙ (a·b2ᵀ)`, or for
    /// the plain GEMM (`b2` None) `c = a·b1ᵀ`; global scales are applied to each product.
    pub(crate) fn launch_views(
        &self,
        gpu: &Gpu,
        a: NvFp4Ref,
        b1: NvFp4Ref,
        b2: Option<NvFp4Ref>,
        c: DenseOut,
    ) -> Result<()> {
        self.launch_chained(gpu, a, b1, b2, c, TokenChain::default())
    }

    /// The address of the decoded token operand this plan's kernel reads (the tiled sm_90a
    /// kernel's buffer, `M × padded_k(K)` fp16, padding zero), which a kernel producing A can
    /// write beside A ([`TokenChain`]); None for the other kernels, which read A itself.
    pub(crate) fn decoded_tokens(&self) -> Option<u64> {
        match &self.kernel {
            PlannedKernel::Sm90 {
                tokens: Some(tokens), ..
            } => Some(tokens.buffer.address()),
            _ => None,
        }
    }

    /// Whether this plan's kernel can write C's decoded token operand beside its NVFP4 output
    /// ([`TokenChain::decoded_out`]): the tiled sm_90a kernel.
    pub(crate) fn writes_decoded_output(&self) -> bool {
        matches!(self.kernel, PlannedKernel::Sm90 { .. })
    }

    /// [`Self::launch_views`] in a chain of kernels that hand decoded token operands on (see
    /// [`TokenChain`]).
    pub(crate) fn launch_chained(
        &self,
        gpu: &Gpu,
        a: NvFp4Ref,
        b1: NvFp4Ref,
        b2: Option<NvFp4Ref>,
        c: DenseOut,
        chain: TokenChain,
    ) -> Result<()> {
        let DualGemmShape { m, n, k } = self.shape;
        let op = op_name(self.gated);
        if chain.tokens_written && self.decoded_tokens().is_none()
            || chain.decoded_out != 0 && !self.writes_decoded_output()
        {
            return Err(Error::invalid(
                "token chain",
                "only the tiled sm_90a kernels read and write decoded token operands",
                op,
            ));
        }
        let b1_name = if self.gated { "b1" } else { "b" };
        a.expect_shape("a", m, k)?;
        b1.expect_shape(b1_name, n, k)?;
        // The plain GEMM's kernels read only B (`b2` is B again for the arguments' sake).
        let b2 = match (self.gated, b2) {
            (true, Some(b2)) => {
                b2.expect_shape("b2", n, k)?;
                b2
            }
            (false, None) => b1,
            (gated, _) => {
                return Err(Error::invalid("b2", "given exactly for the dual GEMM", gated));
            }
        };
        // (data, scales, global scale) of the output, scales null for fp16, and the epilogue.
        let (out, out_scales, out_global_scale, epilogue) = match &c {
            DenseOut::F16(c) => {
                c.expect_len("c", m * n)?;
                let bf16 = c.format() == HalfFormat::Bf16;
                (c.address(), 0, 1.0, TileEpilogue::half(self.gated, bf16))
            }
            DenseOut::NvFp4(h) => {
                if !self.gated {
                    return Err(Error::invalid(
                        "h",
                        "NVFP4 output is the dual GEMM's",
                        "a plain GEMM",
                    ));
                }
                h.expect_shape("h", m, n)?;
                (
                    h.data_address(),
                    h.scales_address(),
                    h.global_scale(),
                    TileEpilogue::GatedNvfp4,
                )
            }
        };
        let (out, out_scales) = (out as *mut u16, out_scales as *mut u8);
        let stream = gpu.stream();
        let global = |x: &NvFp4Ref| x.global_scale().unwrap_or(1.0);
        // sm_90a's fp16 operands carry 2⁻¹⁴ each (see SM90_OPERAND_RESCALE).
        // (α_gate, α_up) as the kernels take them, with the architecture's operand rescale.
        let alphas = |rescale: f32| {
            kernel_alphas(
                global(&a) * global(&b1),
                global(&a) * global(&b2),
                rescale,
                self.gated,
            )
        };
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        let device_globals = device_globals(&a, &b1, self.gated.then_some(&b2));
        // The decode-size kernels' arguments: the split's partial sums and counters, its steps
        // per split and splits.
        let decode_args = |[partials, arrivals]: [*mut u32; 2],
                           [steps_per_split, splits, copied_tokens]: [u32; 3]| {
            let sm90_alphas = alphas(SM90_OPERAND_RESCALE)?;
            Ok::<_, Error>(sm90::DecodeArgs {
                a: a.data_address() as *const u8,
                a_scales: a.scales_address() as *const u8,
                b1: b1.data_address() as *const u8,
                b1_scales: b1.scales_address() as *const u8,
                b2: b2.data_address() as *const u8,
                b2_scales: b2.scales_address() as *const u8,
                out,
                out_scales,
                out_global_scale,
                partials,
                arrivals,
                m: m32,
                n: n32,
                k: k32,
                steps_per_split,
                splits,
                copied_tokens,
                alpha_gate: sm90_alphas.0,
                alpha_up: sm90_alphas.1,
                device_globals,
            })
        };
        match &self.kernel {
            PlannedKernel::Sm90 {
                geometry,
                stream_k,
                tokens,
            } => {
                let kernels = gpu.sm90_kernels(op)?;
                let a_map = match tokens {
                    Some(tokens) => {
                        if !chain.tokens_written {
                            self.predecode_tokens(gpu, &a, &tokens.buffer)?;
                        }
                        tokens.map
                    }
                    None => tensor_map::packed_rows(a.data_address(), m, k)?,
                };
                if chain.decoded_out != 0 && !epilogue.nvfp4() {
                    return Err(Error::invalid(
                        "decoded output",
                        "written by the NVFP4 epilogue only",
                        epilogue.operation(),
                    ));
                }
                let sm90_alphas = alphas(SM90_OPERAND_RESCALE)?;
                let (workspace, flags, tickets) = (
                    stream_k.workspace.address(),
                    stream_k.flags.address(),
                    stream_k.tickets.address(),
                );
                let args = sm90::DualGemmArgs {
                    a_map,
                    a_scales: a.scales_address() as *const u8,
                    b1: b1.data_address() as *const u8,
                    b1_scales: b1.scales_address() as *const u8,
                    b2: b2.data_address() as *const u8,
                    b2_scales: b2.scales_address() as *const u8,
                    out,
                    out_scales,
                    out_global_scale,
                    out_decoded: chain.decoded_out as *mut u32,
                    workspace: workspace as *mut u32,
                    flags: flags as *mut u32,
                    tickets: tickets as *mut u64,
                    m: m32,
                    n: n32,
                    k: k32,
                    alpha_gate: sm90_alphas.0,
                    alpha_up: sm90_alphas.1,
                    device_globals,
                    abort: self.abort_next.swap(0, std::sync::atomic::Ordering::Relaxed),
                };
                // SAFETY: the arguments satisfy `nvfp4_kernel::sm90::dual_gemm`'s contract:
                // shapes checked above and by the geometry, addresses 16-byte aligned (the
                // views'); the kernel waits for the previous kernel before it touches memory.
                unsafe {
                    kernels.dense(geometry.tile, epilogue)?.launch(
                        stream,
                        geometry.grid,
                        geometry.shared_bytes,
                        &args,
                        self.programmatic,
                    )
                }
            }
            PlannedKernel::Sm90Decode(decode) => {
                let kernels = gpu.sm90_kernels(op)?;
                let DecodeSplit {
                    steps_per_split,
                    splits,
                    grid,
                    ..
                } = decode.split;
                let args = decode_args(
                    [
                        decode.partials.address() as *mut u32,
                        decode.arrivals.address() as *mut u32,
                    ],
                    [steps_per_split, splits, u32::from(decode.copied_tokens)],
                )?;
                // SAFETY: `nvfp4_kernel::sm90::decode`'s contract: operands of the planned shape
                // (checked above), partial sums and counters sized for this split, the counters
                // zero (allocated so, and every launch leaves them so).
                unsafe {
                    kernels
                        .decode(decode_token_tiles(m32), epilogue, decode.form)?
                        .launch(
                            stream,
                            grid,
                            decode_shared_bytes(
                                m32,
                                steps_per_split,
                                epilogue.nvfp4(),
                                decode.copied_tokens,
                                decode.form.warps_per_matrix(),
                            ),
                            &args,
                            self.programmatic,
                        )
                }
            }
            PlannedKernel::Sm90WholeK(whole_k) => {
                let kernels = gpu.sm90_kernels(op)?;
                // No split: the whole-K kernel reads neither partial sums nor counters.
                let args = decode_args(
                    [std::ptr::null_mut(), std::ptr::null_mut()],
                    [sm90::decode_steps(k32), 1, 0],
                )?;
                // SAFETY: `nvfp4_kernel::sm90::decode`'s whole-K contract: operands of the
                // planned shape (checked above), M ≤ 8 (the plan), one CTA per 16 outputs of
                // `warps` warps (even: `DecodeWholeK::BLOCKS`) and its shared memory.
                unsafe {
                    kernels.decode_whole_k(epilogue, whole_k.small)?.launch_blocks_of(
                        stream,
                        [whole_k.grid, 32 * whole_k.warps],
                        sm90::decode_whole_k_shared_bytes(
                            m32,
                            k32,
                            whole_k.warps,
                            epilogue.gated(),
                            epilogue.nvfp4(),
                        ),
                        &args,
                        self.programmatic,
                    )
                }
            }
            PlannedKernel::Sm100 { .. } if epilogue.bf16() => Err(Error::MissingKernel {
                kernel: epilogue.operation().to_string(),
                arch: Arch::Sm100f.name(),
            }),
            PlannedKernel::Sm100 { geometry } => {
                let kernels = gpu.sm100_kernels(op)?;
                let sm100_alphas = alphas(1.0)?;
                let map = |x: &NvFp4Ref| tensor_map::packed_rows(x.data_address(), x.rows(), k);
                let args = sm100::DualGemmArgs {
                    a_map: map(&a)?,
                    b1_map: map(&b1)?,
                    b2_map: map(&b2)?,
                    a_scales: a.scales_address() as *const u8,
                    b1_scales: b1.scales_address() as *const u8,
                    b2_scales: b2.scales_address() as *const u8,
                    out,
                    out_scales,
                    out_global_scale,
                    m: m32,
                    n: n32,
                    k: k32,
                    alpha_gate: sm100_alphas.0,
                    alpha_up: sm100_alphas.1,
                    device_globals,
                    a_collector_reuse: self.a_collector.word(),
                };
                // SAFETY: the arguments satisfy `nvfp4_kernel::sm100::dual_gemm`'s contract,
                // checked above and by the geometry.
                unsafe {
                    kernels.dense(geometry.tile, epilogue)?.launch(
                        stream,
                        geometry.grid,
                        geometry.tile.shared_bytes(),
                        &args,
                        false,
                    )
                }
            }
        }
    }
}
