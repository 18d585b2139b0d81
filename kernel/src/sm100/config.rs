//! Tile configuration, shared-memory plan and tensor-memory (TMEM) column plan of the sm_100a
//! dual-GEMM kernel (see `sm100::dual_gemm`). Pure: the host uses it for launch parameters and
//! tests check it; the kernel takes every offset from here.
//!
//! TMEM columns (512 allocated, 448 used), lanes = the tile's 128 token rows:
//!
//! ```text
//!   0 ..  64  gate accumulator, buffer 0      (fp32, one column per output n)
//!  64 .. 128  up accumulator, buffer 0
//! 128 .. 256  gate / up, buffer 1              (the epilogue of tile i overlaps the mainloop of i+1)
//! 256 .. 448  scale factors, 48 columns per ring stage: SFA 16 | SFB1 16 | SFB2 16
//!             (4 columns per K=64 MMA: one 128-row atom copied by tcgen05.cp .32x128b.warpx4)
//! ```

use crate::layout::{ATOM_BYTES, BlockedScales};

/// Tokens per tile: the MMA's M (cta_group::1 block-scaled MMAs are M = 128 only).
pub const TILE_M: u32 = 128;
/// Outputs per tile: the N of each of the two MMAs (gate with B1, up with B2).
pub const TILE_N: u32 = 64;
/// K per ring stage: one 128-byte swizzled row of packed fp4 per operand row.
pub const K_PER_STAGE: u32 = 256;
/// K per block-scaled MMA.
pub const K_PER_MMA: u32 = 64;
/// MMAs per stage and operand pair.
pub const MMAS_PER_STAGE: u32 = K_PER_STAGE / K_PER_MMA;
/// Stages of the shared-memory ring (TMA warp → MMA warp).
pub const STAGES: u32 = 4;
/// Accumulator buffers in TMEM (MMA warp → epilogue warps).
pub const ACCUMULATOR_BUFFERS: u32 = 2;

/// Warp roles: one TMA warp, one MMA warp (also allocates TMEM), four epilogue warps.
pub const TMA_WARP: u32 = 0;
/// The MMA warp.
pub const MMA_WARP: u32 = 1;
/// The first of the four epilogue warps; warp `w` reads TMEM lanes `32·(w % 4) ..`.
pub const FIRST_EPILOGUE_WARP: u32 = 2;
/// Epilogue warps (one per 32-lane TMEM quadrant).
pub const EPILOGUE_WARPS: u32 = 4;
/// Threads per CTA.
pub const THREADS: u32 = 32 * (FIRST_EPILOGUE_WARP + EPILOGUE_WARPS);
/// Token-map box rows (the host's tensor maps have 64-row boxes; a 128-row A tile is two boxes).
pub const BOX_ROWS: u32 = 64;

/// Bytes of one stage's A tile (128 rows × 128 bytes, 128-byte swizzle).
pub const A_BYTES: u32 = TILE_M * 128;
/// Bytes of one stage's B1 or B2 tile (64 rows × 128 bytes).
pub const B_BYTES: u32 = TILE_N * 128;
/// Bytes of one operand's scale atoms per stage: 4 atoms (K = 256) of one 128-row block.
pub const SCALE_BYTES: u32 = MMAS_PER_STAGE * ATOM_BYTES as u32;
/// Bytes of one ring stage.
pub const STAGE_BYTES: u32 = A_BYTES + 2 * B_BYTES + 3 * SCALE_BYTES;

/// Byte offsets inside one ring stage.
pub const STAGE_A: u32 = 0;
/// B1 tile.
pub const STAGE_B1: u32 = A_BYTES;
/// B2 tile.
pub const STAGE_B2: u32 = A_BYTES + B_BYTES;
/// A's scale atoms.
pub const STAGE_SFA: u32 = A_BYTES + 2 * B_BYTES;
/// B1's scale atoms.
pub const STAGE_SFB1: u32 = STAGE_SFA + SCALE_BYTES;
/// B2's scale atoms.
pub const STAGE_SFB2: u32 = STAGE_SFB1 + SCALE_BYTES;

