//! The dual GEMM's sm_100f planning (never run: no B200 here): tile and grid.

use nvfp4_kernel::schedule::TileGrid;
use nvfp4_kernel::sm90::config::TILE_N;
use nvfp4_kernel::sm100::config as sm100;
use nvfp4_kernel::sm100::registry as sm100_registry;

use crate::error::{Error, Result};
use crate::problem::DualGemmShape;
use crate::rules::{KERNEL_INDEX_LIMIT, check_gemm_shape};

/// Launch geometry of the sm_100f kernel for one shape (pure; no GPU needed). Not run on
/// hardware (no B200 here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sm100Geometry {
    /// Tile shape: MMAs of 128 tokens × 64 up to M = 256, × 128 above (when N allows);
    /// [`sm100::Tile::outputs`] per tile.
    pub tile: sm100::Tile,
    /// Output tiles.
    pub tiles: TileGrid,
    /// Persistent CTAs: `min(tiles, multiprocessors)`.
    pub grid: u32,
}

impl Sm100Geometry {
    /// The dual GEMM's geometry: [`Sm100Geometry::for_op`], gated.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        Self::for_op(shape, multiprocessors, true)
    }

    /// Checks `shape` against the sm_100f kernel's rules (the same as sm_90a's: any M ≥ 1, N a
    /// multiple of 64, K of 64) and picks the tile and grid of the dual GEMM (`gated`) or the
    /// GEMM, whose tiles hold twice the outputs (its gate and up MMAs on two halves).
    pub fn for_op(shape: DualGemmShape, multiprocessors: u32, gated: bool) -> Result<Self> {
        const _: () = assert!(
            sm100_registry::NARROW_TILE.n == TILE_N,
            "N's rule is a multiple of the narrowest tile on both architectures"
        );
        let (m, n, k) = check_gemm_shape(shape)?;
        if multiprocessors == 0 {
            return Err(Error::invalid("multiprocessors", "must be at least 1", 0));
        }
        let tile = sm100_registry::tile_for_shape(m, n, gated);
        let too_large = || {
            Error::invalid(
                "m × n × k",
                "too large for one launch",
                format!("{m} × {n} × {k}"),
            )
        };
        let tiles = TileGrid::new(m, n, sm100::TILE_M, tile.outputs(gated)).ok_or_else(too_large)?;
        // The persistent loop counts tiles × K-stages in 32 bits.
        if tiles.len() as u64 * k.div_ceil(sm100::K_PER_STAGE) as u64 > KERNEL_INDEX_LIMIT {
            return Err(too_large());
        }
        Ok(Self {
            tile,
            tiles,
            grid: tiles.len().clamp(1, multiprocessors.max(1)),
        })
    }
}
