//! The fused dual GEMM on the GPU: `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` from device NVFP4 matrices to a
//! device fp16 buffer.
//!
//! A [`DualGemmPlan`] is built once per (M, N, K) on a [`Gpu`]: it checks the shape against the
//! kernel's rules, picks the tile and the persistent grid, and holds the kernel function. Each
//! [`DualGemmPlan::launch`] checks the operands against the plan and enqueues the kernel (on
//! Hopper with 64 or more tokens per tile, after the token pre-decoding kernel) on the GPU's
//! stream, without synchronizing the host. On Hopper the kernels are programmatic dependent
//! launches by default (see [`DualGemmPlan::set_programmatic_launch`]).

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use half::f16;
use nvfp4_kernel::schedule::{StreamK, TileGrid};
use nvfp4_kernel::sm90::config::{self as sm90, K_PER_STAGE, TILE_N, Tile};
use nvfp4_kernel::sm100::config as sm100;

use crate::error::{Error, Result};
use crate::gpu::{Arch, DeviceNvFp4Matrix, Gpu, KernelArg, tensor_map};
use crate::problem::DualGemmShape;

/// The scale the sm_90a kernel's fp16 operands carry: each is `value · 2⁻¹⁴`, so each product
/// is `2⁻²⁸` too small and the epilogue multiplies by this.
const SM90_OPERAND_RESCALE: f32 = (1u64 << 28) as f32;

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
    pub split: StreamK,
    /// Dynamic shared memory per CTA.
    pub shared_bytes: u32,
}

impl Sm90Geometry {
    /// Checks `shape` against the sm_90a kernel's rules and picks tile and grid for a GPU with
    /// `multiprocessors` SMs.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        let DualGemmShape { m, n, k } = shape;
        let limit = i32::MAX as usize;
        if m == 0 || m > limit {
            return Err(Error::invalid("m", format!("must be in 1..={limit}"), m));
        }
        if n == 0 || !n.is_multiple_of(TILE_N as usize) || n > limit {
            return Err(Error::invalid(
                "n",
                format!("must be a positive multiple of {TILE_N}"),
                n,
            ));
        }
        if k == 0 || !k.is_multiple_of(K_PER_STAGE as usize) || k > limit {
            return Err(Error::invalid(
                "k",
                format!("must be a positive multiple of {K_PER_STAGE}"),
                k,
            ));
        }
        if m.checked_mul(n).is_none_or(|mn| mn > isize::MAX as usize / 2) {
            return Err(Error::invalid(
                "m × n",
                "must fit in memory",
                format!("{m} × {n}"),
            ));
        }
        let tile = Tile::for_tokens(m as u32);
        let tiles = TileGrid::new(m as u32, n as u32, tile.tokens, TILE_N);
        let stages = (k / K_PER_STAGE as usize) as u32;
        if (tiles.len() as u64) * (stages as u64) >= 1 << 31 {
            return Err(Error::invalid(
                "m × n × k",
                "too large for one launch (tiles × K-stages ≥ 2^31)",
                format!("{m} × {n} × {k}"),
            ));
        }
        if tile.predecoded_tokens() && (m as u64) * (k as u64 / sm90::K_PER_SLICE as u64) >= 1 << 31 {
            return Err(Error::invalid(
                "m × k",
                "too large for one launch (m × k / 64 ≥ 2^31 token slices)",
                format!("{m} × {k}"),
            ));
        }
        let grid = grid_size(tiles.len(), stages, multiprocessors.max(1));
        let split = StreamK {
            tiles: tiles.len(),
            stages,
            ctas: grid,
        };
        Ok(Self {
            tile,
            tiles,
            grid,
            split,
            shared_bytes: tile.shared().total,
        })
    }

    /// Bytes of the stream-K partial-sum workspace: two slots per CTA.
    pub fn workspace_bytes(&self) -> usize {
        2 * self.grid as usize * sm90::partial_slot_bytes(self.tile) as usize
    }
}

/// Launch geometry of the sm_100a kernel for one shape (pure; no GPU needed). Not run on
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
    /// Checks `shape` against the sm_100a kernel's rules (the same as sm_90a's: any M ≥ 1, N a
    /// multiple of 64, K of 256) and picks the grid.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        const _: () = assert!(
            sm100::TILES[0].n == TILE_N && sm100::K_PER_STAGE == K_PER_STAGE,
            "both kernels share the shape rules"
        );
        let DualGemmShape { m, n, .. } = shape;
        Sm90Geometry::new(shape, multiprocessors)?; // the shared shape rules, one definition
        let tile = sm100::Tile::for_shape(m as u32, n as u32);
        let tiles = TileGrid::new(m as u32, n as u32, sm100::TILE_M, tile.n);
        Ok(Self {
            tile,
            tiles,
            grid: tiles.len().min(multiprocessors.max(1)),
        })
    }
}

