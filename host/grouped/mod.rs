//! Grouped NVFP4 GEMMs on the GPU (Mixture-of-Experts layers): for every group `g` (an
//! expert), the plain `C_g = α_g · A_g·B_gᵀ` ([`GroupedOp::Gemm`], a down projection) or the
//! gated `C_g = silu(α1_g · A_g·B1_gᵀ) ⊙ (α3_g · A_g·B3_gᵀ)` ([`GroupedOp::DualGemm`], an
//! expert's gate/up), fp16 out, in one persistent launch over all groups' tiles.
//!
//! Two input conventions, chosen when planning ([`GroupedLayout`]):
//! * **Contiguous** ([`ContiguousInputs`], what vLLM / SGLang hand over): all groups' tokens in
//!   one packed A sorted by group (`rows × k/2` bytes), `row_offsets[G + 1]` and
//!   `scale_offsets[G + 1]` in device memory (group `g` owns token rows `row_offsets[g] ..
//!   row_offsets[g + 1]`; its row `r` has its scales in row `scale_offsets[g] + r` of A's blocked
//!   scales, and every `scale_offsets[g]` is a multiple of 128), weights stacked `G × N × K`
//!   ([`GroupedWeights`]; gate/up as two stacks or one concatenated `w13` of `2N` rows),
//!   per-group α in device memory (optional), one C of `rows × N`. The host never reads the
//!   offsets: planning and launching do not synchronize, one plan serves any routing with the
//!   same capacity, and a launch can be captured in a CUDA graph and replayed with other
//!   offsets. The GPU validates them: offsets that decrease, exceed the capacity or misalign
//!   the scales make the launch compute nothing and leave the reason for
//!   [`GroupedPlan::device_status`]. C rows past `row_offsets[G]` are never written.
//! * **Separate** ([`SeparateGroup`], the benchmark problem's lists): per group its own A, B
//!   (and B3) and C, with its own M, N and K. The sizes are host data, checked before launch;
//!   each launch uploads a table of the groups' addresses (80 bytes a group) on the stream.
//!
//! Groups with 0 rows are legal and cost no weight traffic. Shapes: N a multiple of 64, K a
//! multiple of 64, any number of rows per group. Every other shape, length, alignment or count
//! is a typed error before launch.
//!
//! On Hopper each launch is two kernels: a preparation pass (validates the offsets, writes the
//! groups' descriptors and schedule, decodes all tokens to fp16 once) and the persistent GEMM
//! (`nvfp4_kernel::sm90::grouped`). On Blackwell each launch is the preparation pass (tables
//! only) and the persistent tcgen05 kernel (`nvfp4_kernel::sm100::grouped`), which reads tokens
//! and weights through tensor maps: the separate convention's matrices carry theirs (made at
//! upload); for the contiguous convention the plan makes three maps (tokens, gate stack, up
//! stack) and remakes them only when a launch's buffers differ from the last launch's; that
//! copy cannot happen inside a CUDA graph capture (a typed error: launch once before capturing).
//! The Blackwell kernels have never run (no B200 here): they are checked by ptxas/SASS and a
//! host emulation of their tile arithmetic (`tests/sm100_emulation.rs`).

use cudarc::driver::CudaSlice;
use nvfp4_kernel::grouped::{
    GroupDesc, GroupedHeader, GroupedPrepareArgs, HEADER_RECORDS, MAX_GROUPS, SCALE_ROW_ALIGNMENT,
    SeparatePrepareArgs, prepare_shared_bytes,
};
use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::layout::BlockedScales;
use nvfp4_kernel::sm90::config::{
    self as sm90, K_MULTIPLE, K_PER_SLICE, K_PER_STAGE, TILE_N, Tile, padded_k, partial_slot_bytes, tile_n,
};
use nvfp4_kernel::sm90::registry::{self as sm90_registry, TileEpilogue};
use nvfp4_kernel::sm100::config as sm100;
use nvfp4_kernel::sm100::registry as sm100_registry;

use crate::error::{Error, Result};
use crate::gpu::buffer::{DeviceBuffer, StagingRing};
use crate::gpu::{Arch, DeviceNvFp4Matrix, Gpu, tensor_map};
use crate::matrix::NvFp4Matrix;
use crate::rules::{KERNEL_INDEX_LIMIT, StreamKState, check_dimension, set_a_collector};

