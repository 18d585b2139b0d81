//! Shared-memory matrix descriptors and the 128-byte swizzle, for wgmma (sm_90a).
//!
//! A K-major operand tile with 128-byte swizzle is stored as 8-row × 128-byte atoms (1024 bytes,
//! 1024-byte aligned) stacked along the rows; within an atom, 16-byte chunk `c` of row `r` lives
//! at chunk `c ^ (r % 8)` (the layout TMA's SWIZZLE_128B writes and wgmma's descriptor reads).

/// Bytes per swizzled row (one K=64 slice of fp16, or K=256 of packed fp4).
pub const SW128_ROW_BYTES: u32 = 128;
/// Rows per swizzle atom.
pub const SW128_ATOM_ROWS: u32 = 8;
/// Bytes per swizzle atom: the stride between 8-row groups (SBO).
pub const SW128_ATOM_BYTES: u32 = SW128_ROW_BYTES * SW128_ATOM_ROWS;

/// Byte offset of 16-byte chunk `chunk` of row `row` in a 1024-byte-aligned SW128 tile:
/// [`sw128_row`] + [`sw128_in_row`].
#[inline(always)]
pub const fn sw128_offset(row: u32, chunk: u32) -> u32 {
    sw128_row(row) + sw128_in_row(row, chunk)
}

/// Byte offset of row `row` (128-byte aligned) in a 1024-byte-aligned SW128 tile.
#[inline(always)]
pub const fn sw128_row(row: u32) -> u32 {
    (row / SW128_ATOM_ROWS) * SW128_ATOM_BYTES + (row % SW128_ATOM_ROWS) * SW128_ROW_BYTES
}

/// Byte offset of 16-byte chunk `chunk` within row `row` (below 128, so it may be OR-ed into the
/// row's 128-byte-aligned address).
#[inline(always)]
pub const fn sw128_in_row(row: u32, chunk: u32) -> u32 {
    (chunk ^ (row % SW128_ATOM_ROWS)) * 16
}

/// wgmma (sm_90) descriptor of a K-major SW128 tile starting at shared address `addr`
/// (PTX ISA "Matrix Descriptor Format"): start address >> 4 in bits 0..13, leading byte offset
/// 16 B (ignored for swizzled K-major) in 16..29, stride byte offset 1024 B in 32..45, base
/// offset 0 (tiles are 1024-aligned; steps along K add to the start address only), 128-byte
/// swizzle (1) in bits 62..63.
#[inline(always)]
pub const fn wgmma_desc_sw128_k_major(addr: u32) -> u64 {
    const LEADING_BYTE_OFFSET: u64 = 16;
    const SWIZZLE_128B: u64 = 1;
    ((addr as u64 & 0x3_FFFF) >> 4)
        | ((LEADING_BYTE_OFFSET >> 4) << 16)
        | (((SW128_ATOM_BYTES as u64) >> 4) << 32)
        | (SWIZZLE_128B << 62)
}

/// tcgen05 (sm_100) descriptor of a K-major SW128 tile at shared address `addr`: as
/// [`wgmma_desc_sw128_k_major`] plus the descriptor version 1 in bits 46..48 (required on sm_100)
/// and the 3-bit swizzle field of sm_100 in bits 61..63 (2 = 128-byte swizzle), the same bits as
/// sm_90's 2-bit field at 62..63 (docs/ptx-facts.md §3).
#[inline(always)]
pub const fn umma_desc_sw128_k_major(addr: u32) -> u64 {
    const VERSION: u64 = 1;
    const SWIZZLE_128B: u64 = 2;
    ((addr as u64 & 0x3_FFFF) >> 4)
        | ((16u64 >> 4) << 16)
        | (((SW128_ATOM_BYTES as u64) >> 4) << 32)
        | (VERSION << 46)
        | (SWIZZLE_128B << 61)
}

/// tcgen05 descriptor of one 512-byte scale-factor atom at `addr` for `tcgen05.cp .32x128b`: no
/// swizzle, 32 rows of 16 bytes, stride between 8-row groups 128 bytes, version 1. The leading
/// byte offset is unused by this one-column copy; it is written as 1 (16 bytes), as CUTLASS's
/// `make_umma_desc` writes it, so that the encoding is bit-identical to NVIDIA's.
#[inline(always)]
pub const fn umma_desc_scale_atom(addr: u32) -> u64 {
    const VERSION: u64 = 1;
    const STRIDE_BYTES: u64 = 128;
    const LEADING_BYTE_OFFSET: u64 = 1; // in 16-byte units
    ((addr as u64 & 0x3_FFFF) >> 4)
        | (LEADING_BYTE_OFFSET << 16)
        | ((STRIDE_BYTES >> 4) << 32)
        | (VERSION << 46)
}

/// Instruction descriptor of `tcgen05.mma .kind::mxf4nvf4 .block_scale .block16` (PTX ISA
/// "Instruction descriptor format for .kind::mxf4 and .kind::mxf4nvf4"): A and B are E2M1
/// (format 1 at bits 7..9 and 10..11), scales UE4M3 (bit 23 = 0), K-major operands (transpose
/// bits 0), N >> 3 at bits 17..22, M >> 7 at bits 27..28, dense K = 64 (bit 31 = 0), scale-factor
/// ids 0.
#[inline(always)]
pub const fn umma_idesc_mxf4nvf4(m: u32, n: u32) -> u32 {
    const E2M1: u32 = 1;
    (E2M1 << 7) | (E2M1 << 10) | ((n >> 3) << 17) | ((m >> 7) << 27)
}
