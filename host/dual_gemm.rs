//! The fused dual GEMM on the GPU: `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` from device NVFP4 matrices to a
//! device fp16 buffer.
//!
//! A [`DualGemmPlan`] is built once per (M, N, K) on a [`Gpu`]: it checks the shape against the
//! kernel's rules, picks the tile and the persistent grid, and holds the kernel function. Each
//! [`DualGemmPlan::launch`] checks the operands against the plan and enqueues the kernel (on
//! Hopper with 64 or more tokens per tile, after the token pre-decoding kernel; on Hopper with
//! M ≤ 16, the decode-size kernel with its in-kernel K-split reduction) on the GPU's stream,
//! without synchronizing the host. On Hopper the kernels are programmatic dependent
//! launches by default (see [`DualGemmPlan::set_programmatic_launch`]).

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::schedule::{StreamK, TileGrid, UniformTiles};
use nvfp4_kernel::sm90::config::{
    self as sm90, DECODE_GROUP_N, DECODE_MAX_STEPS_PER_SPLIT, DECODE_MAX_TOKENS, K_PER_SLICE, K_PER_STAGE,
    TILE_N, Tile, decode_partial_words, decode_shared_bytes, decode_steps, decode_token_tiles, padded_k,
};
use nvfp4_kernel::sm90::registry as sm90_registry;
use nvfp4_kernel::sm100::config as sm100;
use nvfp4_kernel::sm100::registry as sm100_registry;

use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{Arch, DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Ref, tensor_map};
use crate::problem::DualGemmShape;
use crate::rules::{
    KERNEL_INDEX_LIMIT, SM90_OPERAND_RESCALE, StreamKState, check_gemm_shape, set_a_collector,
};

/// Launch geometry of the sm_90a kernel for one shape (pure; no GPU needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sm90Geometry {
    /// Token tile (wgmma N).
    pub tile: Tile,
    /// Output tiles.
    pub tiles: TileGrid,
    /// Persistent CTAs ([`grid_size`]); each takes an equal share of all tiles' K-stages, whole
    /// tiles when the grid divides them.
    pub grid: u32,
    /// The stream-K split of tiles × K-stages over the grid.
    pub split: StreamK<UniformTiles>,
    /// Dynamic shared memory per CTA.
    pub shared_bytes: u32,
}

impl Sm90Geometry {
    /// Checks `shape` against the sm_90a kernel's rules (any M ≥ 1, N a multiple of 64, K a
    /// multiple of 64, every size within the kernel's 32-bit indices) and picks tile and grid for
    /// a GPU with `multiprocessors` SMs.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        let DualGemmShape { m, n, k } = shape;
        let (m32, n32, k32) = check_gemm_shape(shape)?;
        if multiprocessors == 0 {
            return Err(Error::invalid("multiprocessors", "must be at least 1", 0));
        }
        let too_large = |what: &'static str, rule: &str| {
            Error::invalid(
                what,
                format!("too large for one launch ({rule})"),
                format!("{m} × {n} × {k}"),
            )
        };
        // C (M × N fp16) and, for pre-decoded tiles, the M × padded K token buffer are indexed in
        // 64 bits; the kernels' 32-bit counts are tiles, iterations and token items.
        let stages = k32.div_ceil(K_PER_STAGE);
        let mut best: Option<(u64, Self)> = None;
        let narrow = sm90_registry::grouped_tile_for(m32);
        for tile in [narrow, sm90_registry::WIDEST_TILE] {
            let wide = tile == sm90_registry::WIDEST_TILE;
            if wide && m32 <= narrow.tokens {
                continue; // one narrower tile already covers M
            }
            let tiles = TileGrid::new(m32, n32, tile.tokens, TILE_N)
                .ok_or_else(|| too_large("m × n", "more than 2^32 tiles"))?;
            let space = UniformTiles::new(tiles.len(), stages)
                .filter(|s| (s.tiles as u64) * (s.stages as u64) <= KERNEL_INDEX_LIMIT)
                .ok_or_else(|| too_large("m × n × k", "tiles × K-stages ≥ 2^31"))?;
            let data_parallel = nvfp4_kernel::schedule::data_parallel_ctas(tiles.len(), multiprocessors);
            if wide && data_parallel.is_none() {
                continue; // split wide tiles were slower (perf log entry 29)
            }
            let grid = grid_size(tiles.len(), stages, multiprocessors)?;
            let split = StreamK::new(space, grid, 0);
            let cost = stream_k_cost(&split) as u64 * slice_clocks(tile) as u64;
            let geometry = Self {
                tile,
                tiles,
                grid,
                split,
                shared_bytes: tile.shared().total,
            };
            if best.as_ref().is_none_or(|(fastest, _)| cost < *fastest) {
                best = Some((cost, geometry));
            }
        }
        // The first candidate is never skipped, so `best` is set (or an error returned above).
        let Some((_, geometry)) = best else {
            return Err(too_large("m × n", "no tile"));
        };
        if geometry.tile.predecoded_tokens()
            && (m as u64) * (padded_k(k32) / K_PER_SLICE) as u64 > KERNEL_INDEX_LIMIT
        {
            return Err(too_large("m × k", "m × k / 64 ≥ 2^31 token slices"));
        }
        Ok(geometry)
    }

    /// u32 words of the stream-K partial-sum workspace: two slots per CTA.
    pub fn workspace_words(&self) -> usize {
        2 * self.grid as usize * sm90::partial_slot_bytes(self.tile) as usize / 4
    }

    /// Publication flags: one per partial-sum slot.
    pub fn flag_words(&self) -> usize {
        2 * self.grid as usize
    }
}

