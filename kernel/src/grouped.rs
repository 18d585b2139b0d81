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
//!   [`SeparateGroup`]s uploaded with each launch.
//!
//! Each launch first runs a *preparation pass* on the GPU, which validates the device-side
//! offsets, writes one [`GroupDesc`] per group (where its tokens, weights and outputs are), the
//! table of [`GroupSchedule`](crate::schedule::GroupSchedule)s the persistent kernel splits its
//! work by, and a [`GroupedHeader`]; on Hopper it also decodes the tokens to fp16. Nothing of it
//! travels to the host, so one plan serves every routing and launches can be captured in a CUDA
//! graph and replayed with other sizes.

/// Most groups one launch takes (the schedule table lives in shared memory: 16 bytes a group).
pub const MAX_GROUPS: u32 = 1024;

/// Row granularity of a group's activation scales in the contiguous convention: each group's
/// scale rows start on a 128-row block of the blocked layout (one scale atom's rows), as
/// vLLM's `blockscale_offsets` and TensorRT-LLM's padding do.
pub const SCALE_ROW_ALIGNMENT: u32 = 128;

/// One group's problem as the persistent kernel reads it (written by the preparation pass).
/// Weight rows: the tile's output `n` reads *gate* row `n` of `gate` and *up* row
/// `n + up_row_offset` of `up` (gated: B1 and B3 rows of the same output, from separate
/// matrices or one concatenated `w13`; plain: the same matrix, the up row being the output 8
/// further on, see the kernels' tile docs). Both share one blocked scale layout of
/// `weight_rows × k`.
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
    /// Row of the group's first token in the launch's token operand.
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
    /// Scale of the gate (or plain) product, including the kernel's operand rescale.
    pub alpha_gate: f32,
    /// Scale of the up product (gated), including the kernel's operand rescale.
    pub alpha_up: f32,
    /// Padding to 80 bytes.
    pub reserved: u32,
}

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
    /// Row of the group's first token in the launch's token operand (the sum of the rows of the
    /// groups before it).
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
    /// Unused: the header fills whole 16-byte records.
    pub reserved: [u32; 3],
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
    core::mem::size_of::<GroupDesc>() == 80 && core::mem::size_of::<SeparateGroup>() == 80,
    "descriptor sizes are part of the host/device contract"
);
