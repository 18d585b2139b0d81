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

/// Bytes of one line of an atom: the scales of rows `r`, `r + 32`, `r + 64`, `r + 96` (one
/// 4-byte word each) in its four columns.
pub const ATOM_LINE_BYTES: usize = 16;
/// Lines in one atom.
pub const ATOM_LINES: usize = ATOM_BYTES / ATOM_LINE_BYTES;

/// The padding of the blocked scales of a `rows × k` matrix as work items of a kernel that
/// writes it as zeros (the quantizer), in two runs:
/// * *column items*: one per padding byte in the columns past `k / 16` of each real row (byte
///   stores: their words also hold real scales), row-major;
/// * *line items*: one per line of each atom of the last 128-row block when that block has
///   padding rows, atom-major: a line's words of padding rows ([`ScalePadding::real_words`]
///   and up) are zeros, in one 16-byte store when the line holds no real row.
///
/// Every padding byte is written by exactly one item, and no item writes a real scale
/// (`tests/layout.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalePadding {
    /// Rows of the matrix.
    pub rows: u32,
    /// Real scale columns per row (`k / 16`).
    pub blocks_per_row: u32,
    /// Padding columns past them in the last atom column (0 to 3).
    pub column_gap: u32,
    /// Atoms per 128-row block (`ceil(k / 64)`).
    pub k_blocks: u32,
}

impl ScalePadding {
    /// The padding of a `rows × k` matrix (`k` a multiple of 16, `rows · k / 16 < 2³¹`).
    pub const fn new(rows: u32, k: u32) -> Self {
        let blocks_per_row = k / SCALE_BLOCK_K as u32;
        let k_blocks = blocks_per_row.div_ceil(ATOM_SCALE_COLS as u32);
        Self {
            rows,
            blocks_per_row,
            column_gap: ATOM_SCALE_COLS as u32 * k_blocks - blocks_per_row,
            k_blocks,
        }
    }

    /// Column items: `rows · column_gap`.
    pub const fn column_items(&self) -> u32 {
        self.rows * self.column_gap
    }

    /// Line items: every line of the last row block's atoms if that block has padding rows.
    pub const fn line_items(&self) -> u32 {
        if self.rows.is_multiple_of(ATOM_ROWS as u32) {
            0
        } else {
            ATOM_LINES as u32 * self.k_blocks
        }
    }

    /// All items.
    pub const fn items(&self) -> u32 {
        self.column_items() + self.line_items()
    }

    /// First row of the last 128-row block.
    pub const fn last_block_row(&self) -> u32 {
        (self.rows.saturating_sub(1) / ATOM_ROWS as u32) * ATOM_ROWS as u32
    }

    /// Words of line `line` of the last row block that hold real rows: word `i` holds row
    /// `last_block_row + line + 32·i`, so words `0..real_words` are real and the rest padding.
    pub const fn real_words(&self, line: u32) -> u32 {
        let first = self.last_block_row() + line;
        if first >= self.rows {
            0
        } else {
            let real = (self.rows - first).div_ceil(ATOM_LINES as u32);
            if real < 4 { real } else { 4 }
        }
    }

    /// Byte offset, in the layout, of line item `item` (`item < line_items`).
    pub const fn line_offset(&self, item: u32) -> u32 {
        let (atom, line) = (item / ATOM_LINES as u32, item % ATOM_LINES as u32);
        let row_block = self.last_block_row() / ATOM_ROWS as u32;
        (row_block * self.k_blocks + atom) * ATOM_BYTES as u32 + ATOM_LINE_BYTES as u32 * line
    }
}
