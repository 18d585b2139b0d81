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
//! is a typed error before launch. The same machinery runs the dense plain GEMM
//! ([`crate::gemm::GemmPlan`], one group).
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

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use half::f16;
use nvfp4_kernel::grouped::{
    GroupDesc, GroupedHeader, GroupedPrepareArgs, HEADER_RECORDS, MAX_GROUPS, SCALE_ROW_ALIGNMENT,
};
use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::layout::BlockedScales;
use nvfp4_kernel::sm90::config::{
    self as sm90, K_MULTIPLE, K_PER_SLICE, K_PER_STAGE, TILE_N, Tile, padded_k, partial_slot_bytes, tile_n,
};
use nvfp4_kernel::sm90::registry as sm90_registry;
use nvfp4_kernel::sm100::config as sm100;
use nvfp4_kernel::sm100::registry as sm100_registry;

use crate::error::{Error, Result};
use crate::gpu::buffer::{DeviceBuffer, check_alignment};
use crate::gpu::{Arch, DeviceNvFp4Matrix, Gpu, tensor_map};
use crate::matrix::NvFp4Matrix;
use crate::rules::{
    KERNEL_INDEX_LIMIT, SM90_OPERAND_RESCALE, StreamKState, check_dimension, set_a_collector,
};

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
    /// Per-group scale of the up product (`G` values), or `None` for 1.
    pub alpha_up: Option<&'a CudaSlice<f32>>,
    /// A factor on both products of every group (for example the activations' global scale).
    pub scale: f32,
}

/// One group of a separate-convention launch. A group without tokens has `a` and `c` both
/// `None` (it computes nothing and reads no weights).
pub struct SeparateGroup<'a> {
    /// Its tokens, `M_g × K_g`.
    pub a: Option<&'a DeviceNvFp4Matrix>,
    /// Gate (dual) or plain weights, `N_g × K_g`.
    pub gate: &'a DeviceNvFp4Matrix,
    /// Up weights of a dual GEMM, `N_g × K_g`.
    pub up: Option<&'a DeviceNvFp4Matrix>,
    /// Its output, `M_g × N_g` fp16.
    pub c: Option<&'a mut CudaSlice<f16>>,
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
    separate_table: Option<DeviceBuffer<u8>>,
    backend: Backend,
    programmatic: bool,
    a_collector: sm100::ACollectorUse,
}

/// The architecture's part of a plan.
#[allow(clippy::large_enum_variant)] // one per plan, never moved in a loop
enum Backend {
    /// Hopper: the token tile, the decoded token buffer and its map, the stream-K state.
    Sm90 {
        tile: Tile,
        token_pitch: u32,
        token_rows: u32,
        tokens: DeviceBuffer<u16>,
        token_map: TensorMap,
        stream_k: StreamKState,
    },
    /// Blackwell: the tile (contiguous convention; the separate one picks it per launch from
    /// the groups' sizes).
    Sm100 { tile: Option<sm100::Tile> },
}

/// Byte offset of the per-group tensor maps in a separate-convention table of `groups` entries
/// (Blackwell; 128-byte aligned).
fn separate_maps_offset(groups: usize) -> usize {
    (groups * std::mem::size_of::<nvfp4_kernel::grouped::SeparateGroup>())
        .next_multiple_of(tensor_map::MAP_BYTES)
}

/// Bytes of a separate-convention table of `groups` entries (with their maps on Blackwell).
fn separate_table_bytes(groups: usize, arch: Arch) -> usize {
    match arch {
        Arch::Sm90a => groups * std::mem::size_of::<nvfp4_kernel::grouped::SeparateGroup>(),
        Arch::Sm100f => separate_maps_offset(groups) + 3 * groups * tensor_map::MAP_BYTES,
    }
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
    /// `G` f32 up scales, or 0 for 1.
    pub alpha_up: u64,
    /// A factor on both products of every group.
    pub scale: f32,
    /// C, `rows × N` fp16.
    pub out: u64,
}

/// The tile one launch runs.
#[derive(Clone, Copy, Debug)]
enum LaunchTile {
    Sm90(Tile),
    Sm100(sm100::Tile),
}

