//! The dual GEMM's sm_90a planning: the tiled kernel's geometry and its cost model (tile,
//! stream-K split, grid), the decode-size kernel's K split or whole-K block, and the token
//! pre-decoding step.

use nvfp4_kernel::launch::TensorMap;
use nvfp4_kernel::schedule::{REDUCER_SEGMENT, StreamK, TileGrid, UniformTiles};
use nvfp4_kernel::sm90::config::{
    self as sm90, DECODE_GROUP_N, DECODE_MAX_STEPS_PER_SPLIT, DECODE_ROWS_PER_WARP, DECODE_WHOLE_K_MAX_WARPS,
    DECODE_WHOLE_K_SMALL_WARPS, K_PER_SLICE, K_PER_STAGE, SLICES_PER_STAGE, Tile, decode_steps,
    decode_token_tiles, padded_k, tile_n,
};
use nvfp4_kernel::sm90::registry as sm90_registry;

use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{DecodeForm, Gpu, NvFp4Ref};
use crate::problem::DualGemmShape;
use crate::rules::{KERNEL_INDEX_LIMIT, check_gemm_shape};

use super::DensePlan;

/// Launch geometry of the sm_90a kernel for one shape (pure; no GPU needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sm90Geometry {
    /// Token tile (wgmma N).
    pub tile: Tile,
    /// Output tiles.
    pub tiles: TileGrid,
    /// Persistent CTAs ([`grid_size`]); each takes an equal share of all tiles' K-stages, whole
    /// tiles when the grid divides them.
    pub grid: u32,
    /// The stream-K split of tiles × K-stages over the grid.
    pub split: StreamK<UniformTiles>,
    /// Dynamic shared memory per CTA.
    pub shared_bytes: u32,
}

impl Sm90Geometry {
    /// Checks `shape` against the sm_90a kernel's rules (any M ≥ 1, N a multiple of 64, K a
    /// multiple of 64, every size within the kernel's 32-bit indices) and picks tile and grid for
    /// a GPU with `multiprocessors` SMs.
    pub fn new(shape: DualGemmShape, multiprocessors: u32) -> Result<Self> {
        Self::for_op(shape, multiprocessors, true)
    }

