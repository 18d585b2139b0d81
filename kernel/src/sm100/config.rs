//! Tile configuration, shared-memory plan and tensor-memory (TMEM) column plan of the sm_100f
//! kernels (the dense dual GEMM `sm100::dual_gemm` and the grouped kernels `sm100::grouped`,
//! which share the roles of `sm100::roles`), and where each tile reads and writes
//! ([`TilePlace`]). Pure: the host uses it for launch parameters and tests check it; the kernels
//! take every offset from here.
//!
//! TMEM columns (512 allocated, 448 used), lanes = the tile's 128 token rows:
//!
//! ```text
//! N = 64:   0 ..  64 gate, buffer 0 | 64 .. 128 up, buffer 0 | 128 .. 256 gate / up, buffer 1
//! N = 128:  0 .. 128 gate           | 128 .. 256 up          (one buffer: scales need the rest)
//! 256 .. 448  scale factors, 48 columns per ring stage: SFA 16 | SFB1 16 | SFB2 16
//!             (4 columns per K=64 MMA: one 128-row atom copied by tcgen05.cp .32x128b.warpx4)
//! ```

use crate::grouped::GroupDesc;
use crate::launch::TensorMap;
use crate::layout::{ATOM_BYTES, BlockedScales};

/// Tokens per tile: the MMA's M (cta_group::1 block-scaled MMAs are M = 128 only).
pub const TILE_M: u32 = 128;
/// K per ring stage: one 128-byte swizzled row of packed fp4 per operand row.
pub const K_PER_STAGE: u32 = 256;
/// K per block-scaled MMA.
pub const K_PER_MMA: u32 = 64;
/// MMAs per stage and operand pair.
pub const MMAS_PER_STAGE: u32 = K_PER_STAGE / K_PER_MMA;
/// Stages of the shared-memory ring (TMA warp → MMA warp).
pub const STAGES: u32 = 4;

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
/// Rows per TMA box of the host's tensor maps (one definition, shared with sm_90a; a 128-row
/// operand tile is two boxes).
pub const BOX_ROWS: u32 = crate::sm90::config::TOKEN_BOX_ROWS;

/// Bytes of one stage's A tile (128 rows × 128 bytes, 128-byte swizzle).
pub const A_BYTES: u32 = TILE_M * 128;
/// Bytes of one operand's scale atoms per stage: 4 atoms (K = 256) of one 128-row block.
pub const SCALE_BYTES: u32 = MMAS_PER_STAGE * ATOM_BYTES as u32;
/// Byte offset of the A tile inside a ring stage.
pub const STAGE_A: u32 = 0;

/// TMEM columns allocated (a power of two ≥ 32).
pub const TMEM_COLUMNS: u32 = 512;
/// Scale-factor columns per operand and stage (4 per MMA).
pub const SCALE_COLUMNS_PER_OPERAND: u32 = 4 * MMAS_PER_STAGE;
/// Scale-factor columns per stage (A, B1, B2).
pub const SCALE_COLUMNS_PER_STAGE: u32 = 3 * SCALE_COLUMNS_PER_OPERAND;

/// One tile shape: 128 tokens × `n` outputs (the N of each of the two MMAs). The fastest public
/// kernels use N = 64 for M ≤ 256 and N = 128 above; the tiles the module is built for are
/// listed in `sm100::registry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Outputs per tile: 64 or 128.
    pub n: u32,
}

impl Tile {
    /// TMEM accumulator buffers: two (the epilogue of one tile overlaps the next tile's
    /// mainloop) where they fit next to the scale columns, one for N = 128.
    pub const fn accumulator_buffers(&self) -> u32 {
        if self.n <= 64 { 2 } else { 1 }
    }

    /// Bytes a stage with `mmas` MMAs brings in: the A, B1 and B2 tiles (whole boxes: TMA fills
    /// the part past K with zeros) and `mmas` scale atoms of each operand.
    pub const fn stage_transfer_bytes(&self, mmas: u32) -> u32 {
        self.stage_sfa() + 3 * mmas * ATOM_BYTES as u32
    }

    /// Bytes of one stage's B1 or B2 tile (`n` rows × 128 bytes).
    pub const fn b_bytes(&self) -> u32 {
        self.n * 128
    }

    /// TMA boxes per B tile.
    pub const fn b_boxes(&self) -> u32 {
        self.n / BOX_ROWS
    }

    /// Byte offset of the B1 tile inside a ring stage.
    pub const fn stage_b1(&self) -> u32 {
        A_BYTES
    }