mod contiguous;
mod gather;
mod separate;

pub use contiguous::{ContiguousAddresses, ContiguousInputs, ContiguousNvFp4Out, ContiguousTokens};
pub use gather::GatherShape;
pub use separate::SeparateGroup;
use separate::separate_table_bytes;

/// Page-locked slots a separate-convention plan stages its group table in: the host runs up to
/// this many launches ahead of the GPU before an upload waits.
const SEPARATE_STAGING_SLOTS: usize = 4;

/// How a launch's preparation pass gets its arguments.
#[derive(Clone, Copy)]
enum Preparation<'a> {
    /// The common arguments: the contiguous convention, or a separate table uploaded ahead.
    Common(&'a GroupedPrepareArgs),
    /// A separate-convention table inside the pass's own arguments (Hopper, at most
    /// [`PARAMETER_GROUPS`](nvfp4_kernel::grouped::PARAMETER_GROUPS) groups).
    SeparateInParameters(&'a SeparatePrepareArgs),
}

impl Preparation<'_> {
    /// The arguments every pass takes.
    fn common(&self) -> &GroupedPrepareArgs {
        match self {
            Self::Common(args) => args,
            Self::SeparateInParameters(args) => &args.prepare,
        }
    }
}

/// The product each group computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupedOp {
    /// `C_g = α_g · A_g·B_gᵀ`.
    Gemm,
    /// `C_g = silu(α1_g · A_g·B1_gᵀ) ⊙ (α3_g · A_g·B3_gᵀ)`.
    DualGemm,
}

impl GroupedOp {
    fn gated(self) -> bool {
        self == GroupedOp::DualGemm
    }

    fn name(self) -> &'static str {
        match self {
            GroupedOp::Gemm => "grouped GEMM",
            GroupedOp::DualGemm => "grouped dual GEMM",
        }
    }
}

/// Where a dual GEMM's up weights (B3) are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpWeights {
    /// A second stack of weights, like the gate's.
    Separate,
    /// Rows `N .. 2N` of each group's gate weights (a concatenated `w13` of `2N` rows).
    Concatenated,
}

/// The input convention and capacity a plan serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupedLayout {
    /// One token buffer sorted by group, offsets on the GPU (see the module doc).
    Contiguous {
        /// Groups `G` (1..=1024).
        groups: usize,
        /// Rows of A and C: the token capacity.
        rows: usize,
        /// Rows of A's blocked scales (with each group's scales starting on a 128-row block,
        /// at most `rows + 127·G` are ever needed).
        scale_rows: usize,
        /// Outputs per group (of each product for the dual GEMM).
        n: usize,
        /// K.
        k: usize,
        /// Dual GEMM only: where the up weights are.
        up: UpWeights,
    },
    /// Per-group allocations and sizes, known on the host (see the module doc).
    Separate {
        /// Most groups a launch takes (1..=1024).
        groups: usize,
        /// Most tokens of all groups together.
        rows: usize,
        /// Largest K of any group.
        max_k: usize,
    },
}

/// Stacked NVFP4 weights of `groups` groups in device memory: group `g`'s `rows × k` matrix
/// (packed data, then its blocked scales) at a fixed stride, as MoE checkpoints store experts.
/// Per-group global scales belong in the launch's α arrays.
pub struct GroupedWeights {
    groups: usize,
    rows: usize,
    k: usize,
    data: CudaSlice<u8>,
    scales: CudaSlice<u8>,
}

impl GroupedWeights {
    /// Groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Rows of each group's matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// K of each group's matrix.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Bytes of one group's packed data.
    pub fn group_data_bytes(&self) -> usize {
        self.rows * self.k / 2
    }

    /// Bytes of one group's blocked scales.
    pub fn group_scale_bytes(&self) -> usize {
        BlockedScales::new(self.rows, self.k).len()
    }

    /// The stacked packed data, `groups × rows × k/2` bytes.
    pub fn data_buffer(&self) -> &CudaSlice<u8> {
        &self.data
    }

    /// The stacked blocked scales, `groups × group_scale_bytes()`.
    pub fn scales_buffer(&self) -> &CudaSlice<u8> {
        &self.scales
    }
}