/// Launch geometry of the sm_100f kernel for one shape (pure; no GPU needed). Not run on
/// hardware (no B200 here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sm100Geometry {
    /// Tile shape: 128 tokens × 64 outputs up to M = 256, × 128 above (when N allows).
    pub tile: sm100::Tile,
    /// Output tiles.
    pub tiles: TileGrid,
    /// Persistent CTAs: `min(tiles, multiprocessors)`.
    pub grid: u32,
}

impl Sm100Geometry {
    /// Checks `shape` against the sm_100f kernel's rules (the same as sm_90a's: any M ≥ 1, N a
    /// multiple of 64, K of 64) and picks the grid.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        const _: () = assert!(
            sm100_registry::NARROW_TILE.n == TILE_N,
            "N's rule is a multiple of the narrowest tile on both architectures"
        );
        let (m, n, k) = check_gemm_shape(shape)?;
        if multiprocessors == 0 {
            return Err(Error::invalid("multiprocessors", "must be at least 1", 0));
        }
        let tile = sm100_registry::tile_for_shape(m, n);
        let too_large = || {
            Error::invalid(
                "m × n × k",
                "too large for one launch",
                format!("{m} × {n} × {k}"),
            )
        };
        let tiles = TileGrid::new(m, n, sm100::TILE_M, tile.n).ok_or_else(too_large)?;
        // The persistent loop counts tiles × K-stages in 32 bits.
        if tiles.len() as u64 * k.div_ceil(sm100::K_PER_STAGE) as u64 > KERNEL_INDEX_LIMIT {
            return Err(too_large());
        }
        Ok(Self {
            tile,
            tiles,
            grid: tiles.len().clamp(1, multiprocessors.max(1)),
        })
    }
}

/// Most multiprocessors a plan is made for (GPUs have at most a few hundred; the stream-K cost
/// search is quadratic in this).
pub const MAX_MULTIPROCESSORS: u32 = 1024;

/// Clocks a CTA spends per 64-K slice beyond its tensor work, fitted to one H100 run (perf log
/// entry 29): at 512×4096×7168, both plans data-parallel on 128 CTAs, 128-token tiles (224
/// slices per CTA) took 102.3 µs and 256-token tiles (112 slices) 87.8 µs, a ratio of 1.65
/// per slice, where the tensor work alone doubles.
const SLICE_OVERHEAD_CLOCKS: u32 = 270;

/// Estimated clocks of one 64-K slice of `tile`: the tensor work (2 consumer warpgroups × 64
/// rows × T tokens × 64 K at 2048 fp16 FMA per clock, = 4·T) and [`SLICE_OVERHEAD_CLOCKS`].
fn slice_clocks(tile: Tile) -> u32 {
    4 * tile.tokens + SLICE_OVERHEAD_CLOCKS
}