    /// [`Self::new`] for the dense dual GEMM (`gated`) or plain GEMM, whose tiles hold
    /// [`tile_n`] outputs.
    pub fn for_op(shape: DualGemmShape, multiprocessors: u32, gated: bool) -> Result<Self> {
        let DualGemmShape { m, n, k } = shape;
        let (m32, n32, k32) = check_gemm_shape(shape)?;
        if multiprocessors == 0 {
            return Err(Error::invalid("multiprocessors", "must be at least 1", 0));
        }
        let too_large = |what: &'static str, rule: &str| {
            Error::invalid(
                what,
                format!("too large for one launch ({rule})"),
                format!("{m} × {n} × {k}"),
            )
        };
        // C (M × N fp16) and, for pre-decoded tiles, the M × padded K token buffer are indexed in
        // 64 bits; the kernels' 32-bit counts are tiles, iterations and token items.
        let stages = k32.div_ceil(K_PER_STAGE);
        let mut best: Option<(u64, Self)> = None;
        let narrow = sm90_registry::covering_tile_for(m32);
        // Beside the narrowest tile that covers M (else the 128-token one): the 256-token tile
        // where M needs more than one, and the 64-token tile beside a 128-token one (twice the
        // tiles, each slice half the tensor work: whole tiles where there are few).
        let half = Tile { tokens: 64 };
        let mut candidates = vec![narrow];
        if m32 > narrow.tokens {
            candidates.push(sm90_registry::WIDEST_TILE);
        }
        if narrow.tokens > half.tokens {
            candidates.push(half);
        }
        for tile in candidates {
            let wide = tile == sm90_registry::WIDEST_TILE;
            let tiles = TileGrid::new(m32, n32, tile.tokens, tile_n(gated))
                .ok_or_else(|| too_large("m × n", "more than 2^32 tiles"))?;
            let space = UniformTiles::new(tiles.len(), stages)
                .filter(|s| (s.tiles as u64) * (s.stages as u64) <= KERNEL_INDEX_LIMIT)
                .ok_or_else(|| too_large("m × n × k", "tiles × K-stages ≥ 2^31"))?;
            // Wide tiles split by stream-K, against the model, which weighs them like narrow
            // ones (perf log entries 29 and 72): slower where a CTA's share is less than two
            // tiles (256×4096×7168 1.05×, 256×4096×14336 plain 1.10×) or where whole tiles fill
            // 3/4 of the SMs (448 tiles as 4 on each of 112 CTAs: 1.03–1.06×), faster where
            // they fill fewer (256×18432×7168 0.93×: 288 tiles, whole only as 3 on each of 96
            // CTAs; plain 1024×18432×7168 0.87×). Whole wide tiles unless both hold.
            let split_wide = tiles.len() as u64 >= 2 * multiprocessors as u64
                && !fills_most_sms_whole(tiles.len(), multiprocessors);
            let (cost, grid) = schedule(tile, tiles.len(), stages, multiprocessors, !wide || split_wide)?;
            let geometry = Self {
                tile,
                tiles,
                grid,
                split: StreamK::new(space, grid, 0),
                shared_bytes: tile.shared().total,
            };
            if best.as_ref().is_none_or(|(fastest, _)| cost < *fastest) {
                best = Some((cost, geometry));
            }
        }
        // Every candidate has a schedule, so `best` is set (or an error returned above).
        let Some((_, geometry)) = best else {
            return Err(too_large("m × n", "no tile"));
        };
        if geometry.tile.predecoded_tokens()
            && (m as u64) * (padded_k(k32) / K_PER_SLICE) as u64 > KERNEL_INDEX_LIMIT
        {
            return Err(too_large("m × k", "m × k / 64 ≥ 2^31 token slices"));
        }
        Ok(geometry)
    }

    /// u32 words of the stream-K partial-sum workspace: two slots per CTA.
    pub fn workspace_words(&self) -> usize {
        2 * self.grid as usize * sm90::partial_slot_bytes(self.tile) as usize / 4
    }

    /// Publication flags: one per partial-sum slot.
    pub fn flag_words(&self) -> usize {
        2 * self.grid as usize
    }
}

/// Whether `tiles` whole tiles divide evenly over a grid of at least 3/4 of `multiprocessors`
/// CTAs (and at most all of them).
fn fills_most_sms_whole(tiles: u32, multiprocessors: u32) -> bool {
    let fewest = (multiprocessors - multiprocessors / 4).max(1);
    (fewest..=multiprocessors).any(|ctas| tiles.is_multiple_of(ctas))
}

/// Most multiprocessors a plan is made for (GPUs have at most a few hundred; the stream-K cost
/// search is quadratic in this).
pub const MAX_MULTIPROCESSORS: u32 = 1024;

/// Clocks a CTA spends per 64-K slice beyond its tensor work. Fitted to H100 runs: per-CTA
/// timelines (perf log entry 57) put a 64-token stage at 0.71 of a 128-token one (1.09 against
/// 1.53 µs), which 360 matches; the 256-token tile's slice is then 1.58 times the 128-token
/// one (entry 29 measured 1.65 with whole tiles at 512×4096×7168).
const SLICE_OVERHEAD_CLOCKS: u32 = 360;

/// Estimated clocks of one 64-K slice of `tile`: the tensor work (2 consumer warpgroups × 64
/// rows × T tokens × 64 K at 2048 fp16 FMA per clock, = 4·T) and [`SLICE_OVERHEAD_CLOCKS`].
fn slice_clocks(tile: Tile) -> u32 {
    4 * tile.tokens + SLICE_OVERHEAD_CLOCKS
}

/// What a tile's end costs its CTAs besides the stages, in clocks, fitted to per-CTA timelines
/// of the tiled kernels on an H100 (each role's `%globaltimer` at a segment's end; perf log
/// entry 57): a CTA whose segment ends a split tile elsewhere *publishes* its partial sums
/// (stores, release, flag: ≈ 1.5 µs for 32 KiB, 2 µs for 64 KiB), the reducer waits for that,
/// polls the flags and reads each other segment's partial sums (≈ 1.3 µs per 64 KiB), and the
/// CTA that finishes a tile writes it (≈ 0.5 µs per 64 KiB of accumulators, all CTAs at once).
/// Per 32 KiB of a partial-sum slot (`partial_slot_bytes`) where a cost grows with it.
struct TileEndCosts;