    /// Byte offset of the B2 tile.
    pub const fn stage_b2(&self) -> u32 {
        A_BYTES + self.b_bytes()
    }

    /// Byte offset of A's scale atoms.
    pub const fn stage_sfa(&self) -> u32 {
        A_BYTES + 2 * self.b_bytes()
    }

    /// Byte offset of B1's scale atoms.
    pub const fn stage_sfb1(&self) -> u32 {
        self.stage_sfa() + SCALE_BYTES
    }

    /// Byte offset of B2's scale atoms.
    pub const fn stage_sfb2(&self) -> u32 {
        self.stage_sfb1() + SCALE_BYTES
    }

    /// Bytes of one ring stage.
    pub const fn stage_bytes(&self) -> u32 {
        self.stage_sfb2() + SCALE_BYTES
    }

    /// Offset of the mbarriers after the ring: `full[STAGES]`, `empty[STAGES]`, accumulator
    /// `full[buffers]`, accumulator `empty[buffers]` (8 bytes each), then the TMEM address slot.
    pub const fn barriers(&self) -> u32 {
        STAGES * self.stage_bytes()
    }

    /// The 4-byte slot `tcgen05.alloc` writes the TMEM base address to.
    pub const fn tmem_slot(&self) -> u32 {
        self.barriers() + 8 * 2 * (STAGES + self.accumulator_buffers())
    }

    /// Dynamic shared memory per CTA.
    pub const fn shared_bytes(&self) -> u32 {
        self.tmem_slot() + 16
    }

    /// TMEM column of the gate accumulator of `buffer` (the up accumulator follows at + n).
    pub const fn gate_column(&self, buffer: u32) -> u32 {
        buffer * 2 * self.n
    }

    /// First scale-factor column.
    pub const fn scale_columns_base(&self) -> u32 {
        self.accumulator_buffers() * 2 * self.n
    }

    /// TMEM column of the scale factors of operand `operand` (0 = A, 1 = B1, 2 = B2) for MMA
    /// `mma` of ring stage `stage`.
    pub const fn scale_column(&self, stage: u32, operand: u32, mma: u32) -> u32 {
        self.scale_columns_base()
            + stage * SCALE_COLUMNS_PER_STAGE
            + operand * SCALE_COLUMNS_PER_OPERAND
            + 4 * mma
    }

    /// TMEM columns in use.
    pub const fn tmem_columns_used(&self) -> u32 {
        self.scale_columns_base() + STAGES * SCALE_COLUMNS_PER_STAGE
    }

    /// Outputs one tile computes: `n` gated; `2·n` plain, whose gate and up MMAs take the two
    /// halves (outputs `n0 .. n0 + n` and `n0 + n .. n0 + 2n` of the same weights).
    pub const fn outputs(&self, gated: bool) -> u32 {
        if gated { self.n } else { 2 * self.n }
    }

    /// Outputs between a tile's gate and up halves: 0 gated (the same outputs of two
    /// matrices), `n` plain (the second half of the same weights).
    pub const fn up_half(&self, gated: bool) -> u32 {
        if gated { 0 } else { self.n }
    }

    /// Whether a grouped launch may use this tile: every tile's B rows must stay inside one
    /// 128-row scale atom and inside the weights' padded scale layout. Gated: `n` divides 128
    /// or both `n_g` and the up rows' offset are multiples of `n`; plain: the up half of the
    /// last tile may run past `n_g` only inside the last (padded) atom, which holds for `n =
    /// 64`; for `n = 128`, `n_g` must be a multiple of 256.
    pub const fn fits_grouped(&self, gated: bool, n_g: u32, up_row_offset: u32) -> bool {
        if self.n <= 64 {
            true
        } else if gated {
            n_g.is_multiple_of(self.n) && up_row_offset.is_multiple_of(128)
        } else {
            n_g.is_multiple_of(2 * self.n)
        }
    }
}

/// How the gate and up MMAs of one K step read their common A operand. `Reuse` (the default)
/// keeps A in the MMA's collector between them (`.collector::a::fill`, then `::lastuse`): A is
/// read from shared memory once. Only the CuTe DSL documents this (as a hint); no NVIDIA C++
/// kernel does it, so `Discard` (each MMA reads A) is one switch away, and the GPU tests on
/// compute capability 10.x run both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ACollectorUse {
    /// Keep A in the collector for the second MMA.
    #[default]
    Reuse,
    /// Read A from shared memory in both MMAs.
    Discard,
}

