//! Static persistent tile scheduler: CTA `b` of a grid of `g` takes tiles `b, b + g, b + 2g, …`.
//!
//! Tiles are numbered with the token (M) tile fastest, so CTAs that run at the same time share
//! weight tiles (read from DRAM once, then from L2) and every CTA's tiles cover distinct outputs.

/// The output tiling of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileGrid {
    /// Token tiles along M.
    pub m_tiles: u32,
    /// Weight tiles along N.
    pub n_tiles: u32,
}

impl TileGrid {
    /// Tiles covering `m × n` with `tile_m × tile_n` tiles (M rounded up, N exact).
    pub const fn new(m: u32, n: u32, tile_m: u32, tile_n: u32) -> Self {
        Self {
            m_tiles: m.div_ceil(tile_m),
            n_tiles: n.div_ceil(tile_n),
        }
    }

    /// Number of tiles.
    pub const fn len(&self) -> u32 {
        self.m_tiles * self.n_tiles
    }

    /// True when there is no tile.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(m_tile, n_tile)` of tile `index`.
    #[inline(always)]
    pub const fn coords(&self, index: u32) -> (u32, u32) {
        (index % self.m_tiles, index / self.m_tiles)
    }
}