impl TileEndCosts {
    /// Publishing partial sums: stores, the release fence, the flag.
    const PUBLISH: u64 = 1800;
    /// … and per 32 KiB of them.
    const PUBLISH_PER_32_KIB: u64 = 900;
    /// The reducer's poll of the flags (one round trip for all: the first warp polls them all).
    const POLL: u64 = 900;
    /// Reading and adding one other segment's partial sums, per 32 KiB.
    const REDUCE_PER_32_KIB: u64 = 1170;
    /// The epilogue of a finished tile, per 32 KiB of accumulators.
    const EPILOGUE_PER_32_KIB: u64 = 450;

    /// Clocks of `per_32_kib` for the partial sums of `tile`.
    fn scaled(per_32_kib: u64, tile: Tile) -> u64 {
        per_32_kib * sm90::partial_slot_bytes(tile) as u64 / 32768
    }

    /// A segment's end: publishing, reducing `count − 1` partial sums, or nothing (a whole tile);
    /// and the epilogue when the segment finishes its tile.
    fn segment(tile: Tile, index: u32, count: u32) -> u64 {
        let publish = Self::PUBLISH + Self::scaled(Self::PUBLISH_PER_32_KIB, tile);
        let epilogue = Self::scaled(Self::EPILOGUE_PER_32_KIB, tile);
        match (count, index) {
            (1, _) => epilogue,
            (_, REDUCER_SEGMENT) => {
                publish
                    + Self::POLL
                    + (count - 1) as u64 * Self::scaled(Self::REDUCE_PER_32_KIB, tile)
                    + epilogue
            }
            _ => publish,
        }
    }
}