impl ACollectorUse {
    /// The kernels' argument word.
    pub const fn word(self) -> u32 {
        match self {
            ACollectorUse::Reuse => 1,
            ACollectorUse::Discard => 0,
        }
    }
}

/// Where one tile reads and writes, in its operands' coordinates: the same roles run the dense
/// dual GEMM and the grouped kernels, which differ only in how they compute this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePlace {
    /// Row of the tile's first token in A's tensor map.
    pub a_row: u32,
    /// Byte offset of the tile's first scale atom (its 128-row block, K-block 0) from the
    /// tokens' scale base (the dense A's scales, a group's `a_scales`).
    pub a_atoms: usize,
    /// Row of the gate tile in the gate tensor map.
    pub gate_row: u32,
    /// Row of the up tile in the up tensor map.
    pub up_row: u32,
    /// Byte offset of the gate tile's first atom in the gate scales.
    pub gate_atoms: usize,
    /// Byte offset of the up tile's first atom in the up scales.
    pub up_atoms: usize,
    /// TMEM column offset of the gate rows inside their scale atom ([`b_scale_column_offset`]).
    pub gate_column: u32,
    /// TMEM column offset of the up rows inside their scale atom.
    pub up_column: u32,
    /// Element offset of the tile's first output (token 0, output 0) in C.
    pub out: usize,
    /// Tokens of the tile that exist (≤ [`TILE_M`]).
    pub rows: u32,
    /// Outputs from the tile's first that exist (the tile writes those below `outputs`).
    pub columns: u32,
}

impl TilePlace {
    /// Tile `(m_tile, n_tile)` of the dense dual GEMM (`gated`) or GEMM `m × n × k` (C
    /// row-major, `n` a row). Plain tiles take their up rows `tile.n` after the gate rows, of
    /// the same B ([`Tile::outputs`]).
    pub const fn dense(m: u32, n: u32, k: u32, tile: Tile, m_tile: u32, n_tile: u32, gated: bool) -> Self {
        let (m0, n0) = (m_tile * TILE_M, n_tile * tile.outputs(gated));
        let up = n0 + tile.up_half(gated);
        let (a, b) = (
            BlockedScales::new(m as usize, k as usize),
            BlockedScales::new(n as usize, k as usize),
        );
        let rows = m.saturating_sub(m0);
        Self {
            a_row: m0,
            a_atoms: a.atom_offset(m0 as usize / 128, 0),
            gate_row: n0,
            up_row: up,
            gate_atoms: b.atom_offset(n0 as usize / 128, 0),
            up_atoms: b.atom_offset(up as usize / 128, 0),
            gate_column: b_scale_column_offset(n0),
            up_column: b_scale_column_offset(up),
            out: m0 as usize * n as usize + n0 as usize,
            rows: if rows < TILE_M { rows } else { TILE_M },
            columns: n.saturating_sub(n0),
        }
    }

    /// Tile `local` of a group (token tile fastest: `local = n_tile · m_tiles + m_tile`) of a
    /// grouped launch, from the group's descriptor (element offsets relative to its pointers).
    /// Plain tiles take their up rows `tile.n` after the gate rows ([`Tile::outputs`]).
    pub const fn grouped(desc: &GroupDesc, m_tiles: u32, local: u32, tile: Tile, gated: bool) -> Self {
        let (m_tile, n_tile) = match (local.checked_rem(m_tiles), local.checked_div(m_tiles)) {
            (Some(m), Some(n)) => (m, n),
            _ => (0, 0),
        };
        let (row0, n0) = (m_tile * TILE_M, n_tile * tile.outputs(gated));
        let gate = n0;
        let up = n0 + desc.up_row_offset + tile.up_half(gated);
        // Atom offsets depend on K only (whole 128-row blocks of `k / 64` atoms).
        let scales = BlockedScales::new(TILE_M as usize, desc.k as usize);
        let rows = desc.rows.saturating_sub(row0);
        Self {
            a_row: desc.token_row + row0,
            a_atoms: scales.atom_offset(m_tile as usize, 0),
            gate_row: desc.weight_map_row + gate,
            up_row: desc.weight_map_row + up,
            gate_atoms: scales.atom_offset(gate as usize / 128, 0),
            up_atoms: scales.atom_offset(up as usize / 128, 0),
            gate_column: b_scale_column_offset(gate),
            up_column: b_scale_column_offset(up),
            out: row0 as usize * desc.ldc as usize + n0 as usize,
            rows: if rows < TILE_M { rows } else { TILE_M },
            columns: desc.n.saturating_sub(n0),
        }
    }

