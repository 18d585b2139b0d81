//! Data formats of grouped (Mixture-of-Experts) launches, shared by the host and the kernels.
//!
//! A grouped launch computes, for every group `g` (an expert), `C_g = α_g · A_g·B_gᵀ` (plain) or
//! `C_g = silu(α1_g · A_g·B1_gᵀ) ⊙ (α3_g · A_g·B3_gᵀ)` (gated), over all groups' tiles in one
//! persistent launch. Two input conventions:
//! * **contiguous** (what MoE engines hand over): all groups' tokens in one A sorted by group,
//!   `row_offsets[G + 1]` and `scale_offsets[G + 1]` *in device memory* (written by the routing
//!   kernel; the host never reads them), weights stacked `G × N × K` with per-group blocked
//!   scales, per-group α in device memory, one C;
//! * **separate** (the benchmark problem's lists): per group its own A, B, C allocations and
//!   sizes (N and K may differ between groups), known on the host: a table of
//!   [`SeparateGroup`]s that travels with each launch — on Hopper, up to [`PARAMETER_GROUPS`]
//!   groups in the preparation pass's parameters ([`SeparatePrepareArgs`]), more uploaded.
//!
//! Each launch first runs a *preparation pass* on the GPU, which validates the device-side
//! offsets, writes one [`GroupDesc`] per group (where its tokens, weights and outputs are), the
//! table of [`GroupSchedule`](crate::schedule::GroupSchedule)s the persistent kernel splits its
//! work by, and a [`GroupedHeader`]; on Hopper it also decodes the tokens to fp16. Nothing of it
//! travels to the host, so one plan serves every routing and launches can be captured in a CUDA
//! graph and replayed with other sizes.

use crate::launch::TensorMap;

/// Most groups one launch takes (the schedule table lives in shared memory: 16 bytes a group).
pub const MAX_GROUPS: u32 = 1024;

/// Row granularity of a group's activation scales in the contiguous convention: each group's
/// scale rows start on a 128-row block of the blocked layout (one scale atom's rows), as
/// vLLM's `blockscale_offsets` and TensorRT-LLM's padding do.
pub const SCALE_ROW_ALIGNMENT: u32 = 128;

/// One group's problem as the persistent kernel reads it (written by the preparation pass).
/// Weight rows: the tile's output `n` reads *gate* row `n` of `gate` and *up* row
/// `n + up_row_offset` of `up` (gated: B1 and B3 rows of the same output, from separate
/// matrices or one concatenated `w13`; plain: the same matrix, the up row being another output
/// of the same tile, see the kernels' tile docs). Both share one blocked scale layout of
/// `weight_rows × k`.
///
/// The Hopper kernels read the tokens from the preparation pass's decoded buffer and the
/// weights through the tensor maps `gate_map` and `up_map` (their own box) and the scale atoms
/// through the pointers; the Blackwell kernels read tokens and weights through the tensor maps
/// (`a_map`, `gate_map`, `up_map`) and scale atoms through the pointers.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupDesc {
    /// Packed e2m1 gate weights (row 0 of the group's matrix), `k / 2` bytes a row.
    pub gate: u64,
    /// Blocked e4m3 scales of `gate`.
    pub gate_scales: u64,
    /// Packed e2m1 up weights (row 0).
    pub up: u64,
    /// Blocked e4m3 scales of `up`.
    pub up_scales: u64,
    /// fp16 output of the group's first token, `ldc` elements a row.
    pub out: u64,
    /// Blocked e4m3 scales of the group's tokens, from the 128-row block of its first token
    /// (each group's token scales start on such a block).
    pub a_scales: u64,
    /// Generic address of the tensor map over the group's tokens (Blackwell, separate
    /// convention; 0: the launch's own map, passed in the kernel's arguments).
    pub a_map: u64,
    /// Generic address of the tensor map over the gate weights (0: the launch's own).
    pub gate_map: u64,
    /// Generic address of the tensor map over the up weights (0: the launch's own).
    pub up_map: u64,
    /// Row of the group's first token in the launch's token operand (Hopper: the decoded
    /// buffer; Blackwell: `a_map`'s rows).
    pub token_row: u32,
    /// Tokens of the group (`M_g`, may be 0).
    pub rows: u32,
    /// Outputs of the group (`N_g`).
    pub n: u32,
    /// Reduction length of the group (`K_g`, a multiple of 64).
    pub k: u32,
    /// Elements between output rows.
    pub ldc: u32,
    /// Rows of the weights' blocked scale layout.
    pub weight_rows: u32,
    /// Row of `up` that holds output `n`'s up weights, minus `n`.
    pub up_row_offset: u32,
    /// Row of the group's weight row 0 in `gate_map` and `up_map` (stacked weights: the group
    /// times `weight_rows`; per-group maps: 0).
    pub weight_map_row: u32,
    /// Scale of the gate (or plain) product, including the kernel's operand rescale.
    pub alpha_gate: f32,
    /// Scale of the up product (gated), including the kernel's operand rescale.
    pub alpha_up: f32,
    /// NVFP4 output (the grouped dual GEMM's NVFP4 entries): the blocked e4m3 scales of the
    /// group's outputs from the 128-row block of its first token, as `a_scales` (`out` is then
    /// the group's packed e2m1 data, `n / 2` bytes a row); 0 for fp16 output.
    pub out_scales: u64,
    /// NVFP4 output: the group's global scale (finite, positive).
    pub out_global_scale: f32,
    /// Zero: keeps the descriptor a whole number of 16-byte words.
    pub reserved: u32,
}