/// Modelled clocks of the slowest CTA of `split` for `tile`: its stages at [`slice_clocks`]
/// and its segments' ends ([`TileEndCosts`]).
fn schedule_clocks(split: &StreamK<UniformTiles>, tile: Tile) -> u64 {
    let stage = (SLICES_PER_STAGE * slice_clocks(tile)) as u64;
    (0..split.ctas)
        .map(|cta| {
            split
                .segments(cta)
                .map(|s| s.stages as u64 * stage + TileEndCosts::segment(tile, s.index, s.count))
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

/// CTAs for `tiles × stages` work of `tile` on `multiprocessors` SMs: full waves of whole tiles
/// per CTA when they keep at least 90 % of the SMs busy
/// ([`nvfp4_kernel::schedule::data_parallel_ctas`]); otherwise the cheapest, by modelled clocks
/// (the slowest CTA's stages and tile ends, fitted to H100 timelines), of whole tiles on any
/// grid that divides them (up to one CTA a SM) and an equal stream-K share each for any number
/// of CTAs from 7/8 of the SMs to all of them (the most CTAs among equals). At 128×7168×2048 with
/// 64-token tiles that is 112 whole tiles; at 128×4096×7168 with 128-token tiles, four segments
/// a tile on 128 CTAs; at 4096×18432×7168 with 256-token tiles, 36 on each of 128 CTAs. Zero
/// tiles, stages or SMs, more than [`MAX_MULTIPROCESSORS`] SMs, or more than 2^31 iterations,
/// are errors.
pub fn grid_size(tile: Tile, tiles: u32, stages: u32, multiprocessors: u32) -> Result<u32> {
    Ok(schedule(tile, tiles, stages, multiprocessors, true)?.1)
}

/// [`grid_size`] with its modelled clocks (`schedule_clocks`); only whole tiles per CTA unless
/// `stream_k` (whole tiles on one CTA always divide, so there is always a schedule).
fn schedule(tile: Tile, tiles: u32, stages: u32, multiprocessors: u32, stream_k: bool) -> Result<(u64, u32)> {
    for (arg, value) in [
        ("tiles", tiles),
        ("stages", stages),
        ("multiprocessors", multiprocessors),
    ] {
        if value == 0 {
            return Err(Error::invalid(arg, "must be at least 1", value));
        }
    }
    if multiprocessors > MAX_MULTIPROCESSORS {
        return Err(Error::invalid(
            "multiprocessors",
            format!("must be at most {MAX_MULTIPROCESSORS}"),
            multiprocessors,
        ));
    }
    let total = tiles as u64 * stages as u64;
    if total > KERNEL_INDEX_LIMIT {
        return Err(Error::invalid(
            "tiles × stages",
            format!("must be at most {KERNEL_INDEX_LIMIT}"),
            total,
        ));
    }
    let space = UniformTiles { tiles, stages };
    let cost = |ctas: u32| schedule_clocks(&StreamK::new(space, ctas, 0), tile);
    // Full waves of whole tiles are taken as they are (measured: 128 tiles on 132 SMs 66.7 µs,
    // split over 132 CTAs 73.2 µs); fewer tiles than SMs are weighed against stream-K.
    if let Some(ctas) = nvfp4_kernel::schedule::data_parallel_ctas(tiles, multiprocessors) {
        return Ok((cost(ctas), ctas));
    }
    // Whole tiles on any grid that divides them (the kernel runs those data-parallel): one wave
    // of fewer tiles than SMs, or e.g. 4608 256-token tiles as 36 on each of 128 CTAs, which
    // `data_parallel_ctas` (the fewest CTAs of the fewest waves: 132 here) does not offer.
    let whole_tiles = (1..=tiles.min(multiprocessors))
        .filter(|ctas| tiles.is_multiple_of(*ctas))
        .map(|ctas| (cost(ctas), ctas));
    let most = (total as u32).min(multiprocessors);
    let fewest = (most - most / 8).max(1);
    let shares = (fewest..=most)
        .rev()
        .filter(|_| stream_k)
        .map(|ctas| (cost(ctas), ctas));
    let fastest = whole_tiles
        .chain(shares)
        .min_by_key(|&(clocks, ctas)| (clocks, u32::MAX - ctas));
    // One CTA always takes the tiles whole.
    Ok(fastest.unwrap_or((cost(1), 1)))
}

/// The device state and K split of a decode-size Hopper plan.
pub(super) struct DecodeState {
    /// Every CTA's f32 partial sums ([`decode_partial_words`]).
    pub(super) partials: DeviceBuffer<u32>,
    /// One arrival counter per row group, zero between launches (the last CTA resets it).
    pub(super) arrivals: DeviceBuffer<u32>,
    pub(super) split: DecodeSplit,
    /// Whether the launch stages two token tiles through a copy of their packed rows
    /// ([`DecodeSplit::copies_tokens`]).
    pub(super) copied_tokens: bool,
    /// The entries the split launches (wide: two token tiles, `split.group_n` outputs a CTA).
    pub(super) form: DecodeForm,
}

/// The K split of the decode-size kernel (`nvfp4_kernel::sm90::decode`) for one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeSplit {
    /// 128-K steps per split, at most `DECODE_MAX_STEPS_PER_SPLIT`.
    pub steps_per_split: u32,
    /// K splits, none of them empty.
    pub splits: u32,
    /// CTAs: `splits × n / group_n`.
    pub grid: u32,
    /// Outputs a CTA (a row group): `DECODE_GROUP_N`, or the wide entries' (`decode_group_n` of
    /// `DECODE_WIDE_WARPS_PER_MATRIX`).
    pub group_n: u32,
}

impl DecodeSplit {
    /// The split of `k` that fills `capacity` resident CTAs once (one wave) with `n /
    /// DECODE_GROUP_N` row groups per split, each split as long as the shared memory allows.
    pub fn new(n: u32, k: u32, capacity: u32) -> Self {
        Self::with_rows(n, k, capacity, DECODE_GROUP_N)
    }

    /// [`DecodeSplit::new`] for row groups of `group_n` outputs.
    pub fn with_rows(n: u32, k: u32, capacity: u32, group_n: u32) -> Self {
        let steps = decode_steps(k).max(1);
        let groups = (n / group_n).max(1);
        let splits = (capacity / groups).clamp(1, steps);
        let steps_per_split = steps.div_ceil(splits).min(DECODE_MAX_STEPS_PER_SPLIT);
        let splits = steps.div_ceil(steps_per_split);
        Self {
            steps_per_split,
            splits,
            grid: splits * groups,
            group_n,
        }
    }

    /// The split of `k` for `multiprocessors` SMs that hold `resident(steps_per_split)` CTAs
    /// each (registers and the split's token rows in shared memory; 0: does not fit). The
    /// one-wave split of [`DecodeSplit::new`] when its CTAs are all resident at once; else,
    /// when its token rows crowd CTAs off the SMs (long splits at M = 9…16 or many row
    /// groups), the split of least modelled time, fewest CTAs among equals: every wave costs
    /// its steps per split, stretched when more than `DECODE_SATURATING_CTAS` CTAs share an
    /// SM's memory bandwidth, plus `DECODE_CTA_COST_STEPS` of fixed cost.
    pub fn fitted(n: u32, k: u32, multiprocessors: u32, resident: impl Fn(u32) -> u32) -> Self {
        Self::fitted_rows(n, k, multiprocessors, resident, DECODE_GROUP_N)
    }

    /// [`DecodeSplit::fitted`] for row groups of `group_n` outputs.
    pub fn fitted_rows(
        n: u32,
        k: u32,
        multiprocessors: u32,
        resident: impl Fn(u32) -> u32,
        group_n: u32,
    ) -> Self {
        // The most resident CTAs: with the shortest split's token rows.
        let one_wave = Self::with_rows(n, k, multiprocessors * resident(1).max(1), group_n);
        if one_wave.in_one_wave(multiprocessors, &resident) {
            return one_wave;
        }
        let steps = decode_steps(k).max(1);
        let groups = (n / group_n).max(1);
        let candidates = (1..=steps).filter_map(|splits| {
            let steps_per_split = steps.div_ceil(splits);
            let splits = steps.div_ceil(steps_per_split);
            let per_sm = resident(steps_per_split);
            if steps_per_split > DECODE_MAX_STEPS_PER_SPLIT || per_sm == 0 {
                return None;
            }
            let grid = splits * groups;
            let waves = grid.div_ceil(multiprocessors * per_sm);
            let wave = steps_per_split * per_sm.max(DECODE_SATURATING_CTAS)
                + DECODE_CTA_COST_STEPS * DECODE_SATURATING_CTAS;
            let split = Self {
                steps_per_split,
                splits,
                grid,
                group_n,
            };
            Some((waves as u64 * wave as u64, grid, split))
        });
        candidates
            .min_by_key(|&(cost, grid, _)| (cost, grid))
            .map_or(one_wave, |(_, _, split)| split)
    }

    /// Whether the decode-size kernel serves `m` tokens (1..=`DECODE_MAX_TOKENS`) of the dual
    /// GEMM (`gated`) or the plain GEMM with this split on `multiprocessors` SMs holding
    /// `resident(steps_per_split)` CTAs each: always when the split's CTAs are all resident at
    /// once; in several waves only the plain GEMM's one token tile — else the tiled kernel is
    /// faster. Measured on an H100 (the tiled plan against the fitted split in several waves):
    /// two token tiles — dual GEMM 16×18432×7168 92.5 → 77.3 µs, 16×14336×4096 41.2 → 38.7,
    /// GEMM 16×7168×18432 54.0 → 42.4, 16×4096×14336 26.4 → 23.6; one token tile — dual GEMM
    /// 1×18432×7168 82.1 → 75.2, 1×14336×8192 0.950, 1×16384×7168 0.968, 1×28672×8192 0.893,
    /// but GEMM 1×7168×18432 35.5 → 41.6, 1×7168×16384 1.061, 1×8192×28672 1.056,
    /// 1×7168×24576 1.053. One-wave splits lost 3–25 % as tiles (16×4096×7168, 16×8192×2048,
    /// 16×2048×8192).
    pub fn serves(&self, m: u32, gated: bool, multiprocessors: u32, resident: impl Fn(u32) -> u32) -> bool {
        self.in_one_wave(multiprocessors, resident) || (decode_token_tiles(m) == 1 && !gated)
    }

    /// Whether two token tiles take this split of the wide entries (`group_n` of
    /// `DECODE_WIDE_WARPS_PER_MATRIX`) rather than the standard entries' split: where this one
    /// fits one wave on `multiprocessors` SMs holding `resident(steps_per_split)` wide CTAs each,
    /// and the standard one does not (`standard_serves` false) or this split has at least
    /// `DECODE_WIDE_MIN_STEPS` steps. Measured on an H100 (perf log entry 108): where only the
    /// wide split fits one wave, dual GEMM 16×14336×4096 0.96 the tiled kernel's time, GEMM
    /// 16×4096×14336 0.82 (10 and 11 steps: 0.82–0.85).
    pub fn takes_wide(
        &self,
        standard_serves: bool,
        multiprocessors: u32,
        resident: impl Fn(u32) -> u32,
    ) -> bool {
        self.in_one_wave(multiprocessors, resident)
            && (!standard_serves || self.steps_per_split >= sm90::DECODE_WIDE_MIN_STEPS)
    }

    /// Whether the dual GEMM (`gated`) of `m` tokens takes the decode-size kernel's paired
    /// entries: one token tile and splits of at least `DECODE_PAIRED_MIN_STEPS` steps (the plain
    /// GEMM and two token tiles have one loop).
    pub fn paired(&self, m: u32, gated: bool) -> bool {
        gated && decode_token_tiles(m) == 1 && self.steps_per_split >= sm90::DECODE_PAIRED_MIN_STEPS
    }

    /// Whether `m` tokens of this split stage through a copy of their packed rows in shared
    /// memory (`nvfp4_kernel::sm90::config::DecodeArgs::copied_tokens`): two token tiles whose
    /// CTAs all stay resident at once on `multiprocessors` SMs holding `resident_copied(steps)`
    /// CTAs each with the copy's shared memory. The copy was 2.5–9 % faster at 9–16 tokens
    /// (H100, perf log entry 99) but must not cost the one wave: its ≈ 1.15 KiB a step took
    /// Llama-2-7B's gate/up (16×11008×4096, 516 CTAs of 11 steps) from four CTAs an SM to three.
    pub fn copies_tokens(&self, m: u32, multiprocessors: u32, resident_copied: impl Fn(u32) -> u32) -> bool {
        decode_token_tiles(m) > 1 && self.in_one_wave(multiprocessors, resident_copied)
    }

    /// Whether all the split's CTAs are resident at once on `multiprocessors` SMs holding
    /// `resident(steps_per_split)` CTAs each.
    fn in_one_wave(&self, multiprocessors: u32, resident: impl Fn(u32) -> u32) -> bool {
        self.grid <= multiprocessors * resident(self.steps_per_split)
    }
}

/// The block of the whole-K decode-size kernel (`nvfp4_kernel::sm90::decode`, one token tile)
/// for one shape: a CTA per 16 outputs over all of K, so no split to reduce between CTAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeWholeK {
    /// Warps per CTA (the dual GEMM's: half on each matrix), each streaming every
    /// `warps`-th (dual GEMM: `warps / 2`-th) step of K.
    pub warps: u32,
    /// CTAs: `n / DECODE_ROWS_PER_WARP`.
    pub grid: u32,
    /// The dual GEMM's small-CTA entries (`DECODE_WHOLE_K_SMALL_WARPS` warps at fewer
    /// registers, more CTAs an SM), where the others' CTAs do not fit one wave.
    pub small: bool,
}

impl DecodeWholeK {
    /// The blocks a launch may have, most warps first (even: the dual GEMM's halves), each
    /// `(warps, small)`; the small-CTA entries last (dual GEMM only): with 56 registers they
    /// were 0–4 % slower than the 64-register entry where both fit one wave (H100).
    pub const BLOCKS: [(u32, bool); 4] = [
        (DECODE_WHOLE_K_MAX_WARPS, false),
        (8, false),
        (4, false),
        (DECODE_WHOLE_K_SMALL_WARPS, true),
    ];
    /// Fewest warps a launch must keep on each SM on average: with fewer the split kernel, whose
    /// CTAs fill the SMs, was faster (H100: dual GEMM 1×2048×8192 on 128 CTAs of 16 warps
    /// 1.05×; 2-warp CTAs, no longer offered, took 1.25× the tiled kernel's time at
    /// 1×18432×7168, 1.13× with two steps in flight, perf log entries 94–95).
    pub const MIN_WARPS_PER_SM: u32 = 20;
    /// Fewest steps of K a warp must stream: with 2 the CTA's fixed costs (its token rows over
    /// all of K) outweighed the reduction saved (H100: GEMM 1×7168×2048 1.03×).
    pub const MIN_STEPS_PER_WARP: u32 = 3;

    /// The block for `m` tokens and `n` outputs of reduction length `k`, dual GEMM if `gated`,
    /// on `multiprocessors` SMs holding `resident(warps, small)` CTAs of that block each
    /// (registers and the token rows over all of K; 0: does not fit): the first of
    /// [`Self::BLOCKS`] whose CTAs are all resident at once, keep [`Self::MIN_WARPS_PER_SM`]
    /// warps an SM and give each warp [`Self::MIN_STEPS_PER_WARP`] steps or more; none for more
    /// than one token tile or where no block qualifies (the split kernel or the tiled one
    /// serves those).
    pub fn choose(
        [m, n, k]: [u32; 3],
        gated: bool,
        multiprocessors: u32,
        resident: impl Fn(u32, bool) -> u32,
    ) -> Option<Self> {
        if decode_token_tiles(m) != 1 {
            return None;
        }
        let grid = n / DECODE_ROWS_PER_WARP;
        let steps = decode_steps(k);
        Self::BLOCKS
            .into_iter()
            .filter(|&(_, small)| gated || !small)
            .find(|&(warps, small)| {
                let parts = if gated { warps / 2 } else { warps };
                grid <= multiprocessors * resident(warps, small)
                    && grid as u64 * warps as u64 >= (Self::MIN_WARPS_PER_SM * multiprocessors) as u64
                    && steps.div_ceil(parts) >= Self::MIN_STEPS_PER_WARP
            })
            .map(|(warps, small)| Self { warps, grid, small })
    }
}

/// Resident decode-size CTAs per SM from which they share the SM's memory bandwidth: a wave
/// of fewer is bound by each CTA's latency, not by bandwidth (measured on the H100: M = 16 at
/// 18432 × 7168 with one resident CTA per SM took 1.6 times M = 1 with three).
pub const DECODE_SATURATING_CTAS: u32 = 3;
/// Fixed cost of a decode-size CTA (token decoding, reduction) in 128-K steps.
pub const DECODE_CTA_COST_STEPS: u32 = 2;

/// The fp16 token operand of large sm_90a tiles (`nvfp4_kernel::sm90::tokens`), rewritten from
/// A by each launch, and the tensor map the kernel loads it through.
pub(crate) struct PredecodedTokens {
    pub buffer: DeviceBuffer<u16>,
    pub map: TensorMap,
}

impl DensePlan {
    /// Enqueues the token pre-decoder (`sm90::registry::PREDECODE_TOKENS`): A → the fp16 token operand in `out`.
    pub(super) fn predecode_tokens(&self, gpu: &Gpu, a: &NvFp4Ref, out: &DeviceBuffer<u16>) -> Result<()> {
        let kernel = &gpu.sm90_kernels("token pre-decoding")?.predecode_tokens;
        let DualGemmShape { m, k, .. } = self.shape;
        // One thread per token and 64-K slice; the geometry bounded m × padded k / 64.
        let items = (m * (padded_k(k as u32) / K_PER_SLICE) as usize) as u32;
        let stream = gpu.stream();
        let out = out.address();
        let args = sm90::PredecodeArgs {
            data: a.data_address() as *const u8,
            scales: a.scales_address() as *const u8,
            out: out as *mut u32,
            rows: m as u32,
            k: k as u32,
        };
        // A plain launch even in programmatic mode: started early, its few small CTAs would
        // crowd onto the first multiprocessors the previous kernel frees (measured on an H100:
        // M = 64 36.4 → 48.2 µs). The dual GEMM after it is the programmatic one.
        // SAFETY: A has the planned shape (checked by the caller), `out` holds m × padded k
        // fp16, all 16-byte aligned.
        unsafe { kernel.launch(stream, gpu.grid_stride_blocks(kernel, items), 0, &args, false) }
    }
}
