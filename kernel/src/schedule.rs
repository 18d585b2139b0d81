//! Work distribution of the persistent GEMM kernels: the output tiling, the stream-K split of
//! all tiles' K-stages over the CTAs, and the order in which CTAs may wait for each other.
//!
//! * [`TileGrid`]: the tiles of one dense problem, token (M) tile fastest, so that CTAs running
//!   at the same time share weight tiles (read from DRAM once, then from L2).
//! * [`TileSpace`]: the *iterations* of a launch (one per tile and K-stage) and the tile each
//!   belongs to. [`UniformTiles`] is a dense problem (every tile has the same stages);
//!   [`GroupedTiles`] is a grouped (MoE) launch, whose groups have their own tile counts and
//!   stage counts, read from a table of [`GroupSchedule`]s that the GPU writes.
//! * [`StreamK`]: an equal share of the iterations for each CTA; a tile whose iterations span
//!   several CTAs is a sequence of [`Segment`]s whose partial sums one of them (the *reducer*)
//!   adds up.
//! * [`virtual_cta`]: which share a CTA takes, by the order in which CTAs *started*, so that a
//!   reducer only ever waits for CTAs that are already running. That makes the waits
//!   deadlock-free whatever the number of SMs actually available to the launch (another kernel
//!   on the GPU, MPS limits, green contexts): see [`StreamK`].
//!
//! Everything here is pure and `const`-friendly: the host plans and tests call the same code the
//! kernels run. Divisions are `checked_div(..)` with a neutral fallback, since a panic path would
//! pull `core`'s panic machinery into the PTX.

/// The output tiling of one dense problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileGrid {
    /// Token tiles along M.
    pub m_tiles: u32,
    /// Weight tiles along N.
    pub n_tiles: u32,
}

impl TileGrid {
    /// Tiles covering `m × n` with `tile_m × tile_n` tiles (both rounded up); `None` when a tile
    /// dimension is zero or the tile count does not fit in a `u32`.
    pub const fn new(m: u32, n: u32, tile_m: u32, tile_n: u32) -> Option<Self> {
        if tile_m == 0 || tile_n == 0 {
            return None;
        }
        let grid = Self {
            m_tiles: m.div_ceil(tile_m),
            n_tiles: n.div_ceil(tile_n),
        };
        match grid.m_tiles.checked_mul(grid.n_tiles) {
            Some(_) => Some(grid),
            None => None,
        }
    }

    /// Number of tiles (fits in a `u32` by construction).
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

/// The tile that holds an iteration, as [`TileSpace::locate`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileSpan {
    /// The tile's first iteration (its identity in the split).
    pub begin: u32,
    /// K-stages of the tile.
    pub stages: u32,
    /// The tile's group (0 for a dense problem).
    pub group: u32,
    /// The tile's index within its group, token tile fastest (see [`TileGrid::coords`]).
    pub local: u32,
}

/// The iterations of a launch (one per tile and K-stage), numbered tile by tile with a tile's
/// stages consecutive, and the tile that owns each.
pub trait TileSpace {
    /// Total iterations.
    fn total(&self) -> u32;
    /// The tile of iteration `i < total()`.
    fn locate(&self, i: u32) -> TileSpan;
}

/// A dense problem: `tiles` tiles of `stages` K-stages each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniformTiles {
    /// Output tiles.
    pub tiles: u32,
    /// K-stages per tile.
    pub stages: u32,
}

impl UniformTiles {
    /// The space of `tiles × stages` iterations; `None` if that does not fit in a `u32`.
    pub const fn new(tiles: u32, stages: u32) -> Option<Self> {
        match tiles.checked_mul(stages) {
            Some(_) => Some(Self { tiles, stages }),
            None => None,
        }
    }
}

impl TileSpace for UniformTiles {
    #[inline(always)]
    fn total(&self) -> u32 {
        self.tiles * self.stages
    }

    #[inline(always)]
    fn locate(&self, i: u32) -> TileSpan {
        let tile = i.checked_div(self.stages).unwrap_or_default();
        TileSpan {
            begin: tile * self.stages,
            stages: self.stages,
            group: 0,
            local: tile,
        }
    }
}