/// 16-byte words of a [`GroupDesc`] (the kernels load it as vectors).
pub const GROUP_DESC_WORDS: usize = core::mem::size_of::<GroupDesc>() / 16;

/// One group of the separate convention, as the host uploads it: its own allocations and sizes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeparateGroup {
    /// Packed e2m1 activations, `rows × k / 2` bytes.
    pub a: u64,
    /// Blocked e4m3 scales of `a` (`rows × k / 16` codes, padded to whole atoms).
    pub a_scales: u64,
    /// Gate (or plain) weights, `n × k / 2` bytes.
    pub gate: u64,
    /// Blocked scales of `gate`.
    pub gate_scales: u64,
    /// Up weights (gated), `n × k / 2` bytes; equal to `gate` for a plain GEMM.
    pub up: u64,
    /// Blocked scales of `up`.
    pub up_scales: u64,
    /// fp16 output, `rows × n`.
    pub out: u64,
    /// Row of the group's first token in the launch's token operand (Hopper: the sum of the
    /// rows of the groups before it, in the decoded buffer; Blackwell: 0, the group's own map).
    pub token_row: u32,
    /// Tokens (`M_g`, may be 0).
    pub rows: u32,
    /// Outputs (`N_g`).
    pub n: u32,
    /// Reduction length (`K_g`).
    pub k: u32,
    /// Scale of the gate (or plain) product, including the kernel's operand rescale.
    pub alpha_gate: f32,
    /// Scale of the up product, including the kernel's operand rescale.
    pub alpha_up: f32,
    /// Generic address of the tensor map over `a` (Blackwell; 0 on Hopper).
    pub a_map: u64,
    /// Generic address of the tensor map over `gate` (each architecture's own box).
    pub gate_map: u64,
    /// Generic address of the tensor map over `up` (each architecture's own box).
    pub up_map: u64,
}

/// Most groups of a separate-convention launch whose table (and the Hopper weight ring's two
/// maps a group) travels in the preparation pass's parameters ([`SeparatePrepareArgs`], 3 KB of
/// the 4 KB a kernel's parameters may take at PTX ISA 8.0) instead of a copy ahead of the pass:
/// a copy of 3.6 KB cost ≈ 9 µs a launch on the critical path, one of 0.6 KB 2–3.5 µs (perf
/// log). Larger launches upload their table.
pub const PARAMETER_GROUPS: usize = 8;

/// Tensor maps a group carries in a parameter table: its gate and up weights (Hopper's ring).
pub const PARAMETER_MAPS_PER_GROUP: usize = 2;

/// A separate-convention table inside the preparation pass's parameters (Hopper).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SeparateParameters {
    /// Group `g`'s gate map at `2g`, its up map at `2g + 1` (the first
    /// [`SeparatePrepareArgs::maps`]); the pass copies them to [`SeparatePrepareArgs::maps_out`],
    /// where the groups' `gate_map` and `up_map` point.
    pub maps: [TensorMap; PARAMETER_MAPS_PER_GROUP * PARAMETER_GROUPS],
    /// The groups (the first `prepare.groups`).
    pub groups: [SeparateGroup; PARAMETER_GROUPS],
}

/// Arguments of the Hopper preparation pass of a separate-convention launch of at most
/// [`PARAMETER_GROUPS`] groups (`sm90::registry::GROUPED_PREPARE_SEPARATE`): the common
/// arguments (their `separate` pointer unused: the pass reads `table.groups` in parameter
/// space) and the table itself.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SeparatePrepareArgs {
    /// As for any launch; `separate_convention` is 1.
    pub prepare: GroupedPrepareArgs,
    /// Device memory (64-byte aligned) that the first `maps` of `table.maps` are copied to.
    pub maps_out: *mut TensorMap,
    /// Maps to copy (0 where the launch reads none).
    pub maps: u32,
    /// The groups and their maps.
    pub table: SeparateParameters,
}