/// A borrowed view of stacked weights (see [`GroupedWeights`]): `groups` matrices of
/// `rows × k`, packed data and blocked scales each at a fixed stride.
#[derive(Clone, Copy)]
pub struct WeightsView<'a> {
    groups: usize,
    rows: usize,
    k: usize,
    data: &'a CudaSlice<u8>,
    scales: &'a CudaSlice<u8>,
}

impl WeightsView<'_> {
    fn group_data_bytes(&self) -> usize {
        self.rows * self.k / 2
    }

    fn group_scale_bytes(&self) -> usize {
        BlockedScales::new(self.rows, self.k).len()
    }
}

impl GroupedWeights {
    /// The weights as a [`WeightsView`] for [`ContiguousInputs`].
    pub fn view(&self) -> WeightsView<'_> {
        WeightsView {
            groups: self.groups,
            rows: self.rows,
            k: self.k,
            data: &self.data,
            scales: &self.scales,
        }
    }
}

impl DeviceNvFp4Matrix {
    /// The matrix as the weights of one group (its global scale belongs in the launch's α).
    pub fn as_weights(&self) -> WeightsView<'_> {
        WeightsView {
            groups: 1,
            rows: self.rows(),
            k: self.k(),
            data: self.data_buffer(),
            scales: self.scales_buffer(),
        }
    }
}

impl Gpu {
    /// Stacks `matrices` (one per group, all `rows × k`) into device memory. Their global
    /// scales are not kept: pass them as the launch's α.
    pub fn upload_grouped_weights(&self, matrices: &[NvFp4Matrix]) -> Result<GroupedWeights> {
        let first = matrices
            .first()
            .ok_or_else(|| Error::invalid("matrices", "must hold at least one group", 0))?;
        let (rows, k) = (first.rows(), first.k());
        for (g, m) in matrices.iter().enumerate() {
            if (m.rows(), m.k()) != (rows, k) {
                return Err(Error::ShapeMismatch(format!(
                    "group {g} is {} × {}, group 0 is {rows} × {k}",
                    m.rows(),
                    m.k()
                )));
            }
        }
        let data: Vec<u8> = matrices.iter().flat_map(|m| m.data().iter().copied()).collect();
        let scales: Vec<u8> = matrices.iter().flat_map(|m| m.scales().iter().copied()).collect();
        Ok(GroupedWeights {
            groups: matrices.len(),
            rows,
            k,
            data: self.stream().clone_htod(&data)?,
            scales: self.stream().clone_htod(&scales)?,
        })
    }
}

/// A validated grouped launch on one GPU, with its device buffers (see the module doc).
///
/// Launches of one plan must be stream-ordered (one stream at a time): they share the tables
/// and (Hopper) the token buffer and the stream-K state.
pub struct GroupedPlan {
    op: GroupedOp,
    layout: GroupedLayout,
    grid: u32,
    descs: DeviceBuffer<u8>,
    schedule: DeviceBuffer<u32>,
    /// Separate convention: the page-locked slots the group table is uploaded from (declared
    /// before the table: dropped first, it waits for its copies into the table).
    separate_staging: Option<std::sync::Mutex<StagingRing>>,
    separate_table: Option<DeviceBuffer<u8>>,
    backend: Backend,
    programmatic: bool,
    a_collector: sm100::ACollectorUse,
}

/// The architecture's part of a plan.
#[allow(clippy::large_enum_variant)] // one per plan, never moved in a loop
enum Backend {
    /// Hopper: the token tile, the decoded token buffer and its map, the stream-K state, and
    /// the grouped decode-size kernel's K window when the plan runs that kernel instead of the
    /// tiled one.
    Sm90 {
        tile: Tile,
        decode_window: Option<u32>,
        token_pitch: u32,
        token_rows: u32,
        tokens: DeviceBuffer<u16>,
        token_maps: [TensorMap; sm90::FITTED_WIDTH_COUNT as usize],
        stream_k: StreamKState,
    },
    /// Blackwell: the tile (contiguous convention; the separate one picks it per launch from
    /// the groups' sizes).
    Sm100 { tile: Option<sm100::Tile> },
}

/// The tile one launch runs.
#[derive(Clone, Copy, Debug)]
enum LaunchTile {
    Sm90(Tile),
    Sm100(sm100::Tile),
}