/// One group of a grouped launch, as the kernels read it: where its iterations start and how
/// its tiles are laid out. Written on the GPU by the grouped kernels' preparation pass (the
/// group sizes never travel to the host).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupSchedule {
    /// First iteration of the group: the sum of the iterations of the groups before it.
    pub iteration_begin: u32,
    /// Token tiles of the group (0 for a group without rows: no work, no weight traffic).
    pub m_tiles: u32,
    /// Output tiles of the group.
    pub n_tiles: u32,
    /// K-stages of each of the group's tiles.
    pub stages: u32,
}

impl GroupSchedule {
    /// The record as the schedule table stores it: one 16-byte vector.
    #[inline(always)]
    pub const fn to_words(&self) -> [u32; 4] {
        [self.iteration_begin, self.m_tiles, self.n_tiles, self.stages]
    }

    /// The record from its 16-byte vector ([`Self::to_words`]).
    #[inline(always)]
    pub const fn from_words(words: [u32; 4]) -> Self {
        let [iteration_begin, m_tiles, n_tiles, stages] = words;
        Self {
            iteration_begin,
            m_tiles,
            n_tiles,
            stages,
        }
    }

    /// The group's iterations.
    pub const fn iterations(&self) -> u32 {
        self.m_tiles * self.n_tiles * self.stages
    }
}

/// Read access to the table of [`GroupSchedule`]s (a slice on the host, shared memory on the GPU).
pub trait GroupTable {
    /// Number of groups.
    fn groups(&self) -> u32;
    /// Group `g < groups()`.
    fn group(&self, g: u32) -> GroupSchedule;
    /// Iterations of all groups.
    fn total(&self) -> u32;
}

impl GroupTable for &[GroupSchedule] {
    fn groups(&self) -> u32 {
        self.len() as u32
    }
    fn group(&self, g: u32) -> GroupSchedule {
        self[g as usize]
    }
    fn total(&self) -> u32 {
        self.last().map_or(0, |g| g.iteration_begin + g.iterations())
    }
}

/// Whole tiles of a grouped launch dealt round-robin: a CTA takes tiles `first, first + stride,
/// …` of the launch's tiles (group by group, token tile fastest within a group, as
/// [`GroupedTiles`]) and gets each as `(group, tile within the group)`. The walk visits the
/// groups in order, reading each group's record once however many tiles it holds (groups
/// without tiles are stepped over).
#[derive(Clone, Copy, Debug)]
pub struct GroupTileWalk<T> {
    table: T,
    next: u32,
    stride: u32,
    group: u32,
    group_begin: u32,
    group_tiles: u32,
}

impl<T: GroupTable> GroupTileWalk<T> {
    /// The tiles `first, first + stride, …` of `table`'s groups.
    #[inline(always)]
    pub fn new(table: T, first: u32, stride: u32) -> Self {
        let group_tiles = if table.groups() > 0 {
            let g = table.group(0);
            g.m_tiles * g.n_tiles
        } else {
            0
        };
        Self {
            table,
            next: first,
            stride: stride.max(1),
            group: 0,
            group_begin: 0,
            group_tiles,
        }
    }
}

impl<T: GroupTable> Iterator for GroupTileWalk<T> {
    /// (group, tile within the group).
    type Item = (u32, u32);

    #[inline(always)]
    fn next(&mut self) -> Option<(u32, u32)> {
        loop {
            if self.group >= self.table.groups() {
                return None;
            }
            let local = self.next.wrapping_sub(self.group_begin);
            if local < self.group_tiles {
                self.next = self.next.saturating_add(self.stride);
                return Some((self.group, local));
            }
            self.group_begin += self.group_tiles;
            self.group += 1;
            if self.group < self.table.groups() {
                let g = self.table.group(self.group);
                self.group_tiles = g.m_tiles * g.n_tiles;
            }
        }
    }
}

/// The iterations of a grouped launch: group by group, then tile by tile (token tile fastest
/// within a group), then stage by stage.
#[derive(Clone, Copy, Debug)]
pub struct GroupedTiles<T> {
    /// The groups, with non-decreasing [`GroupSchedule::iteration_begin`]s.
    pub table: T,
}