/// What a split segment costs its CTA on top of its own K-stages, in stages (see
/// `stream_k_cost`).
const SEGMENT_COST_STAGES: u32 = 1;

/// The slowest CTA of a stream-K split under a cost model: its stages plus
/// [`SEGMENT_COST_STAGES`] per split segment (the fix-up and, for a CTA's later segment, the
/// pipeline restart; per-CTA traces at M = 1 on an H100, stages of ≈ 2.1 k clocks, showed
/// ≈ 1.5–2 k clocks for a segment that stores its partial sums and ≈ 2.5 k for the reducer).
fn stream_k_cost(split: &StreamK<UniformTiles>) -> u32 {
    (0..split.ctas)
        .map(|cta| {
            split
                .segments(cta)
                .map(|s| s.stages + if s.count > 1 { SEGMENT_COST_STAGES } else { 0 })
                .sum::<u32>()
        })
        .max()
        .unwrap_or(0)
}

/// CTAs for `tiles × stages` work on `multiprocessors` SMs: whole tiles per CTA (data-parallel)
/// when full waves of tiles keep at least 90 % of the SMs busy and the CTAs divide the tiles
/// evenly ([`nvfp4_kernel::schedule::data_parallel_ctas`]); otherwise an equal stream-K share each for
/// the number of CTAs, from 7/8 of the SMs to all of them, whose slowest CTA
/// (`stream_k_cost`) is fastest (the most CTAs among equals). At M = 1, N = 4096, K = 7168 on
/// 132 SMs that is 128 CTAs of one half-tile each instead of 132 CTAs whose shares straddle
/// tiles. Zero tiles, stages or SMs, more than [`MAX_MULTIPROCESSORS`] SMs, or more than 2^31
/// iterations, are errors.
pub fn grid_size(tiles: u32, stages: u32, multiprocessors: u32) -> Result<u32> {
    for (arg, value) in [
        ("tiles", tiles),
        ("stages", stages),
        ("multiprocessors", multiprocessors),
    ] {
        if value == 0 {
            return Err(Error::invalid(arg, "must be at least 1", value));
        }
    }
    if multiprocessors > MAX_MULTIPROCESSORS {
        return Err(Error::invalid(
            "multiprocessors",
            format!("must be at most {MAX_MULTIPROCESSORS}"),
            multiprocessors,
        ));
    }
    let total = tiles as u64 * stages as u64;
    if total > KERNEL_INDEX_LIMIT {
        return Err(Error::invalid(
            "tiles × stages",
            format!("must be at most {KERNEL_INDEX_LIMIT}"),
            total,
        ));
    }
    if let Some(ctas) = nvfp4_kernel::schedule::data_parallel_ctas(tiles, multiprocessors) {
        return Ok(ctas);
    }
    let most = (total as u32).min(multiprocessors);
    let fewest = (most - most / 8).max(1);
    let cost = |ctas: u32| stream_k_cost(&StreamK::new(UniformTiles { tiles, stages }, ctas, 0));
    Ok((fewest..=most)
        .rev()
        .min_by_key(|&ctas| cost(ctas))
        .unwrap_or(most))
}

/// A validated dual-GEMM launch for one shape on one GPU, with its stream-K workspace.
///
/// Launches of one plan must be stream-ordered (one stream at a time): they share the
/// workspace, the publication flags, the launch-ticket counter and, on Hopper for M large
/// enough for 64-token tiles, an M × padded-K fp16 token buffer (2·M·K bytes) that each launch
/// first rewrites from A with a small pre-decoding kernel. No launch depends on an earlier one
/// having finished cleanly: flags carry the launch's epoch (see
/// [`nvfp4_kernel::schedule::Ticket`]).
pub struct DualGemmPlan {
    shape: DualGemmShape,
    kernel: PlannedKernel,
    programmatic: bool,
    a_collector: sm100::ACollectorUse,
    /// Test support (`Self::abort_next_launch`): 0, or the next launch's stop point.
    abort_next: std::sync::atomic::AtomicU32,
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
    /// Hopper, decode-size token counts (M ≤ `DECODE_MAX_TOKENS`): the K-split partial sums
    /// and the split (`nvfp4_kernel::sm90::decode`).
    Sm90Decode(Box<DecodeState>),
    /// Blackwell (never run here).
    Sm100 { geometry: Sm100Geometry },
}