    /// A grouped tile's first token and first output within its group (`row0`, `n0` of
    /// [`TilePlace::grouped`]): where it writes the group's NVFP4 output.
    pub const fn in_group(&self, desc: &GroupDesc) -> (u32, u32) {
        (
            self.a_row.wrapping_sub(desc.token_row),
            self.gate_row.wrapping_sub(desc.weight_map_row),
        )
    }
}

/// Compile-time checks of one tile (the registry, `sm100::registry`, runs them on each of its
/// tiles): TMEM columns, alignments, shared memory, MMA shape.
pub const fn check_tile(tile: Tile) {
    assert!(
        tile.tmem_columns_used() <= TMEM_COLUMNS,
        "the TMEM column plan exceeds the allocation"
    );
    assert!(
        tile.stage_bytes().is_multiple_of(1024)
            && tile.stage_b1().is_multiple_of(1024)
            && tile.stage_b2().is_multiple_of(1024),
        "swizzled tiles must stay 1024-byte aligned"
    );
    assert!(
        tile.shared_bytes() <= 227 * 1024,
        "the ring exceeds shared memory"
    );
    assert!(
        tile.shared_bytes() > 227 * 1024 / 2,
        "one CTA per SM: two would each wait for all 512 TMEM columns"
    );
    assert!(
        tile.n.is_multiple_of(BOX_ROWS) && tile.n <= 256,
        "MMA N must be a whole number of TMA boxes, ≤ 256"
    );
    assert!(
        128u32.is_multiple_of(tile.n) || tile.n.is_multiple_of(128),
        "B tiles must not straddle scale atoms"
    );
}
const _: () = assert!(
    TMEM_COLUMNS.is_power_of_two() && TMEM_COLUMNS >= 32 && TMEM_COLUMNS <= 512,
    "tcgen05.alloc takes a power of two in 32..=512"
);
const _: () = assert!(TILE_M == 128, "block-scaled cta_group::1 MMAs have M = 128");

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

/// Block-scaled MMAs (64 K each, one scale atom per operand) of stage `k_stage` for a K of
/// `k`: [`MMAS_PER_STAGE`] except in a partial last stage (K a multiple of 64 but not of 256),
/// whose missing atoms are neither copied nor multiplied.
pub const fn stage_mmas(k: u32, k_stage: u32) -> u32 {
    let left = (k / K_PER_MMA).saturating_sub(k_stage * MMAS_PER_STAGE);
    if left < MMAS_PER_STAGE {
        left
    } else {
        MMAS_PER_STAGE
    }
}

/// Column offset of a B tile starting at `n0` inside its 128-row scale atom in TMEM (the atom's
/// column `c` holds rows `32·c ..`): the MMA reads `n / 32` columns from here.
pub const fn b_scale_column_offset(n0: u32) -> u32 {
    (n0 % 128) / 32
}

/// Arguments of the sm_100f grouped kernels (`sm100::registry::TiledEntries::grouped`): the contiguous convention's three tensor maps and the
/// preparation pass's tables (every per-group address, and the separate convention's maps, are
/// in the groups' descriptors; a descriptor's map address 0 means the launch's own map).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GroupedArgs {
    /// Contiguous convention: the map over all groups' tokens (as the dense kernel's A map).
    pub a_map: TensorMap,
    /// Contiguous convention: the map over all groups' gate weights, stacked.
    pub gate_map: TensorMap,
    /// Contiguous convention: the map over all groups' up weights, stacked.
    pub up_map: TensorMap,
    /// The groups' descriptors.
    pub descs: *const GroupDesc,
    /// The `GroupedHeader`, then one `GroupSchedule` per group.
    pub schedule: *const u32,
    /// Groups (1..=`MAX_GROUPS`).
    pub groups: u32,
    /// As [`DualGemmArgs::a_collector_reuse`].
    pub a_collector_reuse: u32,
}