impl<T: GroupTable> GroupedTiles<T> {
    /// The group holding iteration `i < total`: the last group whose first iteration is at most
    /// `i` (groups without iterations share their successor's start and are never chosen).
    #[inline(always)]
    pub fn group_of(&self, i: u32) -> u32 {
        let (mut low, mut high) = (0, self.table.groups());
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.table.group(middle).iteration_begin <= i {
                low = middle;
            } else {
                high = middle;
            }
        }
        low
    }
}

impl<T: GroupTable> TileSpace for GroupedTiles<T> {
    #[inline(always)]
    fn total(&self) -> u32 {
        self.table.total()
    }

    #[inline(always)]
    fn locate(&self, i: u32) -> TileSpan {
        let group = self.group_of(i);
        let schedule = self.table.group(group);
        let local = (i - schedule.iteration_begin)
            .checked_div(schedule.stages)
            .unwrap_or_default();
        TileSpan {
            begin: schedule.iteration_begin + local * schedule.stages,
            stages: schedule.stages,
            group,
            local,
        }
    }
}

/// Split of a launch's iterations over `ctas` persistent CTAs (in *virtual* CTA order, see
/// [`virtual_cta`]), in two parts.
///
/// **Waves** (data-parallel): when every tile has the same number of stages, the first
/// `waves · ctas` tiles are dealt out whole: in wave `w` virtual CTA `c` computes tile
/// `w · ctas + c` alone. CTAs running at the same time then work on neighbouring tiles (the
/// same tokens, the same group's weights), which L2 serves; contiguous ranges of many tiles per
/// CTA would put every CTA on different data at once (measured on an H100: a 4096-token MoE
/// prefill read each token tile from DRAM once per output tile; on an H200, shares of two to
/// four fitted grouped tiles each were 13–24 % slower than waves: perf log entry 155).
/// [`StreamK::waves_for`] leaves between one and two waves' worth of tiles to the second part.
/// *Serpentine* waves ([`StreamK::serpentine`]) deal odd waves backwards (tile
/// `w · ctas + ctas − 1 − c`), pairing a CTA's early tiles with late ones: that evens out
/// tiles of unequal cost (a grouped launch's groups fitted at different widths) in launches
/// of a few waves; in long ones a CTA's next tile then lies far from the tiles still running,
/// which L2 shares less (perf log entry 156).
///
/// **Stream-K** over the remaining iterations: CTA `c` takes the iterations
/// `[begin(c), begin(c + 1))`, so every CTA gets the same work (±1 stage) whatever the tile
/// count. A tile whose stages span several CTAs is a sequence of *segments*, one per CTA,
/// numbered along K. Segment 0 is the tile's *reducer*: its CTA's range ends inside the tile,
/// so that CTA computes it last. Every other segment is the *first* segment of its CTA's range:
/// it stores its partial sums, publishes them and goes on without waiting; the reducer waits for
/// them, adds them to its own in segment order (a fixed order: results do not depend on timing)
/// and runs the epilogue.
///
/// **No deadlock.** A reducer in virtual CTA `c` waits only for CTAs `c + 1, c + 2, …`, and the
/// kernels give virtual CTA `ctas − 1 − t` to the CTA that started `t`-th ([`virtual_cta`]), so a
/// reducer only ever waits for CTAs that started before it, which are running (or done), which
/// compute their waves' tiles and then the awaited segment first, and never wait before
/// publishing it. By induction on the start order every CTA finishes, however few SMs the
/// launch gets at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamK<S> {
    /// The iterations and their tiles.
    pub space: S,
    /// CTAs that take a share: at least 1 and at most the iterations, so that every share has
    /// at least one stage (see [`working_ctas`]). The space's iterations must stay below 2^31
    /// (the plans' limit): the waves' bookkeeping reaches twice that.
    pub ctas: u32,
    /// Stages of every tile, or 0 for no waves (the tiles' stage counts differ, or the kernel
    /// has no registers to spare for them).
    pub tile_stages: u32,
    /// First iteration of the stream-K part, found once by [`StreamK::new`]: every segment
    /// needs it, and its two divisions (a dependent chain of about a hundred cycles each on
    /// the GPU) were on every CTA's path to its first segment. (The share bounds' quotient and
    /// remainder stay computed where needed: held in registers as well, they spilled the
    /// 256-token and fitted kernels.)
    first: u32,
    /// Whether odd waves are dealt backwards ([`StreamK::serpentine`]).
    serpentine: bool,
}