/// Offset of the mbarriers after the ring: full[STAGES], empty[STAGES], accumulator
/// full[BUFFERS], accumulator empty[BUFFERS] (8 bytes each), then the TMEM address slot.
pub const BARRIERS: u32 = STAGES * STAGE_BYTES;
/// The 4-byte slot `tcgen05.alloc` writes the TMEM base address to.
pub const TMEM_SLOT: u32 = BARRIERS + 8 * 2 * (STAGES + ACCUMULATOR_BUFFERS);
/// Dynamic shared memory per CTA.
pub const SHARED_BYTES: u32 = TMEM_SLOT + 16;

/// TMEM columns allocated (a power of two ≥ 32).
pub const TMEM_COLUMNS: u32 = 512;
/// Columns of one accumulator buffer: gate then up.
pub const ACCUMULATOR_COLUMNS: u32 = 2 * TILE_N;
/// First scale-factor column.
pub const SCALE_COLUMNS_BASE: u32 = ACCUMULATOR_BUFFERS * ACCUMULATOR_COLUMNS;
/// Scale-factor columns per operand and stage (4 per MMA).
pub const SCALE_COLUMNS_PER_OPERAND: u32 = 4 * MMAS_PER_STAGE;
/// Scale-factor columns per stage (A, B1, B2).
pub const SCALE_COLUMNS_PER_STAGE: u32 = 3 * SCALE_COLUMNS_PER_OPERAND;
/// Columns in use.
pub const TMEM_COLUMNS_USED: u32 = SCALE_COLUMNS_BASE + STAGES * SCALE_COLUMNS_PER_STAGE;

const _: () = assert!(
    TMEM_COLUMNS_USED <= TMEM_COLUMNS,
    "the TMEM column plan exceeds the allocation"
);
const _: () = assert!(
    TMEM_COLUMNS.is_power_of_two() && TMEM_COLUMNS >= 32 && TMEM_COLUMNS <= 512,
    "tcgen05.alloc takes a power of two in 32..=512"
);
const _: () = assert!(
    STAGE_BYTES.is_multiple_of(1024) && STAGE_B1.is_multiple_of(1024) && STAGE_B2.is_multiple_of(1024),
    "swizzled tiles must stay 1024-byte aligned"
);
const _: () = assert!(SHARED_BYTES <= 227 * 1024, "the ring exceeds shared memory");
const _: () = assert!(
    SHARED_BYTES > 227 * 1024 / 2,
    "one CTA per SM: two would each wait for all 512 TMEM columns"
);
const _: () = assert!(
    TILE_N.is_multiple_of(16) && TILE_N >= 16 && TILE_N <= 256,
    "MMA N (cta_group::1, M = 128) must be a multiple of 16 here"
);
const _: () = assert!(TILE_M == 128, "block-scaled cta_group::1 MMAs have M = 128");

/// TMEM column of the gate accumulator of `buffer` (the up accumulator follows at + TILE_N).
pub const fn gate_column(buffer: u32) -> u32 {
    buffer * ACCUMULATOR_COLUMNS
}

/// TMEM column of the scale factors of operand `operand` (0 = A, 1 = B1, 2 = B2) for MMA `mma`
/// of ring stage `stage`.
pub const fn scale_column(stage: u32, operand: u32, mma: u32) -> u32 {
    SCALE_COLUMNS_BASE + stage * SCALE_COLUMNS_PER_STAGE + operand * SCALE_COLUMNS_PER_OPERAND + 4 * mma
}

/// TMEM address: lane in bits 16..31, column in 0..15.
pub const fn tmem_address(base: u32, lane: u32, column: u32) -> u32 {
    base + (lane << 16) + column
}

/// Byte offset, in a blocked scale buffer, of the 4 atoms (2 KiB, contiguous) one ring stage
/// copies for the rows starting at `row0`: the 128-row block holding `row0`, K-blocks
/// `4·k_stage .. 4·k_stage + 3`.
pub const fn stage_scale_atoms(layout: &BlockedScales, row0: u32, k_stage: u32) -> usize {
    layout.atom_offset(row0 as usize / 128, (k_stage * MMAS_PER_STAGE) as usize)
}

/// Column offset of a [`TILE_N`]-row B tile starting at `n0` inside its 128-row scale atom in
/// TMEM (the atom's column `c` holds rows `32·c ..`): the MMA reads `TILE_N / 32` columns from
/// here.
pub const fn b_scale_column_offset(n0: u32) -> u32 {
    (n0 % 128) / 32
}