/// A kernel's parameters may take 4 KB at PTX ISA 8.0 (the Hopper module's).
const _: () = assert!(core::mem::size_of::<SeparatePrepareArgs>() <= 4096);

/// Arguments of the grouped kernels' preparation pass (`sm90::registry::GROUPED_PREPARE`,
/// `sm100::registry::GROUPED_PREPARE`), for either input convention (see the module doc).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GroupedPrepareArgs {
    /// Groups `G` (1..=`MAX_GROUPS`).
    pub groups: u32,
    /// 1: the separate convention (`separate` holds the groups); 0: contiguous.
    pub separate_convention: u32,
    /// Separate convention: the uploaded table of `G` groups.
    pub separate: *const SeparateGroup,
    /// Contiguous: all groups' packed tokens, `rows_capacity × k/2` bytes.
    pub a: *const u8,
    /// Contiguous: the tokens' blocked scales over `scale_rows_capacity` rows.
    pub a_scales: *const u8,
    /// Contiguous: `G + 1` token row offsets (device memory).
    pub row_offsets: *const u32,
    /// Contiguous: `G + 1` scale row offsets (device memory; multiples of 128).
    pub scale_offsets: *const u32,
    /// Contiguous: the gate (or plain) weights of group 0; group `g` starts `gate_stride` bytes on.
    pub gate: u64,
    /// Contiguous: the blocked scales of group 0's gate weights.
    pub gate_scales: u64,
    /// Contiguous: the up weights of group 0 (the gate weights for a plain GEMM).
    pub up: u64,
    /// Contiguous: the blocked scales of group 0's up weights.
    pub up_scales: u64,
    /// Contiguous: bytes between two groups' weights.
    pub weight_stride: u64,
    /// Contiguous: bytes between two groups' weight scales.
    pub weight_scale_stride: u64,
    /// Contiguous: C, `rows_capacity × n` fp16; with `out_scales`, C's packed e2m1 data
    /// (`rows_capacity × n/2` bytes).
    pub out: *mut u16,
    /// Contiguous, NVFP4 output (the grouped dual GEMM's NVFP4 entries): C's blocked e4m3
    /// scales over `scale_rows_capacity` rows, each group's from the 128-row block at its scale
    /// offset (as A's); null for fp16 output.
    pub out_scales: *mut u8,
    /// Contiguous, NVFP4 output: `G` f32 global scales of C's groups.
    pub out_global_scales: *const f32,
    /// Contiguous: per-group scale of the gate (or plain) product, or null for 1.
    pub alpha_gate: *const f32,
    /// Contiguous: per-group scale of the up product, or null for 1.
    pub alpha_up: *const f32,
    /// Contiguous: a factor applied to both products (the kernel's operand rescale times any
    /// host-side global scales).
    pub alpha_factor: f32,
    /// Contiguous: outputs per group.
    pub n: u32,
    /// Contiguous: K.
    pub k: u32,
    /// Contiguous: rows of the weights' scale layout (N, or 2N for a concatenated `w13`).
    pub weight_rows: u32,
    /// Contiguous: `GroupDesc::up_row_offset`.
    pub up_row_offset: u32,
    /// Contiguous: rows of A (the token capacity).
    pub rows_capacity: u32,
    /// Contiguous: rows of A's scale layout.
    pub scale_rows_capacity: u32,
    /// Hopper: rows of the fp16 token buffer (contiguous: `rows_capacity`; separate: the sum
    /// of rows); Blackwell: 0 (no decoded tokens).
    pub token_rows: u32,
    /// fp16 elements per row of the token buffer (`padded_k` of the largest K).
    pub token_pitch: u32,
    /// The fp16 token buffer.
    pub tokens: *mut u32,
    /// Output: one `GroupDesc` per group.
    pub descs: *mut GroupDesc,
    /// Output: the `GroupedHeader`, then one `GroupSchedule` per group.
    pub schedule: *mut u32,
    /// Token tile of the persistent kernel.
    pub tile_tokens: u32,
    /// K per stage of the persistent kernel (its iterations are tiles × stages).
    pub k_per_stage: u32,
    /// Outputs per tile of the persistent kernel.
    pub tile_n: u32,
    /// CTAs of the persistent kernel.
    pub grid: u32,
    /// 1 when the persistent kernel is gated (dual).
    pub gated: u32,
}