/// The token tile for `groups` groups of about `tokens_per_group` rows
/// ([`sm90_registry::grouped_tile_for`]).
fn tile_for(tokens_per_group: usize, groups: usize) -> Tile {
    sm90_registry::grouped_tile_for(tokens_per_group.clamp(1, 1 << 20) as u32, groups as u32)
}

/// The Blackwell tile for groups of about `tokens_per_group` rows whose outputs and up-row
/// offsets are `(n, up_row_offset)`: 128-wide MMAs above 256 tokens where every group allows
/// them (as the dense kernel's [`sm100_registry::tile_for_shape`]), else 64.
fn sm100_tile_for(
    gated: bool,
    tokens_per_group: usize,
    shapes: impl IntoIterator<Item = (u32, u32)>,
) -> sm100::Tile {
    let wide = sm100_registry::WIDE_TILE;
    let fits = shapes
        .into_iter()
        .all(|(n, up_row_offset)| wide.fits_grouped(gated, n, up_row_offset));
    if tokens_per_group > 256 && fits {
        wide
    } else {
        sm100_registry::NARROW_TILE
    }
}

impl Gpu {
    /// Plans `op` for `layout` on this GPU. `tokens_per_group` (default: the capacity over the
    /// groups) picks the tile: on Hopper 8 to 128 tokens, the smallest that holds a typical
    /// group (decode: 8; prefill: 128); on Blackwell (always 128 tokens) 128-wide MMAs above 256
    /// tokens. Any routing is computed correctly with any tile.
    pub fn plan_grouped(
        &self,
        op: GroupedOp,
        layout: GroupedLayout,
        tokens_per_group: Option<usize>,
    ) -> Result<GroupedPlan> {
        self.check_not_capturing("planning a grouped GEMM")?;
        match self.arch() {
            Arch::Sm90a => self.sm90_kernels(op.name()).map(|_| ())?,
            Arch::Sm100f => self.sm100_kernels(op.name()).map(|_| ())?,
        }
        let (groups, rows, max_k, n, up_row_offset) = match layout {
            GroupedLayout::Contiguous {
                groups,
                rows,
                scale_rows,
                n,
                k,
                up,
            } => {
                check_dimension("n", n, TILE_N as usize)?;
                check_dimension("scale_rows", scale_rows, SCALE_ROW_ALIGNMENT as usize)?;
                if op == GroupedOp::Gemm && up == UpWeights::Concatenated {
                    return Err(Error::invalid(
                        "up",
                        "a plain GEMM has no up weights",
                        "Concatenated",
                    ));
                }
                let weight_rows = if op.gated() && up == UpWeights::Concatenated {
                    2 * n
                } else {
                    n
                };
                check_dimension("n (weight rows)", weight_rows, 1)?;
                let up_row_offset = if weight_rows == n { 0 } else { n };
                (groups, rows, k, Some(n), up_row_offset)
            }
            GroupedLayout::Separate { groups, rows, max_k } => (groups, rows, max_k, None, 0),
        };
        if groups == 0 || groups > MAX_GROUPS as usize {
            return Err(Error::invalid(
                "groups",
                format!("must be in 1..={MAX_GROUPS}"),
                groups,
            ));
        }
        check_dimension("rows", rows, 1)?;
        let k32 = check_dimension(
            if n.is_some() { "k" } else { "max_k" },
            max_k,
            K_MULTIPLE as usize,
        )?;
        let tokens_per_group = tokens_per_group.unwrap_or(rows.div_ceil(groups));
        // The tile the iteration bound is checked for: Hopper's, or Blackwell's narrowest.
        let (tile_tokens, tile_outputs, k_per_stage) = match self.arch() {
            Arch::Sm90a => (
                tile_for(tokens_per_group, groups).grouped_tile_tokens(),
                tile_n(op.gated()),
                K_PER_STAGE,
            ),
            Arch::Sm100f => (
                sm100::TILE_M,
                sm100_registry::NARROW_TILE.outputs(op.gated()),
                sm100::K_PER_STAGE,
            ),
        };
        // 32-bit counts: the persistent kernel's iterations for the worst routing (each group
        // adds at most one partial token tile).
        let n_bound = n.unwrap_or(KERNEL_INDEX_LIMIT as usize);
        let worst_tiles = (rows as u64).div_ceil(tile_tokens as u64) + groups as u64;
        let stages = k32.div_ceil(k_per_stage) as u64;
        if n.is_some()
            && worst_tiles * (n_bound as u64).div_ceil(tile_outputs as u64) * stages > KERNEL_INDEX_LIMIT
        {
            return Err(Error::invalid(
                "rows × n × k",
                "too large for one launch (tiles × K-stages may reach 2^31)",
                format!("{rows} × {n_bound} × {max_k}"),
            ));
        }
        let grid = self.multiprocessors();
        let stream = self.stream();
        let backend = match self.arch() {
            Arch::Sm90a => {
                let tile = tile_for(tokens_per_group, groups);
                let token_pitch = padded_k(k32);
                // Token items of the preparation pass.
                if rows as u64 * (token_pitch / K_PER_SLICE) as u64 > KERNEL_INDEX_LIMIT {
                    return Err(Error::invalid(
                        "rows × k",
                        "too large for one launch (rows × k / 64 ≥ 2^31)",
                        format!("{rows} × {max_k}"),
                    ));
                }
                let tokens = DeviceBuffer::zeros(stream, rows * token_pitch as usize)?;
                // One map per fitted width (`GroupedArgs::token_maps`).
                let mut token_maps = [TensorMap::default(); sm90::FITTED_WIDTH_COUNT as usize];
                for (index, map) in (0..).zip(&mut token_maps) {
                    *map = tensor_map::predecoded_tokens(
                        tokens.address(),
                        rows,
                        token_pitch as usize,
                        tile.grouped_box_rows(index),
                    )?;
                }
                let stream_k = StreamKState::new(
                    self,
                    2 * grid as usize * partial_slot_bytes(tile) as usize / 4,
                    2 * grid as usize,
                )?;
                // Groups of up to 16 tokens (routed decode) in the contiguous convention, whose N
                // and K the plan knows: the grouped decode-size kernel.
                let decode_window = match layout {
                    GroupedLayout::Contiguous { k, .. }
                        if tokens_per_group <= sm90::DECODE_MAX_TOKENS as usize =>
                    {
                        Some(sm90::grouped_decode_window_steps(k as u32))
                    }
                    _ => None,
                };
                Backend::Sm90 {
                    tile,
                    decode_window,
                    token_pitch,
                    token_rows: rows as u32,
                    tokens,
                    token_maps,
                    stream_k,
                }
            }
            Arch::Sm100f => Backend::Sm100 {
                tile: n.map(|n| {
                    sm100_tile_for(op.gated(), tokens_per_group, [(n as u32, up_row_offset as u32)])
                }),
            },
        };
        Ok(GroupedPlan {
            op,
            layout,
            grid,
            descs: DeviceBuffer::zeros(stream, groups * std::mem::size_of::<GroupDesc>())?,
            schedule: DeviceBuffer::zeros(stream, 4 * (groups + HEADER_RECORDS as usize))?,
            separate_table: match layout {
                GroupedLayout::Separate { .. } => {
                    Some(DeviceBuffer::zeros(stream, separate_table_bytes(groups))?)
                }
                GroupedLayout::Contiguous { .. } => None,
            },
            separate_staging: match layout {
                GroupedLayout::Separate { .. } => Some(std::sync::Mutex::new(StagingRing::new(
                    stream,
                    separate_table_bytes(groups),
                    SEPARATE_STAGING_SLOTS,
                )?)),
                GroupedLayout::Contiguous { .. } => None,
            },
            backend,
            programmatic: true,
            a_collector: sm100::ACollectorUse::default(),
        })
    }
}