/// Arguments of the sm_100f dual GEMM (`sm100::registry::TiledEntries::dense`), passed by value as the
/// kernel's only parameter (the host fills this very struct).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DualGemmArgs {
    /// A's tensor map (UINT8, dims {k/2, m}, box {128, 64}, 128-byte swizzle).
    pub a_map: TensorMap,
    /// B1's tensor map (as A's, over N rows).
    pub b1_map: TensorMap,
    /// B2's tensor map.
    pub b2_map: TensorMap,
    /// A's blocked scales.
    pub a_scales: *const u8,
    /// B1's blocked scales.
    pub b1_scales: *const u8,
    /// B2's blocked scales.
    pub b2_scales: *const u8,
    /// C, `m × n` fp16; for the NVFP4-output entries (`TiledEntries::dense_nvfp4`), C's packed
    /// e2m1 data instead (`m × n/2` bytes).
    pub out: *mut u16,
    /// The NVFP4-output entries' C scales (`BlockedScales::new(m, n)`, padding written as
    /// zeros; see [`nvfp4_data_offset`]). Ignored (null) by the other entries.
    pub out_scales: *mut u8,
    /// C's global scale for the NVFP4-output entries (finite, positive).
    pub out_global_scale: f32,
    /// Tokens.
    pub m: u32,
    /// Outputs.
    pub n: u32,
    /// Reduction length (a multiple of 64).
    pub k: u32,
    /// Scale of the gate product (`g_A · g_B1`).
    pub alpha_gate: f32,
    /// Scale of the up product.
    pub alpha_up: f32,
    /// Operands' global scales in device memory, multiplied into `alpha_gate` and `alpha_up`.
    pub device_globals: crate::common::DeviceGlobalScales,
    /// 1: A stays in the MMA's collector between the gate and up MMAs
    /// ([`ACollectorUse::Reuse`]); 0: each MMA reads A from shared memory.
    pub a_collector_reuse: u32,
}

const _: () = assert!(
    core::mem::offset_of!(DualGemmArgs, a_map).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::offset_of!(DualGemmArgs, b1_map).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::offset_of!(DualGemmArgs, b2_map).is_multiple_of(crate::launch::PARAM_ALIGN),
    "tensor maps must sit at 64-byte offsets of the parameter"
);

const _: () = assert!(
    core::mem::offset_of!(GroupedArgs, a_map).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::offset_of!(GroupedArgs, gate_map).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::offset_of!(GroupedArgs, up_map).is_multiple_of(crate::launch::PARAM_ALIGN),
    "tensor maps must sit at 64-byte offsets of the parameter"
);

/// Outputs of one NVFP4 scale block: the epilogue's TMEM chunk of 16 columns is one block of
/// one token.
pub const NVFP4_CHUNK: u32 = 16;
/// Chunks whose scales fill one word of the blocked layout (an atom line's four columns).
pub const NVFP4_CHUNKS_PER_SCALE_WORD: u32 = 4;

/// Byte offset, in the NVFP4 output's packed data (`m × n/2` bytes), of the 8 bytes that token
/// lane `token` of the dense tile at `(m0, n0)` writes for its chunk `chunk` (outputs `n0 +
/// 16·chunk ..`), when the token exists (`m0 + token < m`) and the chunk's outputs do (`n0 +
/// 16·chunk < n`).
pub const fn nvfp4_data_offset(n: u32, m0: u32, n0: u32, token: u32, chunk: u32) -> usize {
    (m0 + token) as usize * (n / 2) as usize + ((n0 + NVFP4_CHUNK * chunk) / 2) as usize
}

/// Byte offset, in the NVFP4 output's blocked scales (`BlockedScales::new(m, n)`), of the
/// 4-byte word that token lane `token` of the dense tile at `(m0, n0)` writes for chunks
/// `4·word .. 4·word + 4` (their four block scales), or `None` for a row that is neither a token
/// nor padding of the layout. A tile is [`TILE_M`] = 128 tokens, a whole row block of the
/// layout, so the lanes past the last tile's tokens are exactly its padding rows, which get
/// zero words; `n` a multiple of 64 leaves no padding columns. Each word of the layout is
/// written once (`tests/sm100_emulation.rs`).
pub const fn nvfp4_scale_word_offset(
    m: u32,
    n: u32,
    m0: u32,
    n0: u32,
    token: u32,
    word: u32,
) -> Option<usize> {
    let row = m0 + token;
    let layout = BlockedScales::new(m as usize, n as usize);
    if row >= (layout.row_blocks * crate::layout::ATOM_ROWS) as u32 {
        return None;
    }
    let block = (n0 + NVFP4_CHUNK * NVFP4_CHUNKS_PER_SCALE_WORD * word) / NVFP4_CHUNK;
    Some(layout.offset(row as usize, block as usize))
}