/// The device state and K split of a decode-size Hopper plan.
struct DecodeState {
    /// Every CTA's f32 partial sums ([`decode_partial_words`]).
    partials: DeviceBuffer<u32>,
    /// One arrival counter per row group, zero between launches (the last CTA resets it).
    arrivals: DeviceBuffer<u32>,
    split: DecodeSplit,
}

/// The K split of the decode-size kernel (`nvfp4_kernel::sm90::decode`) for one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeSplit {
    /// 128-K steps per split, at most `DECODE_MAX_STEPS_PER_SPLIT`.
    pub steps_per_split: u32,
    /// K splits, none of them empty.
    pub splits: u32,
    /// CTAs: `splits × n / DECODE_GROUP_N`.
    pub grid: u32,
}

impl DecodeSplit {
    /// The split of `k` that fills `capacity` resident CTAs once (one wave) with `n /
    /// DECODE_GROUP_N` row groups per split, each split as long as the shared memory allows.
    pub fn new(n: u32, k: u32, capacity: u32) -> Self {
        let steps = decode_steps(k).max(1);
        let groups = (n / DECODE_GROUP_N).max(1);
        let splits = (capacity / groups).clamp(1, steps);
        let steps_per_split = steps.div_ceil(splits).min(DECODE_MAX_STEPS_PER_SPLIT);
        let splits = steps.div_ceil(steps_per_split);
        Self {
            steps_per_split,
            splits,
            grid: splits * groups,
        }
    }
}

/// The fp16 token operand of large sm_90a tiles (`nvfp4_kernel::sm90::tokens`), rewritten from
/// A by each launch, and the tensor map the kernel loads it through.
pub(crate) struct PredecodedTokens {
    pub buffer: DeviceBuffer<u16>,
    pub map: TensorMap,
}