impl GroupedPlan {
    /// The planned product.
    pub fn op(&self) -> GroupedOp {
        self.op
    }

    /// The planned convention and capacity.
    pub fn layout(&self) -> GroupedLayout {
        self.layout
    }

    /// Tokens per tile and persistent CTAs of the GEMM kernel (the grouped decode-size kernel:
    /// its 16 tokens per pass and its CTAs, see [`GroupedPlan::uses_decode_kernel`]; tiles
    /// fitted to each group: the widest, 192, of their widths of 64, 128 and 192 tokens).
    pub fn tile_and_grid(&self) -> (u32, u32) {
        match &self.backend {
            Backend::Sm90 {
                decode_window: Some(_),
                ..
            } => {
                let groups = match self.layout {
                    GroupedLayout::Contiguous { groups, .. } | GroupedLayout::Separate { groups, .. } => {
                        groups
                    }
                };
                (
                    sm90::DECODE_MAX_TOKENS,
                    groups as u32 * self.decode_row_groups().unwrap_or(0),
                )
            }
            Backend::Sm90 { tile, .. } => (tile.grouped_tile_tokens(), self.grid),
            Backend::Sm100 { .. } => (sm100::TILE_M, self.grid),
        }
    }

    /// Whether launches run the grouped decode-size kernel (Hopper, contiguous convention,
    /// planned for groups of at most 16 tokens): one CTA per group and 64 outputs (dual GEMM; 128
    /// plain) streams the weights through `mma.sync` over all of K, 16 tokens at a time, instead
    /// of the persistent tiled kernel. Groups of any size are computed either way.
    pub fn uses_decode_kernel(&self) -> bool {
        matches!(
            self.backend,
            Backend::Sm90 {
                decode_window: Some(_),
                ..
            }
        )
    }