/// One CTA's share of one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The tile (its first iteration, group and index in the group).
    pub tile: TileSpan,
    /// The segment's first stage within the tile.
    pub first_stage: u32,
    /// Stages in this segment.
    pub stages: u32,
    /// Position among the tile's segments, along K.
    pub index: u32,
    /// Segments of the tile (1: this CTA computes the whole tile).
    pub count: u32,
}

/// The segment of a split tile that adds the others' partial sums (see [`StreamK`]).
pub const REDUCER_SEGMENT: u32 = 0;

impl StreamK<()> {
    /// Whole-tile waves for `tiles` tiles of equal stage counts on `ctas` CTAs: all of them when
    /// the CTAs divide the tiles, else one less than the full waves (none below two), so that
    /// the stream-K part balances between one and two waves of tiles.
    pub const fn waves_for(tiles: u32, ctas: u32) -> u32 {
        match (tiles.checked_div(ctas), tiles.checked_rem(ctas)) {
            (Some(waves), Some(0)) => waves,
            (Some(waves), Some(_)) => waves.saturating_sub(1),
            _ => 0,
        }
    }
}

impl<S: TileSpace> StreamK<S> {
    /// The split of `space` over `ctas` CTAs, with waves when every tile has `tile_stages`
    /// stages (0: they differ).
    #[inline(always)]
    pub fn new(space: S, ctas: u32, tile_stages: u32) -> Self {
        let tiles = space.total().checked_div(tile_stages).unwrap_or(0);
        Self {
            space,
            ctas,
            tile_stages,
            first: StreamK::waves_for(tiles, ctas) * ctas * tile_stages,
            serpentine: false,
        }
    }

    /// The same split with its waves in serpentine order when `serpentine` (see [`StreamK`]).
    #[inline(always)]
    pub fn serpentine(self, serpentine: bool) -> Self {
        Self { serpentine, ..self }
    }

    /// Whole-tile waves before the stream-K part ([`StreamK::waves_for`]).
    #[inline(always)]
    pub fn waves(&self) -> u32 {
        self.first.checked_div(self.ctas * self.tile_stages).unwrap_or(0)
    }

    /// First iteration of the stream-K part (after the waves' tiles).
    #[inline(always)]
    pub fn stream_k_begin(&self) -> u32 {
        self.first
    }

    /// Total iterations.
    #[inline(always)]
    pub fn total(&self) -> u32 {
        self.space.total()
    }

    /// First iteration of virtual CTA `cta`'s stream-K range (`begin(ctas) = total`):
    /// `first + ⌊cta · (total − first) / ctas⌋`, computed in 32 bits as
    /// `cta · q + ⌊cta · r / ctas⌋` with `q, r` the quotient and remainder of the stream-K
    /// iterations by the CTAs (a 64-bit division is a slow subroutine call on the GPU).
    #[inline(always)]
    pub fn begin(&self, cta: u32) -> u32 {
        let first = self.first;
        let iterations = self.total() - first;
        let (Some(q), Some(r)) = (
            iterations.checked_div(self.ctas),
            iterations.checked_rem(self.ctas),
        ) else {
            return first;
        };
        let share = match cta.checked_mul(r) {
            Some(cr) => cr / self.ctas,
            None => (cta as u64 * r as u64 / self.ctas as u64) as u32,
        };
        first + cta * q + share
    }

    /// The virtual CTA whose stream-K range holds iteration `i`: the largest `c` with
    /// `begin(c) ≤ i`, that is `ceil((i − first + 1) · ctas / (total − first)) − 1`.
    #[inline(always)]
    pub fn cta_of(&self, i: u32) -> u32 {
        let first = self.stream_k_begin();
        let total = (self.total() - first) as u64;
        match (((i - first) as u64 + 1) * self.ctas as u64 + total - 1).checked_div(total) {
            Some(c) => c as u32 - 1,
            None => 0,
        }
    }

