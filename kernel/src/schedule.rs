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

    /// `(m_tile, n_tile)` of tile `index` (`(0, 0)` for an empty grid: no panic path on the GPU).
    #[inline(always)]
    pub const fn coords(&self, index: u32) -> (u32, u32) {
        match (index.checked_rem(self.m_tiles), index.checked_div(self.m_tiles)) {
            (Some(m), Some(n)) => (m, n),
            _ => (0, 0),
        }
    }
}

/// Stream-K split of `tiles × stages` K-stages over `ctas` persistent CTAs: CTA `c` takes the
/// iterations `[begin(c), begin(c + 1))`, so every CTA gets the same work (±1 stage) whatever
/// the tile count. A tile whose stages span several CTAs is a sequence of *segments*, one per
/// CTA, numbered along K. Segment 0 is the tile's *reducer*: a CTA's range ends inside such a
/// tile, so its CTA computes segment 0 last. Every other segment stores its partial sums and
/// counts itself done; the reducer waits for that count, adds the partial sums to its own in
/// segment order (a fixed order: results do not depend on timing) and runs the epilogue. A CTA
/// waits only after its last segment, and only for segments that other CTAs compute without
/// waiting, so the waits cannot deadlock while all CTAs are resident.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamK {
    /// Output tiles.
    pub tiles: u32,
    /// K-stages per tile.
    pub stages: u32,
    /// CTAs of the launch (at most `tiles × stages`).
    pub ctas: u32,
}

/// One CTA's share of one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The tile.
    pub tile: u32,
    /// Its first stage.
    pub first_stage: u32,
    /// Stages in this segment.
    pub stages: u32,
    /// Position among the tile's segments, along K.
    pub index: u32,
    /// Segments of the tile (1: this CTA computes the whole tile).
    pub count: u32,
}

impl StreamK {
    /// Total iterations (stages over all tiles).
    pub const fn total(&self) -> u32 {
        self.tiles * self.stages
    }

    // Divisions below are `checked_div(..).unwrap_or(0)`: a zero divisor only comes with an
    // empty launch, and a panic path would pull `core`'s panic machinery into the PTX.

    /// First iteration of CTA `cta` (`begin(ctas) = total`).
    #[inline(always)]
    pub const fn begin(&self, cta: u32) -> u32 {
        match (cta as u64 * self.total() as u64).checked_div(self.ctas as u64) {
            Some(b) => b as u32,
            None => 0,
        }
    }

    /// The CTA whose range holds iteration `i`: the largest `c` with `begin(c) ≤ i`, that is
    /// `ceil((i + 1) · ctas / total) − 1`.
    #[inline(always)]
    pub const fn cta_of(&self, i: u32) -> u32 {
        let total = self.total() as u64;
        match ((i as u64 + 1) * self.ctas as u64 + total - 1).checked_div(total) {
            Some(c) => c as u32 - 1,
            None => 0,
        }
    }

    /// The segment that starts at iteration `i` of a CTA whose range ends at `end`.
    #[inline(always)]
    pub const fn segment(&self, i: u32, end: u32) -> Segment {
        let tile = match i.checked_div(self.stages) {
            Some(t) => t,
            None => 0,
        };
        let tile_begin = tile * self.stages;
        let tile_end = tile_begin + self.stages;
        let stop = if end < tile_end { end } else { tile_end };
        let first_cta = self.cta_of(tile_begin);
        Segment {
            tile,
            first_stage: i - tile_begin,
            stages: stop - i,
            index: self.cta_of(i) - first_cta,
            count: self.cta_of(tile_end - 1) - first_cta + 1,
        }
    }

    /// The segments of CTA `cta`'s range, in order.
    pub const fn segments(&self, cta: u32) -> Segments {
        Segments {
            split: *self,
            next: self.begin(cta),
            end: self.begin(cta + 1),
        }
    }

    /// Partial-sum slot of segment `index` of `tile`: CTA `c` owns slots `2c` (the segment that
    /// holds its first iteration) and `2c + 1` (its last segment, when that is another tile).
    #[inline(always)]
    pub const fn partial_slot(&self, tile: u32, index: u32) -> u32 {
        let cta = self.cta_of(tile * self.stages) + index;
        let first_tile_of_cta = match self.begin(cta).checked_div(self.stages) {
            Some(t) => t,
            None => 0,
        };
        2 * cta + if first_tile_of_cta == tile { 0 } else { 1 }
    }
}

/// Iterator over one CTA's segments ([`StreamK::segments`]).
#[derive(Clone, Copy, Debug)]
pub struct Segments {
    split: StreamK,
    next: u32,
    end: u32,
}

impl Iterator for Segments {
    type Item = Segment;

    #[inline(always)]
    fn next(&mut self) -> Option<Segment> {
        if self.next >= self.end {
            return None;
        }
        let segment = self.split.segment(self.next, self.end);
        self.next += segment.stages.max(1);
        Some(segment)
    }
}
