//! The blocked ("128×4 atom") layout of NVFP4 scale factors, shared by host code, tests and kernels.
//!
//! NVFP4 stores one e4m3 scale per 16 consecutive K elements of a row. cuBLAS, CUTLASS and the
//! Blackwell tensor cores read these scales in a blocked layout: rows are grouped by 128, scale
//! columns (one per 16 K) by 4, and each (128-row block, 4-column block) is one contiguous
//! 512-byte *atom*. Atoms run along K first. Inside an atom, the scale of row `32·i + r`
//! (`r < 32`, `i < 4`) and column `g < 4` is at byte `16·r + 4·i + g`.
//!
//! Rows past the matrix inside the last 128-row block, and columns past `K/16` inside the last
//! 4-column block, are padding. This module is the only definition of that mapping.

/// K elements that share one scale factor.
pub const SCALE_BLOCK_K: usize = 16;
/// Rows covered by one scale atom.
pub const ATOM_ROWS: usize = 128;
/// Scale columns (each covering [`SCALE_BLOCK_K`] K elements) covered by one scale atom.
pub const ATOM_SCALE_COLS: usize = 4;
/// K elements covered by one scale atom.
pub const ATOM_K: usize = ATOM_SCALE_COLS * SCALE_BLOCK_K;
/// Bytes in one scale atom (one e4m3 byte per row and scale column).
pub const ATOM_BYTES: usize = ATOM_ROWS * ATOM_SCALE_COLS;

const _: () = assert!(ATOM_BYTES == 512, "a scale atom is 512 bytes (docs/format.md)");

/// Geometry of one matrix's blocked scale buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedScales {
    /// Number of 128-row blocks, `ceil(rows / 128)` (`rest_mn` in docs/format.md).
    pub row_blocks: usize,
    /// Number of 64-K blocks, `ceil(k / 64)` (`rest_k` in docs/format.md).
    pub k_blocks: usize,
}

impl BlockedScales {
    /// The layout for a `rows × k` matrix (`k` counted in fp4 elements).
    pub const fn new(rows: usize, k: usize) -> Self {
        Self {
            row_blocks: rows.div_ceil(ATOM_ROWS),
            k_blocks: k.div_ceil(ATOM_K),
        }
    }

    /// Bytes of the whole scale buffer, padding included; `None` when that overflows `usize`.
    pub const fn checked_len(&self) -> Option<usize> {
        match self.row_blocks.checked_mul(self.k_blocks) {
            Some(atoms) => atoms.checked_mul(ATOM_BYTES),
            None => None,
        }
    }

    /// Bytes of the whole scale buffer, padding included.
    ///
    /// # Panics
    /// If the size overflows `usize` (use [`Self::checked_len`] for sizes from untrusted input;
    /// every matrix this library builds has checked it).
    pub const fn len(&self) -> usize {
        match self.checked_len() {
            Some(len) => len,
            None => panic!("blocked scale buffer size overflows usize"),
        }
    }

    /// True when the buffer has no bytes (a matrix with no rows or no K).
    pub const fn is_empty(&self) -> bool {
        matches!(self.checked_len(), Some(0))
    }

    /// Byte offset of the scale of `row` and scale column `scale_col` (= k / 16).
    #[inline(always)]
    pub const fn offset(&self, row: usize, scale_col: usize) -> usize {
        self.atom_offset(row / ATOM_ROWS, scale_col / ATOM_SCALE_COLS)
            + (row % 32) * 16
            + ((row / 32) % 4) * 4
            + scale_col % ATOM_SCALE_COLS
    }

    /// [`Self::offset`] in 32-bit arithmetic (a third of the instructions of the 64-bit form on
    /// the GPU), for buffers whose [`Self::len`] is at most `u32::MAX` (callers check).
    #[inline(always)]
    pub const fn offset_u32(&self, row: u32, scale_col: u32) -> u32 {
        let atom = (row / ATOM_ROWS as u32) * self.k_blocks as u32 + scale_col / ATOM_SCALE_COLS as u32;
        atom * ATOM_BYTES as u32 + (row % 32) * 16 + ((row / 32) % 4) * 4 + scale_col % ATOM_SCALE_COLS as u32
    }

    /// Byte offset of the atom of 128-row block `row_block` and 64-K block `k_block`.
    #[inline(always)]
    pub const fn atom_offset(&self, row_block: usize, k_block: usize) -> usize {
        (row_block * self.k_blocks + k_block) * ATOM_BYTES
    }
}