    /// The segment that starts at iteration `i` of virtual CTA `cta`'s stream-K range, which
    /// ends at `end`. Only a segment that straddles the range's start or end needs
    /// [`Self::cta_of`] (a division): a CTA's other segments are whole tiles of its own.
    #[inline(always)]
    pub fn segment(&self, cta: u32, i: u32, end: u32) -> Segment {
        let tile = self.space.locate(i);
        let tile_end = tile.begin + tile.stages;
        let stop = if end < tile_end { end } else { tile_end };
        // A segment that starts at its tile's start lies in this CTA's range from there.
        let first_cta = if i == tile.begin {
            cta
        } else {
            self.cta_of(tile.begin)
        };
        let last_cta = if tile_end <= end {
            cta
        } else {
            self.cta_of(tile_end - 1)
        };
        Segment {
            tile,
            first_stage: i - tile.begin,
            stages: stop - i,
            index: cta - first_cta,
            count: last_cta - first_cta + 1,
        }
    }

    /// The segments of virtual CTA `cta`: its waves' whole tiles, then its stream-K range, in
    /// order (none for `cta ≥ ctas`: a CTA without a share).
    pub fn segments(&self, cta: u32) -> Segments<'_, S> {
        let (next, end) = match (cta < self.ctas, self.stream_k_begin() > 0) {
            (true, true) => (cta * self.tile_stages, self.begin(cta + 1)),
            (true, false) => (self.begin(cta), self.begin(cta + 1)),
            (false, _) => (self.total(), self.total()),
        };
        Segments {
            split: self,
            cta,
            next,
            end,
            stride: if self.serpentine {
                (2 * self.ctas.saturating_sub(cta)).saturating_sub(1) * self.tile_stages
            } else {
                self.ctas * self.tile_stages
            },
        }
    }

    /// Partial-sum slot of segment `index` of the tile that starts at iteration `tile_begin`:
    /// virtual CTA `c` owns slots `2c` (the segment that holds its first iteration) and
    /// `2c + 1` (its last segment, when that is another tile).
    #[inline(always)]
    pub fn partial_slot(&self, tile_begin: u32, index: u32) -> u32 {
        let cta = self.cta_of(tile_begin) + index;
        let first_tile_of_cta = self.space.locate(self.begin(cta)).begin;
        2 * cta + if first_tile_of_cta == tile_begin { 0 } else { 1 }
    }
}

/// Iterator over one CTA's segments ([`StreamK::segments`]).
#[derive(Clone, Copy, Debug)]
pub struct Segments<'a, S> {
    split: &'a StreamK<S>,
    /// The virtual CTA.
    cta: u32,
    /// The next segment's first iteration: a wave's tile while below
    /// [`StreamK::stream_k_begin`], then inside the CTA's stream-K range.
    next: u32,
    /// The end of the CTA's stream-K range.
    end: u32,
    /// Iterations from the CTA's wave tile to its next one: `ctas` tiles, or in serpentine
    /// order `2 · (ctas − c) − 1` and `2c + 1` tiles in turn (see [`StreamK`]).
    stride: u32,
}

impl<S: TileSpace> Iterator for Segments<'_, S> {
    type Item = Segment;

    #[inline(always)]
    fn next(&mut self) -> Option<Segment> {
        let split = self.split;
        let waves_end = split.stream_k_begin();
        if self.next < waves_end {
            let stages = split.tile_stages;
            let tile = split.space.locate(self.next);
            self.next += self.stride;
            if split.serpentine {
                self.stride = 2 * split.ctas * stages - self.stride;
            }
            if self.next >= waves_end {
                self.next = split.begin(self.cta);
            }
            return Some(Segment {
                tile,
                first_stage: 0,
                stages,
                index: REDUCER_SEGMENT,
                count: 1,
            });
        }
        if self.next >= self.end {
            return None;
        }
        let segment = self.split.segment(self.cta, self.next, self.end);
        self.next += if segment.stages > 0 { segment.stages } else { 1 };
        Some(segment)
    }
}