impl Gpu {
    /// Plans `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` for `shape` on this GPU.
    pub fn plan_dual_gemm(&self, shape: DualGemmShape) -> Result<DualGemmPlan> {
        let kernel = match self.arch() {
            Arch::Sm90a if shape.m <= DECODE_MAX_TOKENS as usize && shape.m > 0 => {
                let kernels = self.sm90_kernels("dual GEMM")?;
                // The tiled plan validates the shape (N, K multiples, sizes) for both paths.
                Sm90Geometry::new(shape, self.multiprocessors())?;
                let (m, n, k) = (shape.m as u32, shape.n as u32, shape.k as u32);
                let capacity =
                    self.multiprocessors() * kernels.decode(decode_token_tiles(m))?.resident_per_sm();
                let split = DecodeSplit::new(n, k, capacity);
                let partial_words = usize::try_from(decode_partial_words(m, n, split.splits))
                    .map_err(|_| Error::invalid("m × n", "too large for one launch", format!("{m} × {n}")))?;
                PlannedKernel::Sm90Decode(Box::new(DecodeState {
                    partials: DeviceBuffer::zeros(self.stream(), partial_words)?,
                    arrivals: DeviceBuffer::zeros(self.stream(), (n / DECODE_GROUP_N) as usize)?,
                    split,
                }))
            }
            Arch::Sm90a => {
                self.sm90_kernels("dual GEMM")?;
                let geometry = Sm90Geometry::new(shape, self.multiprocessors())?;
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
                self.sm100_kernels("dual GEMM")?;
                PlannedKernel::Sm100 {
                    geometry: Sm100Geometry::new(shape, self.multiprocessors())?,
                }
            }
        };
        let programmatic = matches!(kernel, PlannedKernel::Sm90 { .. } | PlannedKernel::Sm90Decode(_));
        Ok(DualGemmPlan {
            shape,
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
}

impl DualGemmPlan {
    /// The planned shape.
    pub fn shape(&self) -> DualGemmShape {
        self.shape
    }

    /// Whether launches are programmatic dependent launches (see
    /// [`DualGemmPlan::set_programmatic_launch`]).
    pub fn programmatic_launch(&self) -> bool {
        self.programmatic
    }

    /// Chooses whether the Hopper kernels are enqueued as *programmatic dependent launches*
    /// (the default there): their CTAs may start while the stream's previous kernel finishes,
    /// set up shared memory, and wait (`griddepcontrol.wait`) for that kernel to complete before
    /// they touch any memory, so results and stream order are unchanged and only the launch
    /// latency overlaps. Back-to-back calls gain the most (measured in `benches/dual_gemm`,
    /// which times both). Blackwell plans launch plainly: asking for it there is an error.
    pub fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        match self.kernel {
            PlannedKernel::Sm90 { .. } | PlannedKernel::Sm90Decode(_) => {
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

    /// Test support: makes the next launch (Hopper) stop mid-way on purpose, as an interrupted
    /// launch would: every CTA takes its stream-K ticket, the `ctas` that started first compute
    /// their shares and publish their partial sums, the others leave at once, and no reducer
    /// waits (split tiles get no output). The launches after it must be right: flags carry
    /// their launch's epoch and are never reset, so what a stopped launch leaves behind never
    /// matches a later one (`tests/gpu_dual_gemm.rs`). `ctas` in `1..=grid`; the Blackwell
    /// kernels take no tickets (an error there).
    pub fn abort_next_launch(&self, ctas: u32) -> Result<()> {
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
            PlannedKernel::Sm100 { .. } | PlannedKernel::Sm90Decode(_) => Err(Error::invalid(
                "abort",
                "only the tiled sm_90a kernels take stream-K tickets",
                ctas,
            )),
        }
    }

    /// Blackwell: whether A stays in the MMA's collector between the gate and up MMAs
    /// ([`sm100::ACollectorUse`]; `Reuse` by default). Hopper has no MMA collector: asking for
    /// `Discard` there is an error.
    pub fn set_a_collector_use(&mut self, collector: sm100::ACollectorUse) -> Result<()> {
        set_a_collector(
            &mut self.a_collector,
            matches!(self.kernel, PlannedKernel::Sm100 { .. }),
            collector,
        )
    }

    /// Tile size (tokens × outputs) and persistent CTAs of the launch.
    pub fn tile_and_grid(&self) -> ((u32, u32), u32) {
        match &self.kernel {
            PlannedKernel::Sm90 { geometry, .. } => ((geometry.tile.tokens, TILE_N), geometry.grid),
            PlannedKernel::Sm90Decode(decode) => (
                (
                    decode_token_tiles(self.shape.m as u32) * sm90::DECODE_TOKEN_TILE,
                    DECODE_GROUP_N,
                ),
                decode.split.grid,
            ),
            PlannedKernel::Sm100 { geometry } => ((sm100::TILE_M, geometry.tile.n), geometry.grid),
        }
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
        let DualGemmShape { m, n, k } = self.shape;
        a.expect_shape("a", m, k)?;
        b1.expect_shape("b1", n, k)?;
        b2.expect_shape("b2", n, k)?;
        c.expect_len("c", m * n)?;
        let stream = gpu.stream();
        let global = |x: &NvFp4Ref| x.global_scale().unwrap_or(1.0);
        // sm_90a's fp16 operands carry 2⁻¹⁴ each (see SM90_OPERAND_RESCALE).
        let sm90_alpha = |a: &NvFp4Ref, b: &NvFp4Ref| SM90_OPERAND_RESCALE * global(a) * global(b);
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        let out = c.address() as *mut u16;
        match &self.kernel {
            PlannedKernel::Sm90 {
                geometry,
                stream_k,
                tokens,
            } => {
                let kernels = gpu.sm90_kernels("dual GEMM")?;
                let a_map = match tokens {
                    Some(tokens) => {
                        self.predecode_tokens(gpu, &a, &tokens.buffer)?;
                        tokens.map
                    }
                    None => tensor_map::packed_rows(a.data_address(), m, k)?,
                };
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
                    workspace: workspace as *mut u32,
                    flags: flags as *mut u32,
                    tickets: tickets as *mut u64,
                    m: m32,
                    n: n32,
                    k: k32,
                    alpha_gate: sm90_alpha(&a, &b1),
                    alpha_up: sm90_alpha(&a, &b2),
                    abort: self.abort_next.swap(0, std::sync::atomic::Ordering::Relaxed),
                };
                // SAFETY: the arguments satisfy `nvfp4_kernel::sm90::dual_gemm`'s contract:
                // shapes checked above and by the geometry, addresses 16-byte aligned (the
                // views'); the kernel waits for the previous kernel before it touches memory.
                unsafe {
                    kernels.dual_gemm(geometry.tile)?.launch(
                        stream,
                        geometry.grid,
                        geometry.shared_bytes,
                        &args,
                        self.programmatic,
                    )
                }
            }
            PlannedKernel::Sm90Decode(decode) => {
                let kernels = gpu.sm90_kernels("dual GEMM")?;
                let DecodeSplit {
                    steps_per_split,
                    splits,
                    grid,
                } = decode.split;
                let args = sm90::DecodeArgs {
                    a: a.data_address() as *const u8,
                    a_scales: a.scales_address() as *const u8,
                    b1: b1.data_address() as *const u8,
                    b1_scales: b1.scales_address() as *const u8,
                    b2: b2.data_address() as *const u8,
                    b2_scales: b2.scales_address() as *const u8,
                    out,
                    partials: decode.partials.address() as *mut u32,
                    arrivals: decode.arrivals.address() as *mut u32,
                    m: m32,
                    n: n32,
                    k: k32,
                    steps_per_split,
                    splits,
                    alpha_gate: sm90_alpha(&a, &b1),
                    alpha_up: sm90_alpha(&a, &b2),
                };
                // SAFETY: `nvfp4_kernel::sm90::decode`'s contract: operands of the planned shape
                // (checked above), partial sums and counters sized for this split, the counters
                // zero (allocated so, and every launch leaves them so).
                unsafe {
                    kernels.decode(decode_token_tiles(m32))?.launch(
                        stream,
                        grid,
                        decode_shared_bytes(m32, steps_per_split),
                        &args,
                        self.programmatic,
                    )
                }
            }
            PlannedKernel::Sm100 { geometry } => {
                let kernels = gpu.sm100_kernels("dual GEMM")?;
                let map = |x: &NvFp4Ref| tensor_map::packed_rows(x.data_address(), x.rows(), k);
                let args = sm100::DualGemmArgs {
                    a_map: map(&a)?,
                    b1_map: map(&b1)?,
                    b2_map: map(&b2)?,
                    a_scales: a.scales_address() as *const u8,
                    b1_scales: b1.scales_address() as *const u8,
                    b2_scales: b2.scales_address() as *const u8,
                    out,
                    m: m32,
                    n: n32,
                    k: k32,
                    alpha_gate: global(&a) * global(&b1),
                    alpha_up: global(&a) * global(&b2),
                    a_collector_reuse: self.a_collector.word(),
                };
                // SAFETY: the arguments satisfy `nvfp4_kernel::sm100::dual_gemm`'s contract,
                // checked above and by the geometry.
                unsafe {
                    kernels.dual_gemm(geometry.tile)?.launch(
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

impl DualGemmPlan {
    /// Enqueues `nvfp4_predecode_tokens_sm90`: A → the fp16 token operand in `out`.
    fn predecode_tokens(&self, gpu: &Gpu, a: &NvFp4Ref, out: &DeviceBuffer<u16>) -> Result<()> {
        let kernel = &gpu.sm90_kernels("token pre-decoding")?.predecode_tokens;
        let DualGemmShape { m, k, .. } = self.shape;
        // One thread per token and 64-K slice; the geometry bounded m × padded k / 64.
        let items = (m * (padded_k(k as u32) / K_PER_SLICE) as usize) as u32;
        let stream = gpu.stream();
        let out = out.address();
        let args = sm90::PredecodeArgs {
            data: a.data_address() as *const u8,
            scales: a.scales_address() as *const u8,
            out: out as *mut u32,
            rows: m as u32,
            k: k as u32,
        };
        // A plain launch even in programmatic mode: started early, its few small CTAs would
        // crowd onto the first multiprocessors the previous kernel frees (measured on an H100:
        // M = 64 36.4 → 48.2 µs). The dual GEMM after it is the programmatic one.
        // SAFETY: A has the planned shape (checked by the caller), `out` holds m × padded k
        // fp16, all 16-byte aligned.
        unsafe { kernel.launch(stream, gpu.grid_stride_blocks(kernel, items), 0, &args, false) }
    }
}