    /// The grouped decode-size kernel's row groups per group (its grid: the groups times
    /// these).
    fn decode_row_groups(&self) -> Option<u32> {
        match self.layout {
            GroupedLayout::Contiguous { n, .. } => {
                Some((n as u32).div_ceil(sm90::grouped_decode_outputs(self.op.gated())))
            }
            GroupedLayout::Separate { .. } => None,
        }
    }

    /// Blackwell: whether A stays in the MMA's collector between the gate and up MMAs (see
    /// [`crate::dual_gemm::DualGemmPlan::set_a_collector_use`]).
    pub fn set_a_collector_use(&mut self, collector: sm100::ACollectorUse) -> Result<()> {
        let blackwell = matches!(self.backend, Backend::Sm100 { .. });
        set_a_collector(&mut self.a_collector, blackwell, collector)
    }

    /// Chooses whether the GEMM kernel is a programmatic dependent launch (the default; see
    /// [`crate::dual_gemm::DualGemmPlan::set_programmatic_launch`]).
    pub fn set_programmatic_launch(&mut self, enabled: bool) {
        self.programmatic = enabled;
    }

    /// The tile of a launch: Hopper's planned one; Blackwell's planned one (contiguous) or
    /// `separate`, picked from the groups' sizes.
    fn launch_tile(&self, separate: Option<sm100::Tile>) -> Result<LaunchTile> {
        match (&self.backend, separate) {
            (Backend::Sm90 { tile, .. }, _) => Ok(LaunchTile::Sm90(*tile)),
            (Backend::Sm100 { tile: Some(tile), .. }, _) => Ok(LaunchTile::Sm100(*tile)),
            (Backend::Sm100 { tile: None, .. }, Some(tile)) => Ok(LaunchTile::Sm100(tile)),
            (Backend::Sm100 { tile: None, .. }, None) => Err(Error::invalid(
                "plan",
                "a separate-convention plan picks its tile per launch",
                "no tile",
            )),
        }
    }

    /// The preparation arguments every launch shares (the rest are the convention's).
    fn prepare_args(&self, groups: usize, tile: LaunchTile) -> GroupedPrepareArgs {
        let gated = self.op.gated();
        let (token_rows, token_pitch, tokens) = match &self.backend {
            Backend::Sm90 {
                token_rows,
                token_pitch,
                tokens,
                ..
            } => (*token_rows, *token_pitch, tokens.address() as *mut u32),
            Backend::Sm100 { .. } => (0, 0, std::ptr::null_mut()),
        };
        let (tile_tokens, tile_outputs, k_per_stage) = match tile {
            LaunchTile::Sm90(tile) => (tile.grouped_tile_tokens(), tile_n(gated), K_PER_STAGE),
            LaunchTile::Sm100(tile) => (sm100::TILE_M, tile.outputs(gated), sm100::K_PER_STAGE),
        };
        GroupedPrepareArgs {
            groups: groups as u32,
            separate_convention: 0,
            separate: std::ptr::null(),
            a: std::ptr::null(),
            a_scales: std::ptr::null(),
            row_offsets: std::ptr::null(),
            scale_offsets: std::ptr::null(),
            gate: 0,
            gate_scales: 0,
            up: 0,
            up_scales: 0,
            weight_stride: 0,
            weight_scale_stride: 0,
            out: std::ptr::null_mut(),
            out_scales: std::ptr::null_mut(),
            out_global_scales: std::ptr::null(),
            alpha_gate: std::ptr::null(),
            alpha_up: std::ptr::null(),
            alpha_factor: 1.0,
            n: 0,
            k: 0,
            weight_rows: 0,
            up_row_offset: 0,
            rows_capacity: 0,
            scale_rows_capacity: 0,
            token_rows,
            token_pitch,
            tokens,
            descs: self.descs.address() as *mut GroupDesc,
            schedule: self.schedule.address() as *mut u32,
            tile_tokens,
            k_per_stage,
            tile_n: tile_outputs,
            grid: self.grid,
            gated: u32::from(gated),
        }
    }