/// The virtual CTA (see [`StreamK`]) of the CTA that started `started`-th (`0..ctas`) in a
/// launch of `ctas` working CTAs, or `None` for CTAs beyond them (they have no share). Late
/// starters take the *first* shares: a reducer's partners then hold later shares, and so
/// started earlier.
#[inline(always)]
pub const fn virtual_cta(started: u32, ctas: u32) -> Option<u32> {
    if started < ctas {
        Some(ctas - 1 - started)
    } else {
        None
    }
}

/// Where a CTA is in a launch, from the launch *ticket* it took when it started: every launch of
/// a plan takes exactly `grid` consecutive tickets from one 64-bit counter (never reset), so the
/// ticket gives both the CTA's start position and the launch's *epoch*.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// Start position of the CTA within its launch, `0..grid`.
    pub started: u32,
    /// The launch's epoch, never 0: what a segment writes next to its published partial sums,
    /// so that a value left behind by an earlier launch (finished or aborted) is never mistaken
    /// for this launch's.
    pub epoch: u32,
}

impl Ticket {
    /// The position and epoch of `ticket` in launches of `grid` CTAs (`grid ≥ 1`).
    #[inline(always)]
    pub const fn new(ticket: u64, grid: u32) -> Self {
        let grid = if grid == 0 { 1 } else { grid as u64 };
        Self {
            started: (ticket % grid) as u32,
            // Wraps after 2^32 launches; 0 is skipped so that zeroed flags never match.
            epoch: ((ticket / grid) as u32 % u32::MAX) + 1,
        }
    }
}

/// CTAs for whole tiles per CTA (data-parallel, no fix-up) when full waves of `tiles` tiles keep
/// at least 90 % of `grid` CTAs busy and an equal number of tiles each divides them: splitting
/// tiles costs a fix-up and a pipeline restart per segment (measured on an H100: 66.7 → 73.2 µs
/// at 128 tiles on 132 SMs), while 192 tiles gained 127 → 102 µs from stream-K. `None`:
/// stream-K is better.
pub const fn data_parallel_ctas(tiles: u32, grid: u32) -> Option<u32> {
    if tiles == 0 || grid == 0 {
        return None;
    }
    let waves = tiles.div_ceil(grid);
    let data_parallel = match (tiles.checked_add(waves - 1), waves) {
        (Some(t), 1..) => t / waves,
        _ => return None,
    };
    // tiles / (waves · grid) ≥ 0.9, in integers.
    let full_enough = 10 * tiles as u64 >= 9 * waves as u64 * grid as u64;
    match tiles.checked_rem(data_parallel) {
        Some(0) if full_enough => Some(data_parallel),
        _ => None,
    }
}

/// CTAs that a launch of `grid` CTAs gives shares to, for `tiles` tiles of `stages` stages each
/// (`stages = 0`: the tiles' stage counts differ, and whole tiles would be unequal shares) and
/// `iterations` iterations in all: [`data_parallel_ctas`] when it applies, else a stream-K split
/// over all of them — but never more CTAs than iterations, so that every working CTA has at
/// least one stage (a [`StreamK`] invariant: an empty share would leave a gap in a tile's
/// segment numbering).
pub const fn working_ctas(tiles: u32, stages: u32, iterations: u32, grid: u32) -> u32 {
    let ctas = if grid == 0 {
        1
    } else if stages == 0 {
        grid
    } else {
        match data_parallel_ctas(tiles, grid) {
            Some(ctas) => ctas,
            None => grid,
        }
    };
    if ctas > iterations && iterations > 0 {
        iterations
    } else {
        ctas
    }
}

/// Grouped launches of at most this many tiles a CTA deal their waves in serpentine order
/// ([`StreamK::serpentine`]): a few waves, whose CTAs would otherwise take tiles at the same
/// place in every wave (perf log entry 156: gpumode-2, four waves of fitted tiles, −3 %),
/// while the long prefills lost 0.5–0.7 % to it.
pub const SERPENTINE_MAX_TILES_PER_CTA: u32 = 8;
