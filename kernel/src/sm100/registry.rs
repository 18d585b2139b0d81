//! The sm_100f kernel registry: every entry point of the Blackwell module, declared once (the
//! same scheme as `sm90::registry`: lists handed to callback macros, from which the kernel files
//! define their entries and this module builds the tables the host and the build read).
//!
//! Pure: compiled for the host too. Nothing of this module has run on hardware (no B200).

use crate::grouped::GroupedPrepareArgs;
use crate::launch::{EntryPoint, Kernel};
use crate::sm100::config::{DualGemmArgs, GroupedArgs, THREADS, Tile, check_tile};

/// The tiled kernels, narrowest first, one line per tile width (the MMAs' N): `n dense_entry
/// dense_nvfp4_entry dense_plain_entry grouped_dual_entry grouped_plain_entry
/// grouped_dual_nvfp4_entry;`.
macro_rules! tiled_entries {
    ($callback:ident) => {
        $callback! {
            64 nvfp4_dual_gemm_sm100_n64 nvfp4_dual_gemm_nvfp4_sm100_n64 nvfp4_gemm_sm100_n64
                nvfp4_grouped_dual_gemm_sm100_n64 nvfp4_grouped_gemm_sm100_n64
                nvfp4_grouped_dual_gemm_nvfp4_sm100_n64;
            128 nvfp4_dual_gemm_sm100_n128 nvfp4_dual_gemm_nvfp4_sm100_n128 nvfp4_gemm_sm100_n128
                nvfp4_grouped_dual_gemm_sm100_n128 nvfp4_grouped_gemm_sm100_n128
                nvfp4_grouped_dual_gemm_nvfp4_sm100_n128;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use tiled_entries;

/// The preparation pass of the grouped kernels (`sm100::grouped`).
macro_rules! grouped_prepare_entry {
    ($callback:ident) => {
        $callback! { nvfp4_grouped_prepare_sm100 }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use grouped_prepare_entry;

/// One tile width and its kernels. Every tiled entry runs [`THREADS`] threads with
/// `.minnctapersm 1`: one CTA per SM owns all TMEM columns.
#[derive(Clone, Copy, Debug)]
pub struct TiledEntries {
    /// The tile.
    pub tile: Tile,
    /// The dense dual GEMM.
    pub dense: Kernel<DualGemmArgs>,
    /// The dense dual GEMM writing NVFP4 (`DualGemmArgs::out_scales`).
    pub dense_nvfp4: Kernel<DualGemmArgs>,
    /// The dense GEMM (B in `b1`; [`Tile::outputs`] per tile).
    pub dense_plain: Kernel<DualGemmArgs>,
    /// The grouped dual GEMM.
    pub grouped_gated: Kernel<GroupedArgs>,
    /// The grouped GEMM.
    pub grouped_plain: Kernel<GroupedArgs>,
    /// The grouped dual GEMM writing NVFP4 (`GroupDesc::out_scales`).
    pub grouped_gated_nvfp4: Kernel<GroupedArgs>,
}

macro_rules! tiled_table {
    ($($n:literal $dense:ident $dense_nvfp4:ident $dense_plain:ident $gated:ident $plain:ident
        $gated_nvfp4:ident;)*) => {
        /// Every tiled entry, narrowest tile first (`tiled_entries!`).
        pub const TILED: [TiledEntries; [$($n),*].len()] = [$(
            TiledEntries {
                tile: Tile { n: $n },
                dense: Kernel::new(stringify!($dense), THREADS, Some(1)),
                dense_nvfp4: Kernel::new(stringify!($dense_nvfp4), THREADS, Some(1)),
                dense_plain: Kernel::new(stringify!($dense_plain), THREADS, Some(1)),
                grouped_gated: Kernel::new(stringify!($gated), THREADS, Some(1)),
                grouped_plain: Kernel::new(stringify!($plain), THREADS, Some(1)),
                grouped_gated_nvfp4: Kernel::new(stringify!($gated_nvfp4), THREADS, Some(1)),
            },
        )*];
    };
}
tiled_entries!(tiled_table);

macro_rules! single_kernel {
    ($name:ident) => {
        stringify!($name)
    };
}

/// The preparation pass of the grouped kernels (one warp).
pub const GROUPED_PREPARE: Kernel<GroupedPrepareArgs> =
    Kernel::new(grouped_prepare_entry!(single_kernel), 32, None);

const fn tiles() -> [Tile; TILED.len()] {
    let mut out = [Tile { n: 0 }; TILED.len()];
    let mut i = 0;
    while i < TILED.len() {
        out[i] = TILED[i].tile;
        i += 1;
    }
    out
}

/// The tile shapes the module is built for, narrowest first.
pub const TILES: [Tile; TILED.len()] = tiles();

/// The narrowest tile (the grouped kernels' default).
pub const NARROW_TILE: Tile = TILES[0];

/// The widest tile.
pub const WIDE_TILE: Tile = TILES[TILES.len() - 1];

const _: () = {
    assert!(TILES.len() == 2, "the tile choice below picks between two tiles");
    let mut i = 0;
    while i < TILES.len() {
        check_tile(TILES[i]);
        assert!(
            i == 0 || TILES[i - 1].n < TILES[i].n,
            "tiles narrowest first, each once"
        );
        i += 1;
    }
};

/// The dense dual GEMM's (`gated`) or GEMM's tile for M tokens and N outputs: the wide one
/// above 256 tokens when N is a multiple of its outputs ([`Tile::outputs`]: a plain tile's up
/// half must not run past N's padded scale rows), else the narrow one.
pub const fn tile_for_shape(m: u32, n: u32, gated: bool) -> Tile {
    if m > 256 && n.is_multiple_of(WIDE_TILE.outputs(gated)) {
        WIDE_TILE
    } else {
        NARROW_TILE
    }
}

/// The registry entry of `tile`, if the module has that tile.
pub const fn tiled(tile: Tile) -> Option<&'static TiledEntries> {
    let mut i = 0;
    while i < TILED.len() {
        if TILED[i].tile.n == tile.n {
            return Some(&TILED[i]);
        }
        i += 1;
    }
    None
}

const fn entry_points() -> [EntryPoint; 6 * TILED.len() + 1] {
    let mut out = [GROUPED_PREPARE.entry; 6 * TILED.len() + 1];
    let mut i = 0;
    while i < TILED.len() {
        out[i] = TILED[i].dense.entry;
        out[TILED.len() + i] = TILED[i].grouped_gated.entry;
        out[2 * TILED.len() + i] = TILED[i].grouped_plain.entry;
        out[3 * TILED.len() + i] = TILED[i].dense_nvfp4.entry;
        out[4 * TILED.len() + i] = TILED[i].dense_plain.entry;
        out[5 * TILED.len() + i] = TILED[i].grouped_gated_nvfp4.entry;
        i += 1;
    }
    out
}

/// Every entry point of the sm_100f module but the common ones (`crate::registry`).
pub const ENTRY_POINTS: [EntryPoint; 6 * TILED.len() + 1] = entry_points();