    /// Enqueues the preparation pass and the persistent GEMM.
    /// `maps`: the contiguous convention's maps (tokens, gate stack, up stack; Hopper reads only
    /// the weights' maps, and the separate convention's groups carry their own).
    fn enqueue(
        &self,
        gpu: &Gpu,
        preparation: Preparation,
        tile: LaunchTile,
        maps: [TensorMap; 3],
    ) -> Result<()> {
        let prepare = preparation.common();
        let stream = gpu.stream();
        let epilogue = if prepare.out_scales.is_null() {
            TileEpilogue::f16(self.op.gated())
        } else {
            TileEpilogue::GatedNvfp4
        };
        match (&self.backend, tile) {
            (
                Backend::Sm90 {
                    token_maps,
                    stream_k,
                    decode_window,
                    token_pitch,
                    tokens,
                    ..
                },
                LaunchTile::Sm90(tile),
            ) => {
                let kernels = gpu.sm90_kernels(self.op.name())?;
                // Items of the preparation pass: one thread per token row and 64-K slice.
                let items = prepare.token_rows * (prepare.token_pitch / K_PER_SLICE);
                let prepare_kernel = &kernels.grouped_prepare;
                let threads = sm90_registry::GROUPED_PREPARE.entry.threads_per_block;
                let shared = prepare_shared_bytes(prepare.groups, threads);
                // One CTA more than the items need (CTA 0 writes the tables, the others
                // decode), unless that passes the resident limit: a CTA past it would run alone
                // after the others.
                let grid = gpu.grid_stride_blocks(prepare_kernel, items.max(1).saturating_add(threads));
                // A plain launch before the tiled kernel (see `DualGemmPlan`'s pre-decoder for
                // why: started early, the pass's CTAs crowd onto the first SMs the previous
                // kernel frees; GPU MODE's short calls lost 2–3 % so), a programmatic one before
                // the decode-size kernel, whose thousands of short CTAs end one by one: there the
                // pass's early start overlaps their drain.
                // The decode-size kernel's window and row groups, when it is the one launched.
                let decode = (*decode_window).zip(self.decode_row_groups());
                let programmatic = self.programmatic && decode.is_some();
                // SAFETY: the arguments describe buffers checked by the caller against the plan,
                // and the plan's own buffers; the pass waits for the previous kernel before it
                // reads or writes anything.
                unsafe {
                    match preparation {
                        Preparation::Common(args) => {
                            prepare_kernel.launch(stream, grid, shared, args, programmatic)?
                        }
                        Preparation::SeparateInParameters(args) => kernels.grouped_prepare_separate.launch(
                            stream,
                            grid,
                            shared,
                            args,
                            programmatic,
                        )?,
                    }
                };
                if let Some((window_steps, row_groups)) = decode {
                    let args = sm90::GroupedDecodeArgs {
                        descs: prepare.descs,
                        schedule: prepare.schedule,
                        tokens: tokens.address() as *const u32,
                        token_pitch: *token_pitch,
                        groups: prepare.groups,
                        row_groups,
                        window_steps,
                        warm_up: sm90::GroupedDecodeWarmUp {
                            gate: prepare.gate,
                            up: prepare.up,
                            stride: prepare.weight_stride,
                            n: prepare.n,
                            k: prepare.k,
                            up_row_offset: prepare.up_row_offset,
                            ctas: gpu.multiprocessors() * sm90_registry::GROUPED_DECODE_CTAS_PER_SM,
                        },
                    };
                    let grid = prepare.groups * row_groups;
                    let shared = sm90::grouped_decode_shared_bytes(window_steps, epilogue.nvfp4());
                    // SAFETY: as the tiled kernel below: it waits for the preparation pass before
                    // it reads the descriptors, the status and the decoded tokens.
                    return unsafe {
                        kernels.grouped_decode(epilogue)?.launch(
                            stream,
                            grid,
                            shared,
                            &args,
                            self.programmatic,
                        )
                    };
                }
                let (workspace, flags, tickets) = (
                    stream_k.workspace.address(),
                    stream_k.flags.address(),
                    stream_k.tickets.address(),
                );
                let [_, gate_map, up_map] = maps;
                let args = sm90::GroupedArgs {
                    token_maps: *token_maps,
                    weight_maps: [gate_map, up_map],
                    descs: prepare.descs,
                    schedule: prepare.schedule,
                    workspace: workspace as *mut u32,
                    flags: flags as *mut u32,
                    tickets: tickets as *mut u64,
                    groups: prepare.groups,
                };
                // SAFETY: the preparation pass writes the tables this kernel reads, in stream
                // order (it waits for that pass before reading them); the plan sized every buffer.
                unsafe {
                    kernels.grouped(tile, epilogue)?.launch(
                        stream,
                        self.grid,
                        tile.grouped_shared().total,
                        &args,
                        self.programmatic,
                    )
                }
            }
            (Backend::Sm100 { .. }, LaunchTile::Sm100(tile)) => {
                let kernels = gpu.sm100_kernels(self.op.name())?;
                if let Preparation::SeparateInParameters(_) = preparation {
                    return Err(Error::invalid(
                        "groups",
                        "travel in the preparation pass's parameters on Hopper only",
                        "a Blackwell plan",
                    ));
                }
                // SAFETY: as for Hopper; one warp writes the tables.
                unsafe { kernels.grouped_prepare.launch(stream, 1, 0, prepare, false)? };
                let [a_map, gate_map, up_map] = maps;
                let args = sm100::GroupedArgs {
                    a_map,
                    gate_map,
                    up_map,
                    descs: prepare.descs,
                    schedule: prepare.schedule,
                    groups: prepare.groups,
                    a_collector_reuse: self.a_collector.word(),
                };
                // SAFETY: the preparation pass writes the tables and descriptors (tensor maps
                // made for the launch's buffers, checked against the plan) that this kernel
                // reads after waiting for it.
                unsafe {
                    kernels.grouped(tile, epilogue)?.launch(
                        stream,
                        self.grid,
                        tile.shared_bytes(),
                        &args,
                        self.programmatic,
                    )
                }
            }
            _ => Err(Error::invalid(
                "gpu",
                "must be the architecture the plan was made for",
                gpu.arch().name(),
            )),
        }
    }