/// What the preparation pass found, for the persistent kernel (and, on request, the host).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupedHeader {
    /// Iterations (tiles × K-stages) of all groups; 0 when `status` is not [`STATUS_OK`].
    pub total_iterations: u32,
    /// CTAs that take a stream-K share ([`crate::schedule::working_ctas`]).
    pub working_ctas: u32,
    /// [`STATUS_OK`] or the first rule the device-side offsets broke.
    pub status: u32,
    /// The group at which `status` was found.
    pub status_group: u32,
    /// K-stages of every tile when all tiles have the same count, else 0 (the stream-K split's
    /// whole-tile waves need it: [`crate::schedule::StreamK`]).
    pub tile_stages: u32,
    /// 1 when the split deals its waves in serpentine order
    /// ([`crate::schedule::StreamK::serpentine`]): a launch of at most
    /// [`crate::schedule::SERPENTINE_MAX_TILES_PER_CTA`] tiles a CTA.
    pub serpentine_waves: u32,
    /// Unused: the header fills whole 16-byte records.
    pub reserved: [u32; 2],
}

/// 16-byte records that the [`GroupedHeader`] takes at the start of the schedule table; group
/// `g`'s [`GroupSchedule`](crate::schedule::GroupSchedule) is record `HEADER_RECORDS + g`.
pub const HEADER_RECORDS: u32 = (core::mem::size_of::<GroupedHeader>() / 16) as u32;

/// The device-side offsets were valid; the launch computed every group.
pub const STATUS_OK: u32 = 0;
/// `row_offsets` decrease between a group and the next: the launch wrote nothing.
pub const STATUS_ROWS_DECREASE: u32 = 1;
/// `row_offsets[G]` exceeds the plan's token capacity: the launch wrote nothing.
pub const STATUS_ROWS_EXCEED_CAPACITY: u32 = 2;
/// A group's `scale_offsets` entry is not a multiple of [`SCALE_ROW_ALIGNMENT`]: nothing written.
pub const STATUS_SCALES_MISALIGNED: u32 = 3;
/// A group's scale rows overlap the next group's or run past the plan's scale capacity: the
/// launch wrote nothing.
pub const STATUS_SCALES_OUT_OF_RANGE: u32 = 4;

/// 32-bit words of shared scratch per warp in which the preparation pass's table writers
/// combine their warps' sums.
pub const TABLE_SCRATCH_WORDS_PER_WARP: u32 = 8;

/// Bytes of that scratch for a CTA of `warps` warps (none for one warp).
pub const fn table_scratch_bytes(warps: u32) -> u32 {
    if warps > 1 {
        4 * TABLE_SCRATCH_WORDS_PER_WARP * warps
    } else {
        0
    }
}

/// Dynamic shared memory of the Hopper preparation pass for `groups` groups and CTAs of
/// `threads` threads: the groups' first token rows (`groups + 1` words), then, 16-byte aligned,
/// the table writers' scratch ([`prepare_scratch_offset`]).
pub const fn prepare_shared_bytes(groups: u32, threads: u32) -> u32 {
    prepare_scratch_offset(groups) + table_scratch_bytes(threads / 32)
}

/// Byte offset of the table writers' scratch in the Hopper preparation pass's shared memory.
pub const fn prepare_scratch_offset(groups: u32) -> u32 {
    (4 * (groups + 1)).next_multiple_of(16)
}

/// Tiles of a group of `rows` tokens and `n` outputs under `tile_m × tile_n` tiles, with
/// `ceil(k / k_per_stage)` stages each: one [`GroupSchedule`](crate::schedule::GroupSchedule)
/// without its start.
pub const fn group_schedule(
    rows: u32,
    n: u32,
    k: u32,
    tile_m: u32,
    tile_n: u32,
    k_per_stage: u32,
) -> crate::schedule::GroupSchedule {
    crate::schedule::GroupSchedule {
        iteration_begin: 0,
        m_tiles: ceil_div(rows, tile_m),
        n_tiles: ceil_div(n, tile_n),
        stages: ceil_div(k, k_per_stage),
    }
}

/// `ceil(a / b)`, 0 for `b = 0` (no panic path on the GPU).
const fn ceil_div(a: u32, b: u32) -> u32 {
    match (a.checked_div(b), a.checked_rem(b)) {
        (Some(q), Some(r)) => q + (r != 0) as u32,
        _ => 0,
    }
}

const _: () = assert!(
    core::mem::size_of::<GroupDesc>() == 128 && core::mem::size_of::<SeparateGroup>() == 104,
    "descriptor sizes are part of the host/device contract"
);