/// The token tile for groups of about `tokens_per_group` rows: the smallest that holds them,
/// at most 128.
fn tile_for(tokens_per_group: usize) -> Tile {
    sm90_registry::grouped_tile_for(tokens_per_group.clamp(1, 1 << 20) as u32)
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

/// The scale the kernels' α carry besides the global scales: Hopper's fp16 operands are
/// rescaled (see `SM90_OPERAND_RESCALE`), Blackwell multiplies the fp4 values as they are.
fn operand_rescale(arch: Arch) -> f32 {
    match arch {
        Arch::Sm90a => SM90_OPERAND_RESCALE,
        Arch::Sm100f => 1.0,
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
            Arch::Sm90a => (tile_for(tokens_per_group).tokens, tile_n(op.gated()), K_PER_STAGE),
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
                let tile = tile_for(tokens_per_group);
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
                let token_map =
                    tensor_map::predecoded_tokens(tokens.address(), rows, token_pitch as usize, tile.tokens)?;
                let stream_k = StreamKState::new(
                    self,
                    2 * grid as usize * partial_slot_bytes(tile) as usize / 4,
                    2 * grid as usize,
                )?;
                Backend::Sm90 {
                    tile,
                    token_pitch,
                    token_rows: rows as u32,
                    tokens,
                    token_map,
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
                GroupedLayout::Separate { .. } => Some(DeviceBuffer::zeros(
                    stream,
                    separate_table_bytes(groups, self.arch()),
                )?),
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

    /// Tokens per tile and persistent CTAs of the GEMM kernel.
    pub fn tile_and_grid(&self) -> (u32, u32) {
        match &self.backend {
            Backend::Sm90 { tile, .. } => (tile.tokens, self.grid),
            Backend::Sm100 { .. } => (sm100::TILE_M, self.grid),
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

    /// Enqueues a contiguous-convention launch writing `c` (`rows × N` fp16; rows past the
    /// last group's end are not written).
    pub fn launch(&self, gpu: &Gpu, inputs: &ContiguousInputs, c: &mut CudaSlice<f16>) -> Result<()> {
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
        check_len("c", c.len(), rows * n)?;
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
        let (out, _out) = c.device_ptr_mut(stream);
        self.launch_contiguous(
            gpu,
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
        self.launch_contiguous(gpu, at)
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
    /// plan (the alignments are checked here).
    pub(crate) fn launch_contiguous(&self, gpu: &Gpu, at: &ContiguousAddresses) -> Result<()> {
        let (groups, rows, scale_rows, n, k, up) = self.contiguous_layout()?;
        let concatenated = self.op.gated() && up == UpWeights::Concatenated;
        let gate_rows = if concatenated { 2 * n } else { n };
        for (arg, address) in [
            ("a", at.a),
            ("a_scales", at.a_scales),
            ("gate", at.gate),
            ("gate scales", at.gate_scales),
            ("up", at.up),
            ("up scales", at.up_scales),
            ("c", at.out),
        ] {
            check_alignment(arg, address, 16)?;
        }
        let (up_base, up_scale_base, up_row_offset, up_rows) = if concatenated {
            // Up rows N..2N of the same matrices share the gate's scale layout of 2N rows.
            (at.gate, at.gate_scales, n as u32, gate_rows)
        } else {
            (at.up, at.up_scales, 0, at.up_rows)
        };
        // Blackwell reads tokens and weights through maps in its arguments (Hopper: unused).
        let maps = match self.backend {
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
            out: at.out as *mut u16,
            alpha_gate: at.alpha_gate as *const f32,
            alpha_up: at.alpha_up as *const f32,
            alpha_factor: operand_rescale(gpu.arch()) * at.scale,
            n: n as u32,
            k: k as u32,
            weight_rows: gate_rows as u32,
            up_row_offset,
            rows_capacity: rows as u32,
            scale_rows_capacity: scale_rows as u32,
            ..self.prepare_args(groups, tile)
        };
        self.enqueue(gpu, &args, tile, maps)
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

    /// Enqueues a separate-convention launch: group `g` computes into its own `c`.
    pub fn launch_separate(&mut self, gpu: &Gpu, groups: &mut [SeparateGroup]) -> Result<()> {
        let GroupedLayout::Separate {
            groups: most_groups,
            rows: capacity,
            max_k,
        } = self.layout
        else {
            return Err(Error::invalid(
                "groups",
                "this plan takes the contiguous convention (launch)",
                "separate groups",
            ));
        };
        if groups.is_empty() || groups.len() > most_groups {
            return Err(Error::invalid(
                "groups",
                format!("must hold 1..={most_groups} groups (the plan's)"),
                groups.len(),
            ));
        }
        let gated = self.op.gated();
        let stream = gpu.stream();
        let blackwell = matches!(self.backend, Backend::Sm100 { .. });
        let rescale = operand_rescale(gpu.arch());
        // Blackwell: each group's three maps follow the entries in the uploaded table.
        let table_base = self
            .separate_table
            .as_ref()
            .ok_or_else(|| Error::invalid("plan", "has no separate-convention table", "contiguous"))?
            .address();
        let maps_base = table_base + separate_maps_offset(most_groups) as u64;
        let mut maps = Vec::new();
        let mut table = Vec::with_capacity(groups.len());
        let mut token_row = 0usize;
        for (g, group) in groups.iter_mut().enumerate() {
            let (n, k) = (group.gate.rows(), group.gate.k());
            let m = group.a.map_or(0, |a| a.rows());
            if let Some(a) = group.a
                && a.k() != k
            {
                return Err(Error::ShapeMismatch(format!(
                    "group {g}: A has K = {}, its weights K = {k}",
                    a.k()
                )));
            }
            check_dimension("n", n, TILE_N as usize)
                .and_then(|_| check_dimension("k", k, K_MULTIPLE as usize))
                .map_err(|e| Error::ShapeMismatch(format!("group {g}: {e}")))?;
            if k > max_k {
                return Err(Error::ShapeMismatch(format!(
                    "group {g}: K = {k} exceeds the plan's max_k {max_k}"
                )));
            }
            let up = match (gated, group.up) {
                (true, Some(up)) if (up.rows(), up.k()) == (n, k) => up,
                (true, Some(up)) => {
                    return Err(Error::ShapeMismatch(format!(
                        "group {g}: up weights are {} × {}, the gate's {n} × {k}",
                        up.rows(),
                        up.k()
                    )));
                }
                (true, None) => {
                    return Err(Error::invalid(
                        "up",
                        "a dual GEMM needs up weights in every group",
                        g,
                    ));
                }
                (false, Some(_)) => return Err(Error::invalid("up", "a plain GEMM takes no up weights", g)),
                (false, None) => group.gate,
            };
            let c_address = match (group.a, group.c.as_deref_mut()) {
                (Some(_), Some(c)) if c.len() == m * n => c.device_ptr_mut(stream).0,
                (Some(_), Some(c)) => {
                    return Err(Error::BufferLength {
                        arg: "c",
                        expected: m * n,
                        got: c.len(),
                    });
                }
                (None, None) => 0,
                _ => {
                    return Err(Error::invalid(
                        "c",
                        "a group has both tokens and an output, or neither",
                        g,
                    ));
                }
            };
            let address = |b: &CudaSlice<u8>| b.device_ptr(stream).0;
            // Blackwell reads each matrix through its own tensor map (made at upload).
            // Blackwell reads each matrix through its map, at `maps_base + 128·(3g + i)`.
            let mut map = |m: Option<&DeviceNvFp4Matrix>| -> Result<u64> {
                if !blackwell {
                    return Ok(0);
                }
                let at = maps_base + (maps.len() * tensor_map::MAP_BYTES) as u64;
                maps.push(match m {
                    Some(m) => tensor_map::packed_rows(address(m.data_buffer()), m.rows(), m.k())?,
                    None => TensorMap::default(), // a group without tokens reads none
                });
                Ok(at)
            };
            let global_a = group.a.and_then(|a| a.global_scale()).unwrap_or(1.0);
            let entry = nvfp4_kernel::grouped::SeparateGroup {
                a: group.a.map_or(0, |a| address(a.data_buffer())),
                a_scales: group.a.map_or(0, |a| address(a.scales_buffer())),
                gate: address(group.gate.data_buffer()),
                gate_scales: address(group.gate.scales_buffer()),
                up: address(up.data_buffer()),
                up_scales: address(up.scales_buffer()),
                out: c_address,
                // Hopper: the group's rows in the decoded token buffer; Blackwell: its own map.
                token_row: if blackwell { 0 } else { token_row as u32 },
                rows: m as u32,
                n: n as u32,
                k: k as u32,
                alpha_gate: rescale * global_a * group.gate.global_scale().unwrap_or(1.0),
                alpha_up: rescale * global_a * up.global_scale().unwrap_or(1.0),
                a_map: map(group.a)?,
                gate_map: map(Some(group.gate))?,
                up_map: map(Some(up))?,
            };
            for (arg, address) in [
                ("a", entry.a),
                ("a scales", entry.a_scales),
                ("gate", entry.gate),
                ("gate scales", entry.gate_scales),
                ("up", entry.up),
                ("up scales", entry.up_scales),
                ("c", entry.out),
            ] {
                check_alignment(arg, address, 16)?;
            }
            table.push(entry);
            token_row += m;
        }
        if token_row > capacity {
            return Err(Error::invalid(
                "groups",
                format!("must hold at most {capacity} tokens in all (the plan's rows)"),
                token_row,
            ));
        }
        // SAFETY: `SeparateGroup` is `repr(C)` plain data without padding; the slice covers
        // exactly the table's elements.
        let bytes: &[u8] = unsafe {
            std::slice::from_raw_parts(table.as_ptr().cast::<u8>(), std::mem::size_of_val(&table[..]))
        };
        let mut upload = bytes.to_vec();
        if blackwell {
            upload.resize(separate_maps_offset(most_groups), 0);
            upload.extend(tensor_map::bytes_of(&maps));
        }
        let table_buffer = self
            .separate_table
            .as_ref()
            .ok_or_else(|| Error::invalid("plan", "has no separate-convention table", "contiguous"))?;
        table_buffer.upload_on(stream, &upload)?;
        let separate = table_base;
        let tile = self.launch_tile(Some(sm100_tile_for(
            gated,
            token_row / table.len(),
            table.iter().map(|e| (e.n, 0)),
        )))?;
        let mut args = GroupedPrepareArgs {
            groups: groups.len() as u32,
            separate_convention: 1,
            separate: separate as *const nvfp4_kernel::grouped::SeparateGroup,
            ..self.prepare_args(groups.len(), tile)
        };
        if !blackwell {
            args.token_rows = token_row as u32;
        }
        self.enqueue(gpu, &args, tile, [TensorMap::default(); 3])
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
            LaunchTile::Sm90(tile) => (tile.tokens, tile_n(gated), K_PER_STAGE),
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
    /// `maps`: Blackwell's contiguous-convention maps (tokens, gate stack, up stack).
    fn enqueue(
        &self,
        gpu: &Gpu,
        prepare: &GroupedPrepareArgs,
        tile: LaunchTile,
        maps: [TensorMap; 3],
    ) -> Result<()> {
        let stream = gpu.stream();
        match (&self.backend, tile) {
            (
                Backend::Sm90 {
                    token_map, stream_k, ..
                },
                LaunchTile::Sm90(tile),
            ) => {
                let kernels = gpu.sm90_kernels(self.op.name())?;
                // Items of the preparation pass: one thread per token row and 64-K slice.
                let items = prepare.token_rows * (prepare.token_pitch / K_PER_SLICE);
                let prepare_kernel = &kernels.grouped_prepare;
                let shared = 4 * (prepare.groups + 1);
                // SAFETY: the arguments describe buffers checked by the caller against the plan,
                // and the plan's own buffers; a plain launch (see `DualGemmPlan`'s pre-decoder
                // for why).
                unsafe {
                    prepare_kernel.launch(
                        stream,
                        gpu.grid_stride_blocks(prepare_kernel, items.max(1)),
                        shared,
                        prepare,
                        false,
                    )?
                };
                let (workspace, flags, tickets) = (
                    stream_k.workspace.address(),
                    stream_k.flags.address(),
                    stream_k.tickets.address(),
                );
                let args = sm90::GroupedArgs {
                    token_map: *token_map,
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
                    kernels.grouped(tile, self.op.gated())?.launch(
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
                    kernels.grouped(tile, self.op.gated())?.launch(
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
        let words = self.schedule.download_on(gpu.stream(), 8)?;
        let header = GroupedHeader {
            total_iterations: words[0],
            working_ctas: words[1],
            status: words[2],
            status_group: words[3],
            tile_stages: words[4],
            reserved: [words[5], words[6], words[7]],
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