    /// What the last launch's preparation pass found (synchronizes the stream): `Ok` when every
    /// group was computed, or the rule the device-side offsets broke (nothing was written).
    pub fn device_status(&self, gpu: &Gpu) -> Result<()> {
        gpu.check_not_capturing("reading a grouped launch's status")?;
        let words = self.schedule.download_on(gpu.stream(), 8)?;
        let header = GroupedHeader {
            total_iterations: words[0],
            working_ctas: words[1],
            status: words[2],
            status_group: words[3],
            tile_stages: words[4],
            serpentine_waves: words[5],
            reserved: [words[6], words[7]],
        };
        match header.status {
            nvfp4_kernel::grouped::STATUS_OK => Ok(()),
            status => Err(Error::DeviceOffsets {
                group: header.status_group as usize,
                rule: match status {
                    nvfp4_kernel::grouped::STATUS_ROWS_DECREASE => "row_offsets must not decrease",
                    nvfp4_kernel::grouped::STATUS_ROWS_EXCEED_CAPACITY => {
                        "row_offsets must not exceed the plan's rows"
                    }
                    nvfp4_kernel::grouped::STATUS_SCALES_MISALIGNED => {
                        "scale_offsets must be multiples of 128"
                    }
                    _ => {
                        "each group's scale rows must lie inside its scale_offsets range and the plan's scale_rows"
                    }
                },
            }),
        }
    }
}