/// Wave efficiency at or above which whole tiles per CTA beat stream-K: splitting tiles costs a
/// fix-up and a pipeline restart per segment, measured on an H100 as 66.7 → 73.2 µs at
/// 256×4096×7168 (128 tiles on 132 SMs), while 192 tiles gained 127 → 102 µs.
const DATA_PARALLEL_EFFICIENCY: f64 = 0.9;

/// What a split segment costs its CTA on top of its own K-stages, in stages: the fix-up and,
/// for a CTA's later segment, the pipeline restart. Per-CTA traces at M = 1 on an H100 (stages
/// of ≈ 2.1 k clocks) showed ≈ 1.5–2 k clocks for a segment that stores its partial sums and
/// ≈ 2.5 k for the reducer.
const SEGMENT_COST_STAGES: u32 = 1;

/// The slowest CTA of a stream-K split under the cost model of [`SEGMENT_COST_STAGES`].
fn stream_k_cost(split: &StreamK) -> u32 {
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
/// when full waves of tiles keep at least 90 % (`DATA_PARALLEL_EFFICIENCY`) of the SMs busy and the
/// CTAs divide the tiles evenly; otherwise an equal stream-K share each for the number of CTAs,
/// from 7/8 of the SMs to all of them, whose slowest CTA ([`stream_k_cost`]) is fastest (the
/// most CTAs among equals). At M = 1, N = 4096, K = 7168 on 132 SMs that is 128 CTAs of one
/// half-tile each instead of 132 CTAs whose shares straddle tiles.
pub fn grid_size(tiles: u32, stages: u32, multiprocessors: u32) -> u32 {
    let waves = tiles.div_ceil(multiprocessors);
    let data_parallel = tiles.div_ceil(waves);
    let efficiency = tiles as f64 / (waves * multiprocessors) as f64;
    if tiles.is_multiple_of(data_parallel) && efficiency >= DATA_PARALLEL_EFFICIENCY {
        return data_parallel;
    }
    let most = (tiles * stages).min(multiprocessors);
    let fewest = (most - most / 8).max(1);
    (fewest..=most)
        .rev()
        .min_by_key(|&ctas| stream_k_cost(&StreamK { tiles, stages, ctas }))
        .unwrap_or(most)
}

/// A validated dual-GEMM launch for one shape on one GPU, with its stream-K workspace.
///
/// Launches of one plan run in stream order on its GPU's stream and share the workspace, the
/// per-tile counters (each launch leaves the counters at zero) and, on Hopper for M large enough
/// for 64-token tiles, an M × K fp16 token buffer (2·M·K bytes) that each launch first rewrites
/// from A with a small pre-decoding kernel.
pub struct DualGemmPlan {
    shape: DualGemmShape,
    function: CudaFunction,
    kernel: PlannedKernel,
    programmatic: bool,
}

/// The kernel a plan launches.
enum PlannedKernel {
    /// Hopper, with its stream-K partial-sum workspace, per-tile counters and, for large token
    /// tiles, the pre-decoded token buffer.
    Sm90 {
        geometry: Sm90Geometry,
        workspace: CudaSlice<u32>,
        tile_counters: CudaSlice<u32>,
        tokens: Option<Box<PredecodedTokens>>,
    },
    /// Blackwell (never run here).
    Sm100 { geometry: Sm100Geometry },
}

/// The fp16 token operand of large sm_90a tiles (`nvfp4_kernel::sm90::tokens`), rewritten from
/// A by each launch, and the tensor map the kernel loads it through.
struct PredecodedTokens {
    buffer: CudaSlice<u16>,
    map: CudaSlice<u8>,
}

impl Gpu {
    /// Plans `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` for `shape` on this GPU.
    pub fn plan_dual_gemm(&self, shape: DualGemmShape) -> Result<DualGemmPlan> {
        let (function, kernel) = match self.arch() {
            Arch::Sm90a => {
                let geometry = Sm90Geometry::new(shape, self.multiprocessors())?;
                let workspace = self.stream().alloc_zeros::<u32>(geometry.workspace_bytes() / 4)?;
                let tile_counters = self.stream().alloc_zeros::<u32>(geometry.tiles.len() as usize)?;
                let function = self.sm90_dual_gemm_function(geometry.tile)?;
                let tokens = if geometry.tile.predecoded_tokens() {
                    let (m, k) = (shape.m, shape.k);
                    let buffer = self.stream().alloc_zeros::<u16>(m * k)?;
                    let map = tensor_map::predecoded_tokens_map(
                        self.stream(),
                        &buffer,
                        m,
                        k,
                        geometry.tile.tokens,
                    )?;
                    Some(Box::new(PredecodedTokens { buffer, map }))
                } else {
                    None
                };
                (
                    function,
                    PlannedKernel::Sm90 {
                        geometry,
                        workspace,
                        tile_counters,
                        tokens,
                    },
                )
            }
            Arch::Sm100a => {
                let geometry = Sm100Geometry::new(shape, self.multiprocessors())?;
                (
                    self.sm100_dual_gemm_function(geometry.tile)?,
                    PlannedKernel::Sm100 { geometry },
                )
            }
        };
        let programmatic = matches!(kernel, PlannedKernel::Sm90 { .. });
        Ok(DualGemmPlan {
            shape,
            function,
            kernel,
            programmatic,
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
            PlannedKernel::Sm90 { .. } => {
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

    /// Tile size (tokens × outputs) and persistent CTAs of the launch.
    pub fn tile_and_grid(&self) -> ((u32, u32), u32) {
        match &self.kernel {
            PlannedKernel::Sm90 { geometry, .. } => ((geometry.tile.tokens, TILE_N), geometry.grid),
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
        let DualGemmShape { m, n, k } = self.shape;
        for (name, matrix, rows) in [("a", a, m), ("b1", b1, n), ("b2", b2, n)] {
            if matrix.rows() != rows || matrix.k() != k {
                return Err(Error::ShapeMismatch(format!(
                    "`{name}` is {} × {}, the plan needs {rows} × {k}",
                    matrix.rows(),
                    matrix.k()
                )));
            }
        }
        if c.len() != m * n {
            return Err(Error::BufferLength {
                arg: "c",
                expected: m * n,
                got: c.len(),
            });
        }
        let stream = gpu.stream();
        for (name, buffer) in [
            ("a.data", a.data_buffer()),
            ("b1.data", b1.data_buffer()),
            ("b2.data", b2.data_buffer()),
            ("a.scales", a.scales_buffer()),
            ("b1.scales", b1.scales_buffer()),
            ("b2.scales", b2.scales_buffer()),
        ] {
            // 16 bytes: vector loads of the data, bulk copies of the scale atoms.
            check_alignment(name, buffer.device_ptr(stream).0, 16)?;
        }
        // Vector stores of C.
        check_alignment("c", c.device_ptr(stream).0, 16)?;
        let a_map = a
            .packed_rows_map()
            .ok_or_else(|| Error::invalid("a", "needs a tensor map (K a multiple of 32)", k))?;
        let global = |x: &DeviceNvFp4Matrix| x.global_scale().unwrap_or(1.0);
        // sm_90a's fp16 operands carry 2⁻¹⁴ each; sm_100a multiplies the fp4 values themselves.
        let rescale = match self.kernel {
            PlannedKernel::Sm90 { .. } => SM90_OPERAND_RESCALE,
            PlannedKernel::Sm100 { .. } => 1.0,
        };
        let alpha_gate = rescale * global(a) * global(b1);
        let alpha_up = rescale * global(a) * global(b2);
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        let mut launch = stream.launch_builder(&self.function);
        let config = match &self.kernel {
            PlannedKernel::Sm90 {
                geometry,
                workspace,
                tile_counters,
                tokens,
            } => {
                let a_map = match tokens {
                    Some(tokens) => {
                        self.predecode_tokens(gpu, a, &tokens.buffer)?;
                        &tokens.map
                    }
                    None => a_map,
                };
                // The guards keep each buffer's stream bookkeeping until the launch is enqueued.
                let (a_map, _a_map) = a_map.device_ptr(stream);
                let (a_scales, _a_scales) = a.scales_buffer().device_ptr(stream);
                let (b1_data, _b1_data) = b1.data_buffer().device_ptr(stream);
                let (b1_scales, _b1_scales) = b1.scales_buffer().device_ptr(stream);
                let (b2_data, _b2_data) = b2.data_buffer().device_ptr(stream);
                let (b2_scales, _b2_scales) = b2.scales_buffer().device_ptr(stream);
                let (c, _c) = c.device_ptr_mut(stream);
                let (workspace, _workspace) = workspace.device_ptr(stream);
                let (tile_counters, _tile_counters) = tile_counters.device_ptr(stream);
                let args = [
                    KernelArg::address(a_map),
                    KernelArg::address(a_scales),
                    KernelArg::address(b1_data),
                    KernelArg::address(b1_scales),
                    KernelArg::address(b2_data),
                    KernelArg::address(b2_scales),
                    KernelArg::address(c),
                    KernelArg::address(workspace),
                    KernelArg::address(tile_counters),
                    KernelArg::u32(m32),
                    KernelArg::u32(n32),
                    KernelArg::u32(k32),
                    KernelArg::f32(alpha_gate),
                    KernelArg::f32(alpha_up),
                ];
                let config = LaunchConfig {
                    grid_dim: (geometry.grid, 1, 1),
                    block_dim: (sm90::THREADS, 1, 1),
                    shared_mem_bytes: geometry.shared_bytes,
                };
                // SAFETY: arguments follow the order and contract of
                // `nvfp4_kernel::sm90::dual_gemm`, checked above and by the geometry; the kernel
                // waits for the previous kernel before it touches memory.
                return unsafe { gpu.launch_ex(&self.function, config, &args, self.programmatic) };
            }
            PlannedKernel::Sm100 { geometry } => {
                let needs_map =
                    |name: &'static str| Error::invalid(name, "needs a tensor map (K a multiple of 32)", k);
                let b1_map = b1.packed_rows_map().ok_or_else(|| needs_map("b1"))?;
                let b2_map = b2.packed_rows_map().ok_or_else(|| needs_map("b2"))?;
                launch
                    .arg(a_map)
                    .arg(a.scales_buffer())
                    .arg(b1_map)
                    .arg(b1.scales_buffer())
                    .arg(b2_map)
                    .arg(b2.scales_buffer())
                    .arg(c);
                LaunchConfig {
                    grid_dim: (geometry.grid, 1, 1),
                    block_dim: (sm100::THREADS, 1, 1),
                    shared_mem_bytes: geometry.tile.shared_bytes(),
                }
            }
        };
        launch
            .arg(&m32)
            .arg(&n32)
            .arg(&k32)
            .arg(&alpha_gate)
            .arg(&alpha_up);
        // SAFETY: arguments follow the order and contract of `nvfp4_kernel::sm90::dual_gemm` /
        // `nvfp4_kernel::sm100::dual_gemm`, checked above and by the geometry.
        unsafe { launch.launch(config) }?;
        Ok(())
    }
}

impl DualGemmPlan {
    /// Enqueues `nvfp4_predecode_tokens_sm90`: A → the fp16 token operand in `out` (M × K).
    fn predecode_tokens(&self, gpu: &Gpu, a: &DeviceNvFp4Matrix, out: &CudaSlice<u16>) -> Result<()> {
        let entry = nvfp4_kernel::launch::SM90_PREDECODE_TOKENS;
        let DualGemmShape { m, k, .. } = self.shape;
        // One thread per token and 64-K slice; the geometry bounded m × k.
        let items = (m * (k / sm90::K_PER_SLICE as usize)) as u32;
        let config = gpu.grid_stride_config(entry, items);
        let stream = gpu.stream();
        let (data, _data) = a.data_buffer().device_ptr(stream);
        let (scales, _scales) = a.scales_buffer().device_ptr(stream);
        let (out, _out) = out.device_ptr(stream);
        let args = [
            KernelArg::address(data),
            KernelArg::address(scales),
            KernelArg::address(out),
            KernelArg::u32(m as u32),
            KernelArg::u32(k as u32),
        ];
        // A plain launch even in programmatic mode: started early, its few small CTAs would
        // crowd onto the first multiprocessors the previous kernel frees (measured on an H100:
        // M = 64 36.4 → 48.2 µs). The dual GEMM after it is the programmatic one.
        // SAFETY: parameter order and types match `nvfp4_predecode_tokens_sm90`; A has the
        // planned shape (checked by the caller), `out` holds m × k fp16, all 16-byte aligned.
        unsafe { gpu.launch_ex(gpu.sm90_predecode_tokens_function()?, config, &args, false) }
    }
}

fn check_alignment(arg: &'static str, address: u64, bytes: u64) -> Result<()> {
    if address.is_multiple_of(bytes) {
        Ok(())
    } else {
        Err(Error::invalid(
            arg,
            format!("device address must be {bytes}-byte aligned"),
            format!("{address:#x}"),
        ))
    }
}

/// Shared memory the largest sm_90a tile needs (for the function attribute).
pub(crate) fn sm90_max_shared_bytes(tile: Tile) -> u32 {
    debug_assert!(tile.shared().total <= sm90::MAX_SHARED_BYTES);
    tile.shared().total
}
