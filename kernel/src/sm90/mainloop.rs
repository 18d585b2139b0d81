//! The roles of the sm_90a GEMM kernels, shared by the dense dual GEMM ([`super::dual_gemm`])
//! and the grouped GEMMs ([`super::grouped`]): one mainloop, parameterised by where each tile
//! comes from (a [`Problem`]: its tokens, weights, output and scales) and by the epilogue
//! (gated SiLU·up or plain). The design and its cost model are in the dense kernel's module doc.
//!
//! # Tile rows
//! A consumer warp's 16 wgmma rows are two halves of 8 (fragment rows `g` and `g + 8` of thread
//! `(g, t)`), called *gate* and *up*:
//! * gated tiles ([`config::TILE_N`] = 64 outputs): output `n` has its gate row (B1) and its up
//!   row (B3) in the two halves, so one thread holds both products of the same outputs;
//! * plain tiles ([`config::PLAIN_TILE_N`] = 128 outputs): the halves are outputs `n` and `n + 32`
//!   of the same matrix ([`config::PLAIN_UP_ROW_OFFSET`]), whose scale pairs are loaded together.

use crate::common::NVFP4_STAGING_PITCH;
use crate::desc::{sw128_in_row, sw128_offset, sw128_row, wgmma_desc_sw128_k_major};
use crate::epilogue::{GatedProduct, Nvfp4Tile, half_bits};
use crate::fp4::PairCodec;
use crate::layout::{ATOM_BYTES, ATOM_ROWS, BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{copy, cvt, fence, mbarrier, mem, reg, smem, sreg, warp, wgmma};
use crate::ring::RingPosition;
use crate::schedule::{
    REDUCER_SEGMENT, Segment, Segments, StreamK, Ticket, TileSpace, TileSpan, virtual_cta,
};
use crate::sm90::config::{
    self, BLOCKS_PER_SLICE, BLOCKS_PER_STAGE, DECODED_STAGES, DECODER_WARPGROUPS, EPILOGUE_STAGING_PITCH,
    FIRST_DECODER_WARPGROUP, FITTED_WIDTHS, K_PER_SLICE, K_PER_STAGE, RAW_STAGES, SCALE_GROUP_BYTES,
    SEGMENT_RECORD_BYTES, SEGMENT_RECORDS, SLICES_PER_STAGE, SharedPlan, TOKEN_BOX_ROWS, Tile,
    WARPGROUP_THREADS, WEIGHT_BOX_BYTES, WEIGHT_BOX_ROWS, WEIGHT_CHUNK_BYTES, WEIGHT_CHUNKS_PER_STAGE,
    WEIGHT_DATA_BYTES, WEIGHT_SLOT_BYTES, WEIGHT_SLOT_HEADER, WEIGHT_STAGES, stage_block,
};
use crate::sm90::tokens::scaled_pairs;

/// Runs `$body` with `$q` bound to the literals 0, 1, …, 31 while below `$limit`. Loops over
/// the accumulators must use literal indices: LLVM does not fully unroll these loops, and a
/// run-time index moves the accumulator array to local memory.
macro_rules! unrolled32 {
    ($limit:expr, |$q:ident| $body:block) => {
        unrolled32!(@ $limit, $q, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $limit:expr, $q:ident, $body:block; $($n:literal)*) => {
        $( if $n < $limit { let $q: usize = $n; $body } )*
    };
}

/// One segment's tile, as every role sees it.
#[derive(Clone, Copy)]
pub(crate) struct TileJob {
    /// Row of the token operand (the tensor map's second coordinate) of the tile's first token.
    pub token_row: u32,
    /// Tokens of the tile that exist (the epilogue stores only these).
    pub tokens: u32,
    /// First output of the tile.
    pub n0: u32,
    /// Outputs of the tile's problem (rows past it are not loaded or stored).
    pub n: u32,
    /// Reduction length of the tile's problem (a multiple of 64).
    pub k: u32,
    /// Gate weights (row 0 of the matrix), and their blocked scales.
    pub gate: *const u8,
    /// Blocked scales of `gate`.
    pub gate_scales: *const u8,
    /// Up weights (row 0), and their blocked scales.
    pub up: *const u8,
    /// Blocked scales of `up`.
    pub up_scales: *const u8,
    /// Rows of the weights' scale layout.
    pub weight_rows: u32,
    /// Up row of output `n` minus `n` (gated; plain tiles add [`config::PLAIN_UP_ROW_OFFSET`]).
    pub up_row_offset: u32,
    /// Output of the tile's first token, column 0.
    pub out: *mut u16,
    /// Elements between output rows.
    pub ldc: u32,
    /// Scale of the gate (or plain) product.
    pub alpha_gate: f32,
    /// Scale of the up product.
    pub alpha_up: f32,
}

/// The packed token operand of kernels that decode tokens themselves (the dense kernel's small
/// tiles): A's blocked scales and shape.
#[derive(Clone, Copy)]
pub(crate) struct PackedTokens {
    /// A's blocked scales.
    pub scales: *const u8,
    /// Rows of A.
    pub m: u32,
    /// K of A.
    pub k: u32,
}

/// Where a launch's tiles come from.
pub(crate) trait Problem {
    /// The launch's iterations and their tiles.
    type Space: TileSpace + Copy;
    /// Gated (SiLU·up of gate/up row pairs) or plain tiles.
    const GATED: bool;
    /// Whether the tiles write NVFP4 ([`Problem::nvfp4_tile`]) instead of fp16 through
    /// `TileJob::out` (gated problems only: plain tiles hold 128 outputs).
    const NVFP4_OUT: bool;
    /// Whether the fp16-output epilogue rounds to bf16 instead (the dense bf16 entries).
    const OUT_BF16: bool = false;
    /// Whether 128-token tiles compute a finished tile's job and the epilogue's staging address
    /// again after the mainloop instead of holding them across it: the grouped kernels, whose
    /// 128-token consumers have no registers to spare; the dense ones were 1.6–2.4 % slower on
    /// 256-token task shapes so (perf log entry 91).
    const RECOMPUTE_AFTER_MAINLOOP: bool = false;
    /// Whether the consumers hand a finished tile's staged fp16 values to the copy-out warps
    /// ([`copy_out_warps`]), which copy them to C while the consumers go on with the CTA's next
    /// segment; the tile of the CTA's last segment the consumers copy themselves, as there is
    /// nothing to overlap it with. Needs the weight ring (its next segment record, which the
    /// consumers have read by the end of a segment's mainloop, tells them whether a segment is
    /// the CTA's last) and pre-decoded tokens (the copy-out warps are warps that the tile's
    /// roles leave idle).
    const COPY_OUT_WARPS: bool = false;
    /// Whether the tiles are fitted to their groups ([`Tile::fits_groups`]): the launch's tile
    /// is the widest, and each tile runs at the narrowest of the [`FITTED_WIDTHS`] that holds
    /// its job's tokens — its slices one TMA box of that width ([`Problem::token_box`]),
    /// its wgmmas in that width's own copy of the stage loop; the roles' `mma` is not used.
    const FITTED: bool = false;
    /// Factors of the tile's gate and up α that live in device memory (the dense launches'
    /// `DeviceGlobalScales`), read when a tile is finished, after the dependency wait; the
    /// grouped kernels' preparation pass folds them into each group's α.
    ///
    /// # Safety
    /// Called by consumers after their dependency wait.
    #[inline(always)]
    unsafe fn alpha_factors(&self) -> (f32, f32) {
        (1.0, 1.0)
    }
    /// Generic address of the token operand's tensor map.
    fn token_map(&self) -> u64;
    /// The tile `span`'s first token row and tokens ([`Problem::job`]'s `token_row` and
    /// `tokens`), for the producer: a problem may read less for them than for the whole job.
    #[inline(always)]
    fn token_rows(&self, span: &TileSpan, tile: Tile) -> (u32, u32) {
        let job = self.job(span, tile);
        (job.token_row, job.tokens)
    }
    /// The tensor map (generic address) whose box is one decoded slice of a tile of `tokens`
    /// tokens in a launch of `tile`, and the box's bytes: [`Problem::token_map`] and a whole
    /// slice, but for fitted tiles, which have a map per width.
    #[inline(always)]
    fn token_box(&self, tokens: u32, tile: Tile) -> (u64, u32) {
        let _ = tokens;
        (self.token_map(), tile.decoded_slice_bytes())
    }
    /// Starts fetching the token maps into the tensor-map cache.
    ///
    /// # Safety
    /// The maps are written before the launch (no kernel writes them).
    #[inline(always)]
    unsafe fn prefetch_token_maps(&self) {
        // SAFETY: forwarded.
        unsafe { copy::prefetch_tensor_map(self.token_map()) }
    }
    /// The tile `span` of a launch with `tile.tokens` tokens per tile.
    fn job(&self, span: &TileSpan, tile: Tile) -> TileJob;
    /// The packed tokens, for kernels that decode tokens in the kernel (`None` otherwise).
    fn packed_tokens(&self) -> Option<PackedTokens>;
    /// One consumer thread's weight rows of a tile, as carried through the mainloop.
    type Rows: Copy;
    /// How both operands of a tile are decoded (the weights here, the tokens by the decoder
    /// warpgroups or by whichever pass wrote the pre-decoded buffer).
    type Codec: PairCodec;
    /// The rows of `lane` in `job`'s tile.
    fn weight_rows(&self, job: &TileJob, lane: &ConsumerLane) -> Self::Rows;
    /// Issues the loads of chunk `h` (of [`WEIGHT_CHUNKS_PER_STAGE`]) of stage `stage` of
    /// `rows` into `into` (see [`RowPointers::load_chunk`]).
    ///
    /// # Safety
    /// `rows` of a tile of this launch; `stage` one of its stages; `h` < the chunks per stage.
    unsafe fn load_weight_chunk(&self, rows: &Self::Rows, stage: u32, h: usize, into: &mut WeightStage);

    /// Issues the loads of all chunks of stage `stage` of `rows`.
    ///
    /// # Safety
    /// As [`Problem::load_weight_chunk`].
    #[inline(always)]
    unsafe fn load_weights(&self, rows: &Self::Rows, stage: u32) -> WeightStage {
        let mut w = WeightStage::ZERO;
        for h in 0..WEIGHT_CHUNKS {
            // SAFETY: forwarded.
            unsafe { self.load_weight_chunk(rows, stage, h, &mut w) };
        }
        w
    }

    /// Where `job`'s tile (`span`) writes its NVFP4 output (problems with
    /// [`Problem::NVFP4_OUT`]).
    fn nvfp4_tile(&self, span: &TileSpan, job: &TileJob) -> Nvfp4Tile;

    /// Whether the tiles' weights come through the weight ring (a producer warp copies each
    /// stage into a slot with TMA, the consumers read it from shared memory: no address
    /// arithmetic, row clamps or choice of the next segment's rows in their stage loop) instead
    /// of each consumer thread's own global loads. The launch's shared plan must hold the ring
    /// (`Tile::grouped_shared`).
    const WEIGHT_RING: bool = false;
    /// Where the weight ring's copies of the tile `span` come from (problems with
    /// [`Problem::WEIGHT_RING`]; the others never call it and get no source).
    #[inline(always)]
    fn weight_source(&self, span: &TileSpan, tile: Tile) -> WeightSource {
        let _ = (span, tile);
        WeightSource::NONE
    }
}

/// Where the weight ring's copies of one tile come from ([`produce_weights`]).
#[derive(Clone, Copy)]
pub(crate) struct WeightSource {
    /// Generic addresses of the tensor maps over the gate and the up weights (box
    /// [`WEIGHT_BOX_BYTES`] × [`WEIGHT_BOX_ROWS`], no swizzle; zeros outside the matrix).
    pub gate_map: u64,
    pub up_map: u64,
    /// The maps' rows of the slot's first gate row and first up row (slot rows 0 and
    /// [`WEIGHT_BOX_ROWS`]): a gated tile's gate and up rows of outputs `n0..`, a plain
    /// tile's outputs `n0..` and `n0 + 64..` of one matrix.
    pub gate_row: u32,
    pub up_row: u32,
    /// The first atom of the gate rows' 128-row scale group (a group's atoms along K are
    /// contiguous), and of the up rows' (gated tiles only).
    pub gate_scales: *const u8,
    pub up_scales: *const u8,
    /// Scale atoms of a row group (`BlockedScales::k_blocks`, K / 64): a partial last stage
    /// repeats the last.
    pub atoms: u32,
    /// The byte of every scale line where the gate rows' and the up rows' codes start (a
    /// gated tile's 64 rows are half a 128-row group: 0 or 8, see [`SlotHeader`]).
    pub header: SlotHeader,
}

impl WeightSource {
    /// No source (problems without a weight ring).
    pub const NONE: Self = Self {
        gate_map: 0,
        up_map: 0,
        gate_row: 0,
        up_row: 0,
        gate_scales: core::ptr::null(),
        up_scales: core::ptr::null(),
        atoms: 0,
        header: SlotHeader { gate: 0, up: 0 },
    };
}

/// The 8 bytes the producer writes into each weight slot beside its copies: where in each
/// 16-byte scale line the slot's gate rows and up rows start. A gated tile's 64 rows are half
/// of their 128-row scale group, rows `r` of the group at bytes `4·(r / 32)` of line `r % 32`:
/// the consumers' offsets are those of rows `0..64` and add this (the next segment's tile,
/// which the last stage of a segment reads, may sit in the other half).
#[derive(Clone, Copy)]
pub(crate) struct SlotHeader {
    pub gate: u32,
    pub up: u32,
}

impl SlotHeader {
    /// The header of gate rows from `gate_row` and up rows from `up_row` (each a multiple of
    /// 64: gated tiles start at multiples of `TILE_N`, and the up rows' offset is a multiple
    /// of it).
    #[inline(always)]
    pub fn of_rows(gate_row: u32, up_row: u32) -> Self {
        let half = |row: u32| (row % ATOM_ROWS as u32) / 32 * 4;
        Self {
            gate: half(gate_row),
            up: half(up_row),
        }
    }
}

/// The stream-K share of this CTA: the split, its virtual CTA (none: no share), where the
/// launch's epoch is (see [`Ticket`]; read from shared memory when publishing or waiting, so it
/// is not held in a register across the roles' `setmaxnreg`), and where partial sums go.
#[derive(Clone, Copy)]
pub(crate) struct Work<S> {
    pub split: StreamK<S>,
    pub cta: Option<u32>,
    /// Offset of the ticket in dynamic shared memory (a constant of the tile: the address is
    /// rebuilt from the base when needed rather than kept live in a register).
    pub ticket_offset: u32,
    pub workspace: *mut u32,
    pub flags: *mut u32,
    /// Test support: the launch stops mid-way on purpose (see `DualGemmArgs::abort`).
    pub aborting: bool,
}

impl<S: TileSpace + Copy> Work<S> {
    /// The CTA's share of `split`, given the ticket [`setup`] took (read by every thread).
    /// `abort`: 0, or the test hook's stop point (`DualGemmArgs::abort`): CTAs that started at
    /// or after it get no share.
    pub fn new(split: StreamK<S>, shared: &Shared, workspace: *mut u32, flags: *mut u32, abort: u32) -> Self {
        let started = read_ticket(shared).started;
        let aborting = abort != 0;
        Self {
            split,
            cta: if aborting && started >= abort {
                None
            } else {
                virtual_cta(started, split.ctas)
            },
            ticket_offset: shared.plan.ticket,
            workspace,
            flags,
            aborting,
        }
    }

    /// This CTA's segments, in order (every role walks the same sequence; none without a share).
    pub fn segments(&self) -> Segments<'_, S> {
        self.split.segments(self.cta.unwrap_or(self.split.ctas))
    }

    /// The launch's epoch (any thread).
    #[inline(always)]
    fn epoch(&self) -> u32 {
        // SAFETY: written by `setup` before the CTA barrier.
        unsafe { smem::ld_b32(smem::base() + self.ticket_offset + 4) }
    }
}

/// Shared addresses of everything in dynamic shared memory.
#[derive(Clone, Copy)]
pub(crate) struct Shared {
    pub tile: Tile,
    pub plan: SharedPlan,
    pub base: u32,
}

impl Shared {
    pub fn decoded_slice(&self, stage: u32) -> u32 {
        self.base + self.plan.decoded + stage * self.tile.decoded_slice_bytes()
    }
    fn raw_tokens(&self, stage: u32) -> u32 {
        self.base + self.plan.raw_tokens + stage * self.tile.raw_token_bytes()
    }
    fn raw_scales(&self, stage: u32) -> u32 {
        self.base + self.plan.raw_scales + stage * self.tile.raw_scale_bytes()
    }
    fn raw_full(&self, stage: u32) -> u32 {
        self.base + self.plan.barriers + 8 * stage
    }
    fn raw_empty(&self, stage: u32) -> u32 {
        self.raw_full(RAW_STAGES + stage)
    }
    fn decoded_full(&self, stage: u32) -> u32 {
        self.raw_full(2 * RAW_STAGES + stage)
    }
    fn decoded_empty(&self, stage: u32) -> u32 {
        self.raw_full(2 * RAW_STAGES + DECODED_STAGES + stage)
    }
    /// Slot `stage` of the weight ring.
    fn weight_slot(&self, stage: u32) -> u32 {
        self.base + self.plan.weights + stage * WEIGHT_SLOT_BYTES
    }
    fn weight_full(&self, stage: u32) -> u32 {
        self.raw_full(2 * RAW_STAGES + 2 * DECODED_STAGES + stage)
    }
    fn weight_empty(&self, stage: u32) -> u32 {
        self.weight_full(WEIGHT_STAGES + stage)
    }
    /// The 16-bit epilogue's staging (`SharedPlan::staging`).
    pub fn staging(&self) -> u32 {
        self.base + self.plan.staging
    }
    /// The launch ticket's two words (start position, epoch).
    pub fn ticket(&self) -> u32 {
        self.base + self.plan.ticket
    }
    /// The grouped kernels' schedule table (header, then one record per group).
    pub fn groups(&self) -> u32 {
        self.base + self.plan.groups
    }
    /// The copy-out record ([`CopyOutRecord`]).
    fn copy_out_record(&self) -> u32 {
        self.base + self.plan.copy_out_record
    }
    /// The slot of the CTA's segment record `index` (its `index`-th segment, counted from 0).
    fn segment_record(&self, index: u32) -> u32 {
        self.base + self.plan.records + (index % SEGMENT_RECORDS) * SEGMENT_RECORD_BYTES
    }
}

/// One segment of a CTA as the weight producer of a problem with a [`Problem::WEIGHT_RING`]
/// hands it to the consumers, so that they do not walk the stream-K split themselves (its
/// divisions, the group table's binary search); the producer already walks the same segments
/// for its copies. Record `i` (ring slot `i % SEGMENT_RECORDS`) is the CTA's `i`-th segment,
/// written before the producer fills the segment's first stage, so before its arrival on that
/// weight slot, which every consumer waits for before it reads the record (the arrival
/// releases, the wait acquires); after the CTA's last segment an *end* record goes with the
/// closing slot. A record outlives its segment's epilogue: see [`SEGMENT_RECORDS`].
///
/// Layout, three 16-byte words: `[valid, first_stage, stages, index]`, `[count, tile.begin,
/// tile.stages, tile.group]`, `[tile.local, 0, 0, 0]`.
struct SegmentRecord;

impl SegmentRecord {
    /// Writes the record of `segment` (or the end record, for `None`) at `at`.
    ///
    /// # Safety
    /// `at` is a record slot no consumer still reads ([`SEGMENT_RECORDS`]).
    #[inline(always)]
    unsafe fn write(at: u32, segment: Option<&Segment>) {
        let Some(s) = segment else {
            // SAFETY: the caller's contract.
            unsafe { smem::st_b32(at, 0) };
            return;
        };
        // SAFETY (all): the caller's contract; 16-byte aligned words inside the slot.
        unsafe {
            smem::st_v4(at, [1, s.first_stage, s.stages, s.index]);
            smem::st_v4(at + 16, [s.count, s.tile.begin, s.tile.stages, s.tile.group]);
            smem::st_b32(at + 32, s.tile.local);
        }
    }

    /// Whether the record at `at` is the end record (no segment follows).
    ///
    /// # Safety
    /// As [`SegmentRecord::read`].
    #[inline(always)]
    unsafe fn is_end(at: u32) -> bool {
        // SAFETY: the caller's contract.
        unsafe { smem::ld_b32(at) == 0 }
    }

    /// The segment of the record at `at`, or `None` for the end record.
    ///
    /// # Safety
    /// After the consumer's wait on the weight slot the record came with.
    #[inline(always)]
    unsafe fn read(at: u32) -> Option<Segment> {
        // SAFETY: the caller's contract.
        let [valid, first_stage, stages, index] = unsafe { smem::ld_v4(at) };
        if valid == 0 {
            return None;
        }
        // SAFETY: as above.
        let ([count, begin, tile_stages, group], local) =
            unsafe { (smem::ld_v4(at + 16), smem::ld_b32(at + 32)) };
        Some(Segment {
            tile: TileSpan {
                begin,
                stages: tile_stages,
                group,
                local,
            },
            first_stage,
            stages,
            index,
            count,
        })
    }
}

/// Named barrier of the consumer threads around an NVFP4 epilogue's staging.
const EPILOGUE_BARRIER: u32 = 2;
/// Threads of the consumer warpgroups (they meet at [`FIXUP_BARRIER`]).
const CONSUMER_THREADS: u32 = config::CONSUMER_WARPGROUPS * WARPGROUP_THREADS;
/// Named barrier of the stream-K fix-up (barrier 0 is the CTA-wide barrier of the setup).
const FIXUP_BARRIER: u32 = 1;

/// Named barrier where the consumers hand a staged tile (or the end of the CTA's tiles) to the
/// copy-out warps ([`Problem::COPY_OUT_WARPS`]): the consumers arrive, the copy-out warps wait.
const STAGED_BARRIER: u32 = 3;
/// Named barrier where the copy-out warps hand the staging back once they have read it: they
/// arrive, the consumers wait before they stage again.
const STAGING_FREE_BARRIER: u32 = 4;
/// Threads of the copy-out warps.
const COPY_OUT_THREADS: u32 = 2 * 32;
/// Threads that meet at [`STAGED_BARRIER`] and [`STAGING_FREE_BARRIER`].
const HANDOFF_THREADS: u32 = CONSUMER_THREADS + COPY_OUT_THREADS;

/// Arrivals that complete each barrier's phase.
const RAW_FULL_ARRIVALS: u32 = 1; // the producer's arrive.expect_tx (+ the copies' bytes)
const RAW_EMPTY_ARRIVALS: u32 = DECODER_WARPGROUPS * WARPGROUP_THREADS; // every decoder thread
const DECODED_FULL_ARRIVALS: u32 = DECODER_HALF_THREADS; // the slice's half decoder warpgroup, after its proxy fence
const PREDECODED_FULL_ARRIVALS: u32 = 1; // the producer's arrive.expect_tx (+ the TMA's bytes)
const DECODED_EMPTY_ARRIVALS: u32 = CONSUMER_THREADS; // every consumer thread
const WEIGHT_FULL_ARRIVALS: u32 = 1; // the weight producer's arrive.expect_tx (+ the copies' bytes)
const WEIGHT_EMPTY_ARRIVALS: u32 = CONSUMER_THREADS; // every consumer thread

/// The setup every kernel runs first, on thread 0: initialize the rings' barriers and take the
/// launch ticket (one 64-bit atomic; its start position and epoch go to shared memory). The
/// caller then synchronizes the CTA and reads them with [`read_ticket`].
///
/// # Safety
/// Thread 0 only; `tickets` is the plan's ticket counter; the shared plan is this kernel's.
#[inline(always)]
pub(crate) unsafe fn setup(shared: &Shared, predecoded: bool, tickets: *mut u64) {
    for stage in 0..RAW_STAGES {
        // SAFETY: barrier slots are inside the plan; only thread 0 touches them here.
        unsafe {
            mbarrier::init(shared.raw_full(stage), RAW_FULL_ARRIVALS);
            mbarrier::init(shared.raw_empty(stage), RAW_EMPTY_ARRIVALS);
        }
    }
    let full_arrivals = if predecoded {
        PREDECODED_FULL_ARRIVALS
    } else {
        DECODED_FULL_ARRIVALS
    };
    for stage in 0..DECODED_STAGES {
        // SAFETY: as above.
        unsafe {
            mbarrier::init(shared.decoded_full(stage), full_arrivals);
            mbarrier::init(shared.decoded_empty(stage), DECODED_EMPTY_ARRIVALS);
        }
    }
    for stage in 0..WEIGHT_STAGES {
        // SAFETY: as above (the plan has the barriers even where it has no weight ring).
        unsafe {
            mbarrier::init(shared.weight_full(stage), WEIGHT_FULL_ARRIVALS);
            mbarrier::init(shared.weight_empty(stage), WEIGHT_EMPTY_ARRIVALS);
        }
    }
    fence::mbarrier_init();
    // Taken before `launch_dependents`, so every CTA of this launch has its ticket before any
    // CTA of the next launch can take one: each launch gets `grid` consecutive tickets.
    // SAFETY: the counter is the plan's, 8-byte aligned.
    let ticket = Ticket::new(
        unsafe { mem::atom_add_relaxed_gpu_u64(tickets, 1) },
        sreg::grid_dim_x(),
    );
    // SAFETY: inside the plan.
    unsafe { smem::st_v2(shared.ticket(), [ticket.started, ticket.epoch]) };
}

/// The ticket [`setup`] took, after the CTA barrier that follows it (all threads of a warp).
#[inline(always)]
fn read_ticket(shared: &Shared) -> Ticket {
    // SAFETY: written by thread 0 before the barrier.
    let [started, epoch] = unsafe { smem::ld_v2(shared.ticket()) };
    // The same in every lane; a warp reduction lands in a uniform register, so that the
    // segment bounds, ring positions and descriptors derived from it stay on the uniform
    // datapath (as they did when they came from %ctaid).
    Ticket {
        started: warp::min_u32(started),
        epoch: warp::min_u32(epoch),
    }
}

/// The roles, dispatched by warpgroup, for tiles of `2·ACC` tokens with `SETS` accumulator sets;
/// `CONSUMER`, `DECODER` and `PRODUCER` are the tile's register split (const arguments, as
/// `setmaxnreg` takes immediates). `PREDECODED`: tokens come pre-decoded (TMA into the decoded
/// ring) rather than decoded by the decoder warpgroups. `WARM_UP`: consumers prefetch their
/// first weight stages into L2 before waiting for the previous kernel.
///
/// # Safety
/// After [`setup`] and the CTA barrier; the arguments satisfy the calling kernel's contract.
#[inline(always)]
pub(crate) unsafe fn roles<
    P: Problem,
    const ACC: usize,
    const SETS: usize,
    const CONSUMER: u32,
    const DECODER: u32,
    const PRODUCER: u32,
    const PREDECODED: bool,
    const WARM_UP: bool,
>(
    problem: &P,
    shared: &Shared,
    work: &Work<P::Space>,
    mma: impl Fn(&mut [f32; ACC], [u32; 4], u64),
) {
    const {
        assert!(
            !P::COPY_OUT_WARPS || (PREDECODED && P::WEIGHT_RING && !P::NVFP4_OUT),
            "the copy-out warps are idle decoder or producer warps, read the segment records, and copy 16-bit tiles"
        )
    };
    let thread = sreg::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    let tile = Tile {
        tokens: 2 * ACC as u32,
    };
    // The producer is the CTA's last warpgroup; its first thread issues the copies.
    let producer_warpgroup = tile.producer_warpgroup();
    // Two idle warps of a decoder or the producer warpgroup (inside its branch: `setmaxnreg`
    // is one instruction for the whole warpgroup).
    let copy_out = if P::COPY_OUT_WARPS {
        copy_out_index(tile, thread)
    } else {
        None
    };
    if warpgroup == producer_warpgroup {
        reg::decrease::<PRODUCER>();
        if let Some(index) = copy_out {
            // SAFETY: the kernel's contract.
            unsafe { copy_out_warps(shared, P::GATED, index) };
            return;
        }
        if P::WEIGHT_RING && thread == producer_warpgroup * WARPGROUP_THREADS + WEIGHT_PRODUCER_THREAD {
            fence::grid_dependency_wait();
            // SAFETY: the kernel's contract.
            unsafe { produce_weights(problem, shared, work) };
        }
        if thread == producer_warpgroup * WARPGROUP_THREADS {
            // SAFETY: the plan wrote the tensor maps before any launch (no kernel writes them).
            unsafe { problem.prefetch_token_maps() };
            fence::grid_dependency_wait();
            // SAFETY: the kernel's contract.
            unsafe {
                if PREDECODED {
                    produce_predecoded(problem, shared, work)
                } else if let Some(packed) = problem.packed_tokens() {
                    produce(problem, &packed, shared, work)
                }
            };
        }
    } else if warpgroup >= FIRST_DECODER_WARPGROUP {
        reg::decrease::<DECODER>();
        if let Some(index) = copy_out {
            // SAFETY: the kernel's contract.
            unsafe { copy_out_warps(shared, P::GATED, index) };
            return;
        }
        if PREDECODED {
            return; // the producer loads decoded slices
        }
        if let Some(packed) = problem.packed_tokens() {
            let decoder = warpgroup - FIRST_DECODER_WARPGROUP;
            // SAFETY: as above.
            unsafe {
                decode_tokens(
                    problem,
                    &packed,
                    shared,
                    work,
                    decoder,
                    thread % WARPGROUP_THREADS,
                )
            };
        }
    } else {
        reg::increase::<CONSUMER>();
        let lane = ConsumerLane::new(thread, P::GATED);
        if WARM_UP {
            // SAFETY: as above.
            unsafe { warm_up_weights(problem, shared.tile, work, &lane, thread) };
        }
        fence::grid_dependency_wait();
        // SAFETY: as above.
        unsafe { consume::<P, ACC, SETS>(problem, shared, work, &lane, &mma) };
    }
}

/// The producer thread of in-kernel token decoding: per tile and 256-K stage, one TMA box per
/// 64 token rows and one bulk copy per 128-row scale group (the stage's existing atoms) into
/// the raw ring.
#[inline(always)]
unsafe fn produce<P: Problem>(problem: &P, packed: &PackedTokens, shared: &Shared, work: &Work<P::Space>) {
    let tile = shared.tile;
    let scales = BlockedScales::new(packed.m as usize, packed.k as usize);
    let atoms_of_k = scales.k_blocks as u32;
    let mut ring = RingPosition::<RAW_STAGES>::new();
    for segment in work.segments() {
        let job = problem.job(&segment.tile, tile);
        let first_group = job.token_row / ATOM_ROWS as u32;
        let groups = tile.scale_groups().min(scales.row_blocks as u32 - first_group);
        for stage in segment.first_stage..segment.first_stage + segment.stages {
            // A partial last stage has fewer atoms; the decoders zero its missing blocks.
            let atoms = (atoms_of_k - stage * BLOCKS_PER_STAGE / 4).min(BLOCKS_PER_STAGE / 4);
            let atom_bytes = atoms * ATOM_BYTES as u32;
            let bytes = tile.raw_token_bytes() + groups * atom_bytes;
            let full = shared.raw_full(ring.stage);
            // SAFETY: barriers are initialized; copies stay inside the stage buffers and inside
            // A's scales (only existing row blocks and atoms are copied); the box may run past M
            // and K (zeros).
            unsafe {
                mbarrier::wait_suspending(shared.raw_empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, bytes);
                for b in 0..tile.token_boxes() {
                    let dst = shared.raw_tokens(ring.stage) + b * TOKEN_BOX_ROWS * 128;
                    copy::tensor_2d(
                        dst,
                        problem.token_map(),
                        (stage * 128) as i32,
                        (job.token_row + b * TOKEN_BOX_ROWS) as i32,
                        full,
                    );
                }
                for g in 0..groups {
                    let src = packed
                        .scales
                        .add(scales.atom_offset((first_group + g) as usize, (stage * 4) as usize));
                    copy::bulk(
                        shared.raw_scales(ring.stage) + g * SCALE_GROUP_BYTES,
                        src,
                        atom_bytes,
                        full,
                    );
                }
            }
            ring.advance();
        }
    }
}

/// The thread of the producer warpgroup that fills the weight ring: the first of its second
/// warp (the first warp's first thread produces tokens).
const WEIGHT_PRODUCER_THREAD: u32 = 32;

/// The weight producer ([`Problem::WEIGHT_RING`]): per tile and 256-K stage, into the next
/// slot of the weight ring, one TMA box per chunk of the gate rows and of the up rows (a
/// plain tile's two halves of outputs) and one bulk copy per scale group of the stage's four
/// atoms, and the [`SlotHeader`]. The boxes zero-fill past K; a partial last stage's missing
/// atoms repeat the row group's last (finite codes times zero weights add exactly 0). Before a
/// segment's stages it writes the segment's [`SegmentRecord`]. After the CTA's last stage it
/// completes one more slot without copies, after the end record: the consumers' last stage
/// reads the slot after it (the next segment's first stage, of which there is none) and
/// discards what it reads.
#[inline(always)]
unsafe fn produce_weights<P: Problem>(problem: &P, shared: &Shared, work: &Work<P::Space>) {
    let tile = shared.tile;
    let groups = if P::GATED { 2 } else { 1 };
    let bytes = WEIGHT_DATA_BYTES + groups * SCALE_GROUP_BYTES;
    let mut ring = RingPosition::<WEIGHT_STAGES>::new();
    // The fitted tiles' producer thread has no registers to hold a segment's source across
    // its stages: it finds it again every stage (from the descriptor, in L1). The others find
    // it once a segment.
    let every_stage = tile.fits_groups();
    // SAFETY (prefetches): the maps were written before this grid's dependency wait returned
    // (by the host, or by the preparation pass from its parameters).
    let prefetch = |source: &WeightSource| unsafe {
        copy::prefetch_tensor_map(source.gate_map);
        copy::prefetch_tensor_map(source.up_map);
    };
    // The consumers' segment records, one a segment (see `SegmentRecord`).
    let mut records = 0;
    for segment in work.segments() {
        // SAFETY: no consumer still reads the record's slot (see `SEGMENT_RECORDS`).
        unsafe { SegmentRecord::write(shared.segment_record(records), Some(&segment)) };
        records += 1;
        let segment_source = (!every_stage).then(|| problem.weight_source(&segment.tile, tile));
        if let Some(source) = &segment_source {
            prefetch(source);
        }
        for stage in segment.first_stage..segment.first_stage + segment.stages {
            let source = match segment_source {
                Some(source) => source,
                None => {
                    let span = TileSpan {
                        group: reg::opaque(segment.tile.group),
                        local: reg::opaque(segment.tile.local),
                        ..segment.tile
                    };
                    let source = problem.weight_source(&span, tile);
                    if stage == segment.first_stage {
                        prefetch(&source);
                    }
                    source
                }
            };
            let slot = shared.weight_slot(ring.stage);
            let full = shared.weight_full(ring.stage);
            let first_atom = stage * ATOMS_PER_STAGE;
            // SAFETY: barriers are initialized; every copy lands inside the slot, the boxes
            // inside the maps (or zero-filled past them), the atoms inside the row groups'.
            unsafe {
                mbarrier::wait_suspending(shared.weight_empty(ring.stage), ring.empty_parity());
                if P::GATED {
                    smem::st_v2(slot + WEIGHT_SLOT_HEADER, [source.header.gate, source.header.up]);
                }
                mbarrier::arrive_expect_tx(full, bytes);
                for h in 0..WEIGHT_CHUNKS_PER_STAGE {
                    let x = (stage * STAGE_ROW_BYTES as u32 + h * WEIGHT_BOX_BYTES) as i32;
                    let chunk = slot + h * WEIGHT_CHUNK_BYTES;
                    copy::tensor_2d(chunk, source.gate_map, x, source.gate_row as i32, full);
                    copy::tensor_2d(
                        chunk + WEIGHT_BOX_ROWS * WEIGHT_BOX_BYTES,
                        source.up_map,
                        x,
                        source.up_row as i32,
                        full,
                    );
                }
                for g in 0..groups {
                    let atoms = if g == 0 {
                        source.gate_scales
                    } else {
                        source.up_scales
                    };
                    let dst = slot + WEIGHT_DATA_BYTES + g * SCALE_GROUP_BYTES;
                    if first_atom + ATOMS_PER_STAGE <= source.atoms {
                        copy::bulk(
                            dst,
                            atoms.add(first_atom as usize * ATOM_BYTES),
                            SCALE_GROUP_BYTES,
                            full,
                        );
                    } else {
                        for a in 0..ATOMS_PER_STAGE {
                            let atom = (first_atom + a).min(source.atoms - 1);
                            copy::bulk(
                                dst + a * ATOM_BYTES as u32,
                                atoms.add(atom as usize * ATOM_BYTES),
                                ATOM_BYTES as u32,
                                full,
                            );
                        }
                    }
                }
            }
            ring.advance();
        }
    }
    // SAFETY: barriers are initialized; the header inside the slot (the consumers add it to
    // their scale offsets even where they discard what they read); the end record's slot is
    // free (as a segment's).
    unsafe {
        SegmentRecord::write(shared.segment_record(records), None);
        mbarrier::wait_suspending(shared.weight_empty(ring.stage), ring.empty_parity());
        if P::GATED {
            smem::st_v2(shared.weight_slot(ring.stage) + WEIGHT_SLOT_HEADER, [0, 0]);
        }
        mbarrier::arrive(shared.weight_full(ring.stage));
    }
}

/// The producer thread for pre-decoded tokens: per tile and 64-K slice, one TMA box of fp16
/// tokens (`K_PER_SLICE ×` the tile's tokens, or a fitted tile's width; 128-byte swizzle)
/// straight into the decoded ring.
#[inline(always)]
unsafe fn produce_predecoded<P: Problem>(problem: &P, shared: &Shared, work: &Work<P::Space>) {
    let tile = shared.tile;
    let mut ring = RingPosition::<DECODED_STAGES>::new();
    for segment in work.segments() {
        let (token_row, tokens) = problem.token_rows(&segment.tile, tile);
        let (map, bytes) = problem.token_box(tokens, tile);
        let first_slice = segment.first_stage * SLICES_PER_STAGE;
        for slice in first_slice..first_slice + segment.stages * SLICES_PER_STAGE {
            let full = shared.decoded_full(ring.stage);
            // SAFETY: barriers are initialized; the box fills the tile's rows of one decoded
            // slice (rows past the buffer are zeros).
            unsafe {
                mbarrier::wait_suspending(shared.decoded_empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, bytes);
                copy::tensor_2d(
                    shared.decoded_slice(ring.stage),
                    map,
                    (slice * K_PER_SLICE) as i32,
                    token_row as i32,
                    full,
                );
            }
            ring.advance();
        }
    }
}

/// Decoder warpgroup `decoder`, thread `thread` of it: each half of the warpgroup (two warps)
/// decodes one 64-K slice of every raw 256-K stage, half `h` slice [`decoder_slice`]`(decoder,
/// h)`, into its decoded slot, as (token, scale block) items: one 16-element block per thread.
#[inline(always)]
unsafe fn decode_tokens<P: Problem>(
    problem: &P,
    packed: &PackedTokens,
    shared: &Shared,
    work: &Work<P::Space>,
    decoder: u32,
    thread: u32,
) {
    let tile = shared.tile;
    let my_slice = decoder_slice(decoder, thread / DECODER_HALF_THREADS);
    // Warp `w` of the half decodes tokens `w·T/2 .. (w + 1)·T/2`, eight per round, lane `l`
    // token `l / 4` of the round and word `l % 4`: a round's stores hit 32 distinct banks.
    let (warp, lane) = ((thread % DECODER_HALF_THREADS) / 32, thread % 32);
    let tokens_per_warp = tile.tokens / 2;
    let word = lane % BLOCKS_PER_SLICE;
    let blocks_of_k = packed.k / SCALE_BLOCK_K as u32;
    let mut raw = RingPosition::<RAW_STAGES>::new();
    let mut decoded = RingPosition::<DECODED_STAGES>::new();
    for segment in work.segments() {
        let m0 = problem.job(&segment.tile, tile).token_row;
        for stage in segment.first_stage..segment.first_stage + segment.stages {
            // SAFETY: barriers are initialized; the producer fills this raw stage.
            unsafe { mbarrier::wait_suspending(shared.raw_full(raw.stage), raw.full_parity()) };
            for slice in 0..SLICES_PER_STAGE {
                if slice != my_slice {
                    decoded.advance();
                    continue;
                }
                // Blocks past K (a partial last stage) decode to zeros.
                let exists = stage * BLOCKS_PER_STAGE + stage_block(slice, word) < blocks_of_k;
                // SAFETY: as above; consumers release decoded slices.
                unsafe {
                    mbarrier::wait_suspending(shared.decoded_empty(decoded.stage), decoded.empty_parity())
                };
                let mut local = lane / BLOCKS_PER_SLICE;
                while local < tokens_per_warp {
                    let row = warp * tokens_per_warp + local;
                    // SAFETY: row < tokens ≤ raw rows, block < 4: inside the stage buffers.
                    unsafe {
                        decode_token_block::<P::Codec>(
                            shared,
                            raw.stage,
                            decoded.stage,
                            m0,
                            row,
                            slice,
                            word,
                            exists,
                        )
                    };
                    local += 32 / BLOCKS_PER_SLICE;
                }
                fence::proxy_async_shared();
                // SAFETY: barrier initialized.
                unsafe { mbarrier::arrive(shared.decoded_full(decoded.stage)) };
                decoded.advance();
            }
            // SAFETY: barrier initialized; this thread's reads of the raw stage are done.
            unsafe { mbarrier::arrive(shared.raw_empty(raw.stage)) };
            raw.advance();
        }
    }
}

/// Threads of half a decoder warpgroup: the decoders of one slice per stage.
const DECODER_HALF_THREADS: u32 = WARPGROUP_THREADS / 2;

/// The slice of each raw stage that half `half` of decoder warpgroup `decoder` decodes (slices
/// `j` with `j % DECODER_WARPGROUPS == decoder`).
#[inline(always)]
const fn decoder_slice(decoder: u32, half: u32) -> u32 {
    decoder + DECODER_WARPGROUPS * half
}

/// Decodes token `row`'s scale block for word `word` of slice `slice` (block
/// [`stage_block`]`(slice, word)` of the raw stage) into decoded row `row`: its pair `p`
/// (codec `C`'s `PAIR_ELEMENTS`) is word `word` of 16-byte chunk `p` (see `sm90::tokens`).
/// A block that does not `exist` (past K) becomes zeros: its scale atom was not copied.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn decode_token_block<C: PairCodec>(
    shared: &Shared,
    raw_stage: u32,
    decoded_stage: u32,
    m0: u32,
    row: u32,
    slice: u32,
    word: u32,
    exists: bool,
) {
    let block = stage_block(slice, word);
    // The block's 8 packed bytes are half `block % 2` of 16-byte chunk `block / 2` of the row
    // (the TMA boxes stack the stage's rows as one 128-byte-swizzled tile).
    let packed = shared.raw_tokens(raw_stage) + sw128_offset(row, block / 2) + 8 * (block % 2);
    // SAFETY: inside the raw stage (the caller's contract); 8-byte aligned.
    let [lo, hi] = unsafe { smem::ld_v2(packed) };
    let token = m0 + row;
    // The word of the block's scale atom that holds this token's 4 codes: the stage's atoms of
    // one 128-row group are laid out as a 128-row × 256-K matrix (layout.rs).
    let group = BlockedScales::new(ATOM_ROWS, K_PER_STAGE as usize);
    let scale_word = shared.raw_scales(raw_stage)
        + (token / 128 - m0 / 128) * SCALE_GROUP_BYTES
        + group.offset((token % 128) as usize, (block & !3) as usize) as u32;
    // SAFETY: inside the raw scale stage.
    let codes = unsafe { smem::ld_b32(scale_word) };
    let scale = if exists {
        cvt::e4m3_byte_to_f16x2_broadcast(codes, block % 4)
    } else {
        0
    };
    let pairs = scaled_pairs::<C>(lo, hi, scale);
    // Pair p is word `word` of chunk p of the row; the row's address is 128-byte aligned, so
    // the offset within it ORs in (one LOP3 per store).
    let row_addr = shared.decoded_slice(decoded_stage) + sw128_row(row);
    for (p, pair) in pairs.iter().enumerate() {
        // SAFETY: row < tokens, chunk < 8: inside the decoded slice.
        unsafe { smem::st_b32(row_addr | sw128_in_row(row, p as u32) | (4 * word), *pair) };
    }
}

/// One thread's weights for one 256-K stage: for the gate row and the up row, chunk `h` (of
/// [`WEIGHT_CHUNKS_PER_STAGE`]) holds the 16 bytes of blocks [`stage_block`]`(2h, t)` (words 0,
/// 1: slice `2h`) and `stage_block(2h + 1, t)` (words 2, 3: slice `2h + 1`), and `*_scales[h]`
/// their two e4m3 codes (low byte: slice `2h`).
#[derive(Clone, Copy)]
pub(crate) struct WeightStage {
    gate: [[u32; 4]; WEIGHT_CHUNKS],
    up: [[u32; 4]; WEIGHT_CHUNKS],
    gate_scales: [u32; WEIGHT_CHUNKS],
    up_scales: [u32; WEIGHT_CHUNKS],
}

/// [`WEIGHT_CHUNKS_PER_STAGE`] as an array length.
const WEIGHT_CHUNKS: usize = WEIGHT_CHUNKS_PER_STAGE as usize;

impl WeightStage {
    /// No weights (all zero): what the pipeline carries past a CTA's last stage, and the blocks
    /// past K of a partial last stage.
    const ZERO: Self = Self {
        gate: [[0; 4]; WEIGHT_CHUNKS],
        up: [[0; 4]; WEIGHT_CHUNKS],
        gate_scales: [0; WEIGHT_CHUNKS],
        up_scales: [0; WEIGHT_CHUNKS],
    };
}

/// Where a consumer thread sits in the tile: its quad lane `t` (which picks its scale blocks,
/// [`stage_block`]) and the output `n_in_tile` (from warpgroup, warp and row group `g`) of its
/// gate fragment row.
pub(crate) struct ConsumerLane {
    t: u32,
    n_in_tile: u32,
}

impl ConsumerLane {
    /// The lane of consumer thread `thread` (meaningless for other threads, and unused there).
    #[inline(always)]
    pub fn new(thread: u32, gated: bool) -> Self {
        let (warpgroup, warp, lane) = (thread / WARPGROUP_THREADS, (thread / 32) % 4, thread % 32);
        let (g, t) = (lane / 4, lane % 4);
        Self {
            t,
            n_in_tile: config::gate_output(gated, warpgroup, warp, g),
        }
    }

    /// This thread's gate row (an output) in `job`'s tile.
    #[inline(always)]
    pub fn output(&self, job: &TileJob) -> u32 {
        job.n0 + self.n_in_tile
    }
}

/// Where one consumer thread's weights are in one tile, as byte offsets from the matrices'
/// bases (a dense problem keeps the bases in kernel parameters, so only the offsets take
/// registers; equal gate and up offsets share one): the start of its gate and up rows, the
/// scale of its first block in the rows' first atom, and the [`ChunkLimits`] of its chunks.
#[derive(Clone, Copy)]
pub(crate) struct RowOffsets {
    gate: usize,
    up: usize,
    gate_scale: usize,
    up_scale: usize,
    limits: ChunkLimits,
}

/// One consumer thread's chunks in a row: chunk `h` of stage `s` holds the blocks
/// `16s + 8h + 2t` and the next (t its quad lane), so its bytes start at `data + 128s + 64h`
/// into the row and its scale pair sits in atom `atom + 4s + 2h`. A partial last stage has
/// chunks past K: their offsets are clamped to the row's last chunk and last atom, so that
/// every load stays unconditional and inside the row. Those values are finite (a NaN scale
/// there makes the row's true result NaN anyway), and the token operand is zero for every block
/// past K (both token decoders and the pre-decoder write zeros there), so they add exactly 0.
#[derive(Clone, Copy)]
pub(crate) struct ChunkLimits {
    data: u32,
    atom: u32,
    last_data: u32,
    last_atom: u32,
}

impl ChunkLimits {
    /// Byte offset in the row, and scale offset from the row's first atom, of chunk `h` of
    /// stage `stage`.
    #[inline(always)]
    fn chunk(&self, stage: u32, h: u32) -> (usize, usize) {
        let data = (self.data + stage * STAGE_ROW_BYTES as u32 + h * CHUNK_STRIDE as u32).min(self.last_data);
        let atom = (self.atom + stage * ATOMS_PER_STAGE + h * CHUNK_ATOMS).min(self.last_atom);
        (data as usize, atom as usize * ATOM_BYTES)
    }
}

/// The base pointers [`RowOffsets`] are relative to: gate and up weights and their scales.
#[derive(Clone, Copy)]
pub(crate) struct WeightBases {
    pub gate: *const u8,
    pub up: *const u8,
    pub gate_scales: *const u8,
    pub up_scales: *const u8,
}

/// Bytes between the blocked scales of rows `r` and `r + PLAIN_UP_ROW_OFFSET` (`r % 64 < 32`,
/// the rows plain gate halves use): 4, so that a plain tile's gate and up scale pairs lie in one
/// aligned 8-byte word ([`RowPointers::load_chunk`]).
const PLAIN_UP_SCALE_SHIFT: usize = {
    let layout = BlockedScales::new(128, 64);
    let shift = layout.offset(config::PLAIN_UP_ROW_OFFSET as usize, 0) - layout.offset(0, 0);
    assert!(shift == 4);
    // The same for every gate row, in both halves of the 128-row group.
    assert!(layout.offset(31 + 32, 3) - layout.offset(31, 3) == shift);
    assert!(layout.offset(64 + 32, 2) - layout.offset(64, 2) == shift);
    assert!(layout.offset(95 + 32, 1) - layout.offset(95, 1) == shift);
    shift
};

impl WeightBases {
    /// Bases whose up half is the gate matrix `b` (`k` fp4 per row) shifted by
    /// [`config::PLAIN_UP_ROW_OFFSET`] rows: a dense plain tile with
    /// [`RowOffsets::shifted_plain`].
    #[inline(always)]
    pub fn shifted_up(b: *const u8, b_scales: *const u8, k: u32) -> Self {
        Self {
            gate: b,
            up: b.wrapping_add(config::PLAIN_UP_ROW_OFFSET as usize * k as usize / 2),
            gate_scales: b_scales,
            up_scales: b_scales.wrapping_add(PLAIN_UP_SCALE_SHIFT),
        }
    }

    /// The bases of `job`'s tile.
    #[inline(always)]
    pub fn of(job: &TileJob) -> Self {
        Self {
            gate: job.gate,
            up: job.up,
            gate_scales: job.gate_scales,
            up_scales: job.up_scales,
        }
    }
}

/// Bytes between a thread's weight chunks `h` and `h + 1` in a row's stage (blocks 8 apart).
const CHUNK_STRIDE: usize = 8 * (stage_block(2, 0) - stage_block(0, 0)) as usize;
/// Scale atoms between chunks `h` and `h + 1` (blocks 8 apart).
const CHUNK_ATOMS: u32 = (stage_block(2, 0) - stage_block(0, 0)) / 4;
/// Bytes of one row's stage of packed fp4.
const STAGE_ROW_BYTES: usize = K_PER_STAGE as usize / 2;
/// Scale atoms of one stage (for one 128-row block).
const ATOMS_PER_STAGE: u32 = BLOCKS_PER_STAGE / 4;

impl RowOffsets {
    /// The rows of `lane` in `job`'s tile (gated or plain). A plain tile's rows past N (its last
    /// tile may hold only 64 outputs) read the last row instead; their outputs are not stored.
    #[inline(always)]
    pub fn new(job: &TileJob, lane: &ConsumerLane, gated: bool) -> Self {
        let output = lane.output(job);
        let last = job.n - 1;
        let (gate_row, up_row) = if gated {
            (output, output + job.up_row_offset)
        } else {
            (
                output.min(last),
                (output + config::PLAIN_UP_ROW_OFFSET).min(last) + job.up_row_offset,
            )
        };
        Self::of_rows(job, lane, gate_row, up_row)
    }

    /// The rows of `lane` in a dense plain tile whose up bases are its gate bases shifted by
    /// [`config::PLAIN_UP_ROW_OFFSET`] rows ([`WeightBases::shifted_up`]), so that one offset
    /// serves both halves, as in a gated tile. A lane's gate row lies in the first half of a
    /// 64-row group (`n % 64 < 32`), so its up row is in the same 128-row group of the scale
    /// layout. Lanes past N (a last tile of 64 outputs) read the row of the last 64 with the
    /// same place in its group (inside B, shifted too); their outputs are not stored.
    #[inline(always)]
    pub fn shifted_plain(job: &TileJob, lane: &ConsumerLane) -> Self {
        let output = lane.output(job);
        let row = if output < job.n {
            output
        } else {
            job.n - 64 + output % 64
        };
        Self::of_rows(job, lane, row, row)
    }

    /// The offsets of `lane`'s gate and up rows `gate_row` and `up_row`.
    #[inline(always)]
    fn of_rows(job: &TileJob, lane: &ConsumerLane, gate_row: u32, up_row: u32) -> Self {
        let block = stage_block(0, lane.t);
        let row_bytes = job.k as usize / 2;
        let layout = BlockedScales::new(job.weight_rows as usize, job.k as usize);
        // The scale of the thread's block in the row's first atom (its column within an atom
        // is the same in every stage and chunk).
        let first_atom_scale = |row: u32| layout.offset(row as usize, (block % 4) as usize);
        Self {
            gate: gate_row as usize * row_bytes,
            up: up_row as usize * row_bytes,
            gate_scale: first_atom_scale(gate_row),
            up_scale: first_atom_scale(up_row),
            limits: ChunkLimits {
                data: 8 * block,
                atom: block / 4,
                last_data: row_bytes as u32 - 16,
                last_atom: layout.k_blocks as u32 - 1,
            },
        }
    }

    /// The rows as pointers: `bases` plus the offsets.
    #[inline(always)]
    pub fn at(&self, bases: &WeightBases) -> RowPointers {
        RowPointers {
            gate: bases.gate.wrapping_add(self.gate),
            up: bases.up.wrapping_add(self.up),
            gate_scales: bases.gate_scales.wrapping_add(self.gate_scale),
            up_scales: bases.up_scales.wrapping_add(self.up_scale),
            limits: self.limits,
        }
    }
}

/// [`RowOffsets`] added to their bases: what a grouped problem carries through the mainloop
/// (its bases differ per group, so they would take registers anyway).
#[derive(Clone, Copy)]
pub(crate) struct RowPointers {
    gate: *const u8,
    up: *const u8,
    gate_scales: *const u8,
    up_scales: *const u8,
    limits: ChunkLimits,
}

impl RowPointers {
    /// Issues the loads of chunk `h` of stage `stage` into `w` (they complete while earlier
    /// slices compute); see [`ChunkLimits`] for a partial last stage. `plain`: a plain tile's
    /// rows, whose up scale pair lies [`PLAIN_UP_SCALE_SHIFT`] bytes after the gate pair in the
    /// same aligned 8-byte word (at byte 0 or 2 of each half: even columns, gate rows in the
    /// first and third 32 of their 128-row group), so one 8-byte load brings both, each in its
    /// half's bits [`plain_scale_shift`]`(t)..` (moved down where they are converted, in
    /// [`slice_fragments`]: a shift here, next to the load, waited for it at once). Lanes whose
    /// rows were clamped to the last row (outputs past N, not stored) read other pairs of the
    /// same atom.
    ///
    /// # Safety
    /// The rows of a tile of this launch; `stage` one of its stages; `h` < [`WEIGHT_CHUNKS`].
    #[inline(always)]
    pub unsafe fn load_chunk(&self, stage: u32, h: usize, plain: bool, w: &mut WeightStage) {
        let (data, scale) = self.limits.chunk(stage, h as u32);
        // SAFETY: offsets inside the rows and their scales (host contract; clamped for a
        // partial last stage); the chunks are 16-byte aligned, the scale pairs 2-byte aligned
        // (even columns); an atom (512 bytes, 512-byte aligned from the matrix base, which is
        // 16-byte aligned) holds the whole 8-byte word of its pairs.
        unsafe {
            w.gate[h] = mem::ld_global_stream_v4_b32(self.gate.add(data) as *const u32);
            w.up[h] = mem::ld_global_stream_v4_b32(self.up.add(data) as *const u32);
            if plain {
                let pair = self.gate_scales.add(scale) as usize;
                [w.gate_scales[h], w.up_scales[h]] = mem::ld_global_nc_v2_b32((pair & !7) as *const u32);
            } else {
                w.gate_scales[h] = mem::ld_global_nc_u16(self.gate_scales.add(scale) as *const u16) as u32;
                w.up_scales[h] = mem::ld_global_nc_u16(self.up_scales.add(scale) as *const u16) as u32;
            }
        }
    }
}

/// Where one consumer thread's weights sit in every weight slot ([`Problem::WEIGHT_RING`]): the
/// byte offsets in the slot of chunk 0 of its gate row and of its up row (chunk `h` lies
/// [`WEIGHT_CHUNK_BYTES`] further), and, from the slot's scales, of the word that holds the
/// scale pair of its gate row's chunk 0 and that of its up row's (chunk `h`: `CHUNK_ATOMS`
/// atoms further). A gated tile's rows are taken in the first half of their 128-row group (the
/// slot's [`SlotHeader`] adds the other half's shift); a plain tile's 128 outputs are one
/// whole group, and one 8-byte word holds both pairs, as in global memory
/// ([`RowPointers::load_chunk`]). The same for every tile: computed once.
#[derive(Clone, Copy)]
pub(crate) struct SlotOffsets {
    gate: u32,
    up: u32,
    gate_scale: u32,
    up_scale: u32,
}

impl SlotOffsets {
    /// The offsets of `lane`, in gated or plain tiles.
    #[inline(always)]
    pub fn new(lane: &ConsumerLane, gated: bool) -> Self {
        let row = lane.n_in_tile;
        let gate = row * WEIGHT_BOX_BYTES + 16 * lane.t;
        let up_rows = if gated {
            WEIGHT_BOX_ROWS
        } else {
            config::PLAIN_UP_ROW_OFFSET
        };
        // The stage's four atoms of a 128-row group, as a 128-row × 256-K matrix (layout.rs).
        let group = BlockedScales::new(ATOM_ROWS, K_PER_STAGE as usize);
        let pair = group.offset(row as usize, stage_block(0, lane.t) as usize) as u32;
        let (gate_scale, up_scale) = if gated {
            (pair & !3, SCALE_GROUP_BYTES + (pair & !3))
        } else {
            (pair & !7, 0)
        };
        Self {
            gate,
            up: gate + up_rows * WEIGHT_BOX_BYTES,
            gate_scale,
            up_scale,
        }
    }
}

/// Waits until weight slot `position` is full and reads this thread's weights of its stage
/// (`offsets`) into the layout [`RowPointers::load_chunk`] gives them, every scale pair at
/// [`plain_scale_shift`] in its word.
///
/// # Safety
/// A consumer thread of a problem with [`Problem::WEIGHT_RING`], in ring order.
#[inline(always)]
unsafe fn read_weight_slot(
    shared: &Shared,
    position: &RingPosition<WEIGHT_STAGES>,
    offsets: &SlotOffsets,
    gated: bool,
) -> WeightStage {
    let slot = shared.weight_slot(position.stage);
    // SAFETY: barrier initialized; the weight producer fills the slot.
    unsafe { mbarrier::wait(shared.weight_full(position.stage), position.full_parity()) };
    let scales = slot + WEIGHT_DATA_BYTES;
    let (gate_scale, up_scale) = if gated {
        // SAFETY: written by the producer before the slot's arrival.
        let [gate, up] = unsafe { smem::ld_v2(slot + WEIGHT_SLOT_HEADER) };
        (scales + offsets.gate_scale + gate, scales + offsets.up_scale + up)
    } else {
        (scales + offsets.gate_scale, 0)
    };
    let mut w = WeightStage::ZERO;
    for h in 0..WEIGHT_CHUNKS {
        let chunk = slot + h as u32 * WEIGHT_CHUNK_BYTES;
        let atoms = h as u32 * CHUNK_ATOMS * ATOM_BYTES as u32;
        // SAFETY: inside the slot (16-, 8- and 4-byte aligned as loaded).
        unsafe {
            w.gate[h] = smem::ld_v4(chunk + offsets.gate);
            w.up[h] = smem::ld_v4(chunk + offsets.up);
            if gated {
                w.gate_scales[h] = smem::ld_b32(gate_scale + atoms);
                w.up_scales[h] = smem::ld_b32(up_scale + atoms);
            } else {
                [w.gate_scales[h], w.up_scales[h]] = smem::ld_v2(gate_scale + atoms);
            }
        }
    }
    w
}

/// Releases weight slot `position` (every consumer thread, after its reads).
#[inline(always)]
fn release_weight_slot(shared: &Shared, position: &RingPosition<WEIGHT_STAGES>) {
    // SAFETY: barrier initialized.
    unsafe { mbarrier::arrive(shared.weight_empty(position.stage)) };
}

/// 256-K stages of weights each CTA prefetches into L2 before it waits for the previous kernel.
const WARM_UP_STAGES: u32 = 2;

/// Starts loading the first [`WARM_UP_STAGES`] stages of this CTA's weights (and their scales)
/// into L2, before the dependency wait: with a programmatic launch this overlaps the previous
/// kernel's tail, and the first loads then hit L2 (and a warm TLB) instead of DRAM. L2 is
/// coherent for every SM, so data the previous kernel still writes cannot go stale this way.
/// Quad lane 0 of each consumer row prefetches its gate row, lane 1 its up row; consumer threads
/// 2 and 3 the two scale ranges. Only for problems whose tiles are known before the wait.
#[inline(always)]
unsafe fn warm_up_weights<P: Problem>(
    problem: &P,
    tile: Tile,
    work: &Work<P::Space>,
    lane: &ConsumerLane,
    thread: u32,
) {
    let Some(segment) = work.segments().next() else {
        return;
    };
    let job = problem.job(&segment.tile, tile);
    let stages = segment.stages.min(WARM_UP_STAGES);
    let stage_bytes = (job.k as usize / 2).saturating_sub(segment.first_stage as usize * STAGE_ROW_BYTES);
    let row_bytes = (stages as usize * STAGE_ROW_BYTES).min(stage_bytes) as u32;
    let row = lane.output(&job).min(job.n - 1) as usize;
    let data = row * (job.k as usize / 2) + segment.first_stage as usize * STAGE_ROW_BYTES;
    let scales = BlockedScales::new(job.weight_rows as usize, job.k as usize);
    let first_atom = (segment.first_stage * BLOCKS_PER_STAGE / 4) as usize;
    let atoms = (scales.k_blocks - first_atom).min(stages as usize * BLOCKS_PER_STAGE as usize / 4);
    let scale_offset = scales.atom_offset(job.n0 as usize / ATOM_ROWS, first_atom);
    let scale_bytes = (atoms * ATOM_BYTES) as u32;
    // SAFETY: the prefetched ranges are this CTA's first stages of its gate and up rows and of
    // their scales (host contract), 16-byte aligned multiples of 16 bytes.
    unsafe {
        match lane.t {
            0 => copy::prefetch_bulk_l2(job.gate.add(data), row_bytes),
            1 => copy::prefetch_bulk_l2(
                job.up
                    .add(data + job.up_row_offset as usize * (job.k as usize / 2)),
                row_bytes,
            ),
            _ => {}
        }
        match thread {
            2 => copy::prefetch_bulk_l2(job.gate_scales.add(scale_offset), scale_bytes),
            3 => copy::prefetch_bulk_l2(job.up_scales.add(scale_offset), scale_bytes),
            _ => {}
        }
    }
}

/// Where a plain tile's scale pairs sit in the words [`RowPointers::load_chunk`] loads: bit
/// 0 or 16, from quad lane `t` (its blocks `2t, 2t + 1` are bytes `2t % 4` of the atom line; the
/// scale matrices are 16-byte aligned).
#[inline(always)]
const fn plain_scale_shift(t: u32) -> u32 {
    16 * (t % 2)
}

/// The 16 fragment registers of one 64-K slice: for each of its 4 k16 steps, `[a0, a1, a2, a3]`
/// = (gate, pair 2s), (up, pair 2s), (gate, pair 2s + 1), (up, pair 2s + 1) of the thread's
/// block [`stage_block`]`(j, t)`. `scale_shift`: where the scale pairs sit in `w`'s scale words
/// (0, or [`plain_scale_shift`] for a plain tile).
#[inline(always)]
fn slice_fragments<C: PairCodec>(w: &WeightStage, j: usize, scale_shift: u32) -> [[u32; 4]; 4] {
    let (h, odd) = (j / 2, j % 2 == 1);
    let words = 2 * (j % 2);
    // One conversion per scale pair (LLVM merges the two slices' `cvt`s), one `prmt` per slice.
    let pair = |word: u32| (word >> scale_shift) as u16;
    let gate_scale = cvt::f16x2_broadcast_half(cvt::e4m3x2_to_f16x2(pair(w.gate_scales[h])), odd);
    let up_scale = cvt::f16x2_broadcast_half(cvt::e4m3x2_to_f16x2(pair(w.up_scales[h])), odd);
    let gate = scaled_pairs::<C>(w.gate[h][words], w.gate[h][words + 1], gate_scale);
    let up = scaled_pairs::<C>(w.up[h][words], w.up[h][words + 1], up_scale);
    let mut steps = [[0u32; 4]; 4];
    for (s, step) in steps.iter_mut().enumerate() {
        *step = [gate[2 * s], up[2 * s], gate[2 * s + 1], up[2 * s + 1]];
    }
    steps
}

/// A consumer thread: per segment, the mainloop over its 64-K slices ([`segment_mainloop`]; a
/// fitted problem's at its tile's width), then the epilogue (whole tile) or the stream-K fix-up
/// ([`finish_segment`]). The weight pipeline runs across segments: the last stage of a segment
/// loads the first stage of the next one, so a new tile starts without waiting for memory.
#[inline(always)]
unsafe fn consume<P: Problem, const ACC: usize, const SETS: usize>(
    problem: &P,
    shared: &Shared,
    work: &Work<P::Space>,
    lane: &ConsumerLane,
    mma: &impl Fn(&mut [f32; ACC], [u32; 4], u64),
) {
    let tile = shared.tile;
    let mut segments = work.segments();
    let mut weights = RingPosition::new();
    let slot_offsets = SlotOffsets::new(lane, P::GATED);
    let current = if P::WEIGHT_RING {
        // The first stage's slot (without a first stage, the producer's closing slot).
        // SAFETY: the ring's first slot.
        let current = unsafe { read_weight_slot(shared, &weights, &slot_offsets, P::GATED) };
        release_weight_slot(shared, &weights);
        weights.advance();
        current
    } else {
        match segments.clone().next() {
            Some(first) => {
                let job = problem.job(&first.tile, tile);
                // SAFETY: the first stage of the first segment's tile.
                unsafe { problem.load_weights(&problem.weight_rows(&job, lane), first.first_stage) }
            }
            None => WeightStage::ZERO,
        }
    };
    // The weight ring's scale pairs sit in 32-bit words as a plain tile's do.
    let scale_shift = if P::GATED && !P::WEIGHT_RING {
        0
    } else {
        plain_scale_shift(lane.t)
    };
    let mut pipeline = ConsumerPipeline {
        decoded: RingPosition::new(),
        weights,
        slot_offsets,
        fragments: [slice_fragments::<P::Codec>(&current, 0, scale_shift), [[0; 4]; 4]],
        current,
        scale_shift,
    };
    // The CTA's segments: from the weight producer's records where it writes them (`records`
    // counts those read), else walked here.
    let mut records = 0;
    let mut staging = Staging { owned: true };
    loop {
        let next = if P::WEIGHT_RING {
            // SAFETY: this consumer waited on the weight slot the record came with (the first
            // slot, read above, or the one the previous segment's last stage read).
            let segment = unsafe { SegmentRecord::read(shared.segment_record(records)) };
            records += 1;
            segment
        } else {
            segments.next()
        };
        let Some(segment) = next else {
            break;
        };
        let job = problem.job(&segment.tile, tile);
        // SAFETY (all): forwarded; `segments` now holds the segments after this one (where
        // they are walked here; the weight ring's problems never read it).
        let acc = if P::FITTED {
            // The tile's fitted width, warp-uniform (as the stage bounds): each width is its
            // own stage loop, whose wgmma pipeline ends inside it (a width chosen inside the
            // pipeline makes ptxas wait for every slice's wgmmas; perf log entry 111).
            let index = warp::shuffle_index(config::fitted_width_index(job.tokens), 0);
            // One width's stage loop, its accumulators widened to the launch's.
            macro_rules! at_width {
                ($index:literal, $wgmma:path) => {
                    widen(unsafe {
                        segment_mainloop::<P, { FITTED_WIDTHS[$index] as usize / 2 }, 1>(
                            problem,
                            shared,
                            lane,
                            &|acc, a, b| $wgmma(acc, a, b, true),
                            &job,
                            &segment,
                            &segments,
                            &mut pipeline,
                        )
                    })
                };
            }
            const {
                assert!(
                    matches!(FITTED_WIDTHS, [64, 128, 144, 176]),
                    "one arm per fitted width"
                )
            };
            match index {
                0 => at_width!(0, wgmma::m64n64k16),
                1 => at_width!(1, wgmma::m64n128k16),
                2 => at_width!(2, wgmma::m64n144k16),
                _ => at_width!(3, wgmma::m64n176k16),
            }
        } else {
            unsafe {
                segment_mainloop::<P, ACC, SETS>(
                    problem,
                    shared,
                    lane,
                    mma,
                    &job,
                    &segment,
                    &segments,
                    &mut pipeline,
                )
            }
        };
        // Whether a tile this segment finishes goes to the copy-out warps: all but the CTA's
        // last segment's. The mainloop read the weight slot of the next segment's first stage
        // (or the closing slot), which came with the next record.
        // SAFETY: that record, after the wait on its slot.
        let hand_off = P::COPY_OUT_WARPS && !unsafe { SegmentRecord::is_end(shared.segment_record(records)) };
        // SAFETY: forwarded.
        unsafe {
            finish_segment::<P, ACC>(
                problem,
                shared,
                work,
                lane,
                &segment,
                job,
                acc,
                &pipeline.decoded,
                &mut staging,
                hand_off,
            )
        };
    }
    if P::COPY_OUT_WARPS {
        // SAFETY: all consumer threads, once, after their last segment.
        unsafe { staging.finish(shared, sreg::thread_idx_x()) };
    }
}

/// `acc`, a tile's first `W` accumulators, as the launch's `ACC` (the rest zero: tokens past
/// the tile's width, which the epilogue does not write). Only fitted problems call it with
/// `W ≤ ACC`; the other instantiations are never run.
#[inline(always)]
fn widen<const W: usize, const ACC: usize>(acc: [f32; W]) -> [f32; ACC] {
    // A constant, not a repeat expression (see `segment_mainloop`'s accumulators).
    let mut wide = const { [0f32; ACC] };
    unrolled32!(W.min(ACC) / 4, |q| {
        for e in 0..4 {
            wide[4 * q + e] = acc[4 * q + e];
        }
    });
    wide
}

/// What a consumer carries from one segment to the next: its place in the decoded ring (and in
/// the weight ring, with its offsets in a slot), the weights of the next stage (loaded during
/// the previous segment's last stage) and the fragments of its first slice, and where its
/// scale pairs sit in the scale words.
struct ConsumerPipeline {
    decoded: RingPosition<DECODED_STAGES>,
    weights: RingPosition<WEIGHT_STAGES>,
    slot_offsets: SlotOffsets,
    current: WeightStage,
    fragments: [[[u32; 4]; 4]; 2],
    scale_shift: u32,
}

/// The mainloop of one segment of a consumer thread ([`consume`]) at `2·W` tokens (`mma`'s
/// width), for the segment's tile `job`: its stages' slices, the wgmma pipeline ended, its
/// decoded slots released (but the last, where an NVFP4 epilogue stages its tile), and its
/// accumulator sets summed. `following`: the CTA's segments after this one (the last stage
/// loads the first stage of the next).
///
/// # Safety
/// As [`consume`]; `segment` is the CTA's segment before `following`, and `pipeline` carries
/// the previous segment's state.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn segment_mainloop<P: Problem, const W: usize, const SETS: usize>(
    problem: &P,
    shared: &Shared,
    lane: &ConsumerLane,
    mma: &impl Fn(&mut [f32; W], [u32; 4], u64),
    job: &TileJob,
    segment: &Segment,
    following: &Segments<'_, P::Space>,
    pipeline: &mut ConsumerPipeline,
) -> [f32; W] {
    let tile = shared.tile;
    // A fitted problem's tile is at most `FITTED_MAX_TOKENS` wide: room for the whole next stage.
    let late_loads = tile.late_weight_loads() && !P::FITTED;
    let scale_shift = pipeline.scale_shift;
    let ConsumerPipeline {
        decoded,
        weights,
        slot_offsets,
        current,
        fragments,
        ..
    } = pipeline;
    let rows = problem.weight_rows(job, lane);
    // Warp-uniform stage bounds (a shuffle from lane 0 tells ptxas so): the stage loop's
    // control then stays in uniform registers, with no warp resynchronization per stage.
    let first = warp::shuffle_index(segment.first_stage, 0);
    let last = warp::shuffle_index(segment.first_stage + segment.stages - 1, 0);
    // What the last stage loads: the next segment's first stage (else its own stage again,
    // unused). Chosen here so that the loop body has one unconditional load; tiles with
    // late loads choose in the last stage instead, as they have no registers to carry the
    // choice through the loop.
    let tail = || match following.clone().next() {
        Some(following) => (
            problem.weight_rows(&problem.job(&following.tile, tile), lane),
            warp::shuffle_index(following.first_stage, 0),
        ),
        None => (rows, last),
    };
    let chosen_tail = (!late_loads && !P::WEIGHT_RING).then(tail);
    // SETS independent accumulator sets, k16 step s into set s % SETS: small tiles' wgmmas
    // are latency-bound when chained through one accumulator (see `Tile::accumulator_sets`).
    // A constant, not a repeat expression: rustc lowers `[0.0; 128]` to a loop that LLVM
    // does not unroll, which keeps a 256-token tile's accumulators in local memory.
    let mut sets = const { [[0f32; W]; SETS] };
    for stage in first..=last {
        // Loads in flight while this stage computes: the segment's next stage, else the tail
        // (the weight ring's next slot holds whichever it is).
        let (next_rows, next_stage) = if P::WEIGHT_RING || stage < last {
            (rows, stage + 1)
        } else {
            chosen_tail.unwrap_or_else(tail)
        };
        let next_rows = &next_rows;
        // SAFETY (all): a stage of this segment's tile or of the next segment's; the ring's
        // next slot.
        let mut next = if P::WEIGHT_RING {
            unsafe { read_weight_slot(shared, weights, slot_offsets, P::GATED) }
        } else if late_loads {
            WeightStage::ZERO
        } else {
            unsafe { problem.load_weights(next_rows, next_stage) }
        };
        // One 64-K slice; written out four times so that every fragment index is a constant
        // (a run-time index would move the fragment registers to local memory).
        macro_rules! slice {
            ($j:literal, $decode_next:expr) => {{
                // The ring has as many slots as a stage has slices, so each slice's slot (and
                // its wgmma descriptors) is the same in every stage and LLVM holds them across
                // the loop; a fitted problem's copies of the loop (one per width) have no
                // registers for that, so there each slice computes its own.
                let b = shared.decoded_slice(decoded.stage);
                let b = if P::FITTED { reg::opaque(b) } else { b };
                // SAFETY: barrier initialized; the decoder (or the TMA) fills the slice.
                unsafe { mbarrier::wait(shared.decoded_full(decoded.stage), decoded.full_parity()) };
                wgmma::fence();
                let steps = &fragments[$j % 2];
                mma(&mut sets[0], steps[0], wgmma_desc_sw128_k_major(b));
                mma(
                    &mut sets[1 % SETS],
                    steps[1],
                    wgmma_desc_sw128_k_major(b + 32),
                );
                mma(
                    &mut sets[2 % SETS],
                    steps[2],
                    wgmma_desc_sw128_k_major(b + 64),
                );
                mma(
                    &mut sets[3 % SETS],
                    steps[3],
                    wgmma_desc_sw128_k_major(b + 96),
                );
                wgmma::commit_group();
                // Decode the next slice while this one runs: its registers were last read by
                // the slice before, which `wait_group::<1>` below retires.
                fragments[($j + 1) % 2] = $decode_next;
                wgmma::wait_group::<1>();
                if stage > first || $j > 0 {
                    release_previous(shared, decoded);
                }
                decoded.advance();
            }};
        }
        slice!(0, slice_fragments::<P::Codec>(current, 1, scale_shift));
        if P::WEIGHT_RING {
            // The slot's reads are done (a slice later, so the arrive does not wait for them).
            release_weight_slot(shared, weights);
            weights.advance();
        }
        if late_loads {
            unsafe { problem.load_weight_chunk(next_rows, next_stage, 0, &mut next) };
        }
        slice!(1, slice_fragments::<P::Codec>(current, 2, scale_shift));
        slice!(2, slice_fragments::<P::Codec>(current, 3, scale_shift));
        if late_loads {
            unsafe { problem.load_weight_chunk(next_rows, next_stage, 1, &mut next) };
        }
        slice!(3, slice_fragments::<P::Codec>(&next, 0, scale_shift));
        *current = next;
    }
    // The wgmma pipeline ends here, inside each width's copy of the loop: where a fitted
    // tile's copies meet again, ptxas would otherwise count the narrower copies' accumulators
    // as writes in flight and serialize every wgmma for them.
    wgmma::wait_group::<0>();
    // An NVFP4 epilogue stages its tile in the segment's last decoded slice: released after it.
    if !P::NVFP4_OUT {
        release_previous(shared, decoded);
    }
    // Constant indices only (an iterator over the sets moves them to local memory).
    let mut acc = sets[0];
    let mut add_set = |set: usize| {
        unrolled32!(W / 4, |q| {
            for e in 0..4 {
                acc[4 * q + e] += sets[set][4 * q + e];
            }
        });
    };
    if SETS > 1 {
        add_set(1 % SETS);
    }
    if SETS > 2 {
        add_set(2 % SETS);
    }
    if SETS > 3 {
        add_set(3 % SETS);
    }
    acc
}

/// The end of one segment of a consumer thread ([`consume`]), after its mainloop: the stream-K
/// fix-up of a split tile, then, where the segment finishes its tile (`job`), the epilogue of
/// its accumulators `acc`. `decoded`: the consumer's place in the decoded ring (an NVFP4
/// epilogue stages in the segment's last slice, and releases it). `hand_off`: the 16-bit
/// epilogue stages the tile and hands it to the copy-out warps ([`Problem::COPY_OUT_WARPS`])
/// rather than copying it to C itself.
///
/// # Safety
/// As [`consume`]; `acc` holds the segment's sums.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn finish_segment<P: Problem, const ACC: usize>(
    problem: &P,
    shared: &Shared,
    work: &Work<P::Space>,
    lane: &ConsumerLane,
    segment: &Segment,
    job: TileJob,
    mut acc: [f32; ACC],
    decoded: &RingPosition<DECODED_STAGES>,
    staging: &mut Staging,
    hand_off: bool,
) {
    let tile = shared.tile;
    let thread = sreg::thread_idx_x();
    // SAFETY: the workspace and flags were sized by the host plan for this split.
    let finishes_tile = segment.count == 1 || unsafe { fix_up(work, tile, segment, &mut acc, thread) };
    if finishes_tile {
        // The job again from opaque copies of the tile's coordinates (its descriptor read
        // again), so that its fields are not held across the mainloop: for 128-token tiles,
        // and for fitted ones, whose widths' stage loops would otherwise each hold them.
        let recompute = P::RECOMPUTE_AFTER_MAINLOOP && (ACC == 64 || P::FITTED);
        let mut job = if recompute {
            let span = TileSpan {
                group: reg::opaque(segment.tile.group),
                local: reg::opaque(segment.tile.local),
                ..segment.tile
            };
            problem.job(&span, tile)
        } else {
            job
        };
        // SAFETY: after the dependency wait (`roles`).
        let (gate_factor, up_factor) = unsafe { problem.alpha_factors() };
        job.alpha_gate *= gate_factor;
        job.alpha_up *= up_factor;
        // SAFETY (both): outputs are checked against the tile's tokens and N; the staging
        // is the consumers' own.
        // The NVFP4 tile is computed after the staging (its fields would otherwise stay
        // live across it, and spill).
        if P::NVFP4_OUT {
            let target = || problem.nvfp4_tile(&segment.tile, &job);
            let staging = shared.decoded_slice(previous_stage(decoded));
            unsafe { nvfp4_epilogue(&job, &acc, lane, target, staging, thread) }
        } else {
            // Likewise the staging address, from an opaque base.
            let at = if recompute {
                reg::opaque(shared.base) + shared.plan.staging
            } else {
                shared.staging()
            };
            if P::COPY_OUT_WARPS {
                staging.reclaim();
            }
            if hand_off {
                unsafe { stage_tile(&job, &acc, lane, P::GATED, P::OUT_BF16, at) };
                unsafe { staging.hand_off(shared, &StagedTile::of(&job), thread) };
            } else {
                unsafe { epilogue(&job, &acc, lane, P::GATED, P::OUT_BF16, at, thread) }
            }
        }
    }
    if P::NVFP4_OUT {
        // The staging's generic writes before the slice's next asynchronous (TMA) fill.
        fence::proxy_async_shared();
        release_previous(shared, decoded);
    }
}

/// Stream-K fix-up of a segment of a split tile, called by all consumer threads together.
///
/// Segment 0 of a tile is the *reducer*: its CTA computes it last (a CTA's range ends inside
/// the tile), so the other segments are usually done by then. Every other segment stores its
/// partial sums to its slot and publishes them by writing the launch's epoch to the slot's flag
/// (a release at GPU scope by one thread after a barrier of the consumers), then goes on with
/// its next segment. The reducer waits until every other slot's flag holds this launch's epoch,
/// adds their partial sums to its own in segment order (a fixed order: results do not depend on
/// timing) and returns true. Flags are never reset: an older epoch (a finished or aborted
/// launch) never matches, so no launch depends on the previous one having cleaned up. Waits
/// only ever target CTAs that started earlier and publish without waiting (see
/// [`StreamK`]), so they cannot deadlock, however few SMs the launch runs on.
#[inline(always)]
unsafe fn fix_up<S: TileSpace + Copy, const ACC: usize>(
    work: &Work<S>,
    tile: Tile,
    segment: &Segment,
    acc: &mut [f32; ACC],
    thread: u32,
) -> bool {
    // Slots of the launch's tile (a fitted tile's narrower widths use the start of theirs).
    let slot_words = config::partial_slot_bytes(tile) as usize / 4;
    let slot_of = |index: u32| work.split.partial_slot(segment.tile.begin, index) as usize;
    // SAFETY (both): slots < 2 · CTAs, inside the workspace and flags the plan allocated.
    let slot = |index: u32| unsafe { work.workspace.add(slot_of(index) * slot_words) };
    let flag = |index: u32| unsafe { work.flags.add(slot_of(index)) };
    // Accumulators q·4 .. q·4 + 3 of every thread are contiguous 16-byte runs: coalesced.
    let element = |q: usize| (q * CONSUMER_THREADS as usize + thread as usize) * 4;
    if segment.index != REDUCER_SEGMENT {
        let mine = slot(segment.index);
        unrolled32!(ACC / 4, |q| {
            let words = [
                acc[4 * q].to_bits(),
                acc[4 * q + 1].to_bits(),
                acc[4 * q + 2].to_bits(),
                acc[4 * q + 3].to_bits(),
            ];
            // SAFETY: inside this segment's slot.
            unsafe { mem::st_global_v4_b32(mine.add(element(q)), words) };
        });
        fence::named_barrier::<FIXUP_BARRIER, CONSUMER_THREADS>();
        if thread == 0 {
            fence::acq_rel_gpu();
            // SAFETY: the slot's flag.
            unsafe { mem::st_relaxed_gpu_b32(flag(segment.index), work.epoch()) };
        }
        return false;
    }
    if work.aborting {
        return false; // test support: a stopped launch's reducers give up (nothing written)
    }
    // The first consumer warp polls, lane `i` the flags of segments 1 + i, 33 + i, … (acquires
    // at GPU scope), so that every flag costs the same round trip rather than one after the
    // other (≈ 0.5 µs each on an H100); the barrier passes what they saw on to the other
    // consumer threads, which then read the partial sums from L2. The 256-token tile, which
    // the dense plan never splits, keeps one polling thread: the warp's loop changed its
    // register allocation and cost 2–4 % at 512–4096 tokens.
    if ACC > 64 {
        if thread == 0 {
            let epoch = work.epoch();
            for index in REDUCER_SEGMENT + 1..segment.count {
                // SAFETY: the slot's flag; its segment publishes its slot before the flag.
                while unsafe { mem::ld_acquire_gpu_u32(flag(index)) } != epoch {}
            }
        }
    } else if thread < 32 {
        let epoch = work.epoch();
        let mut index = REDUCER_SEGMENT + 1 + thread;
        while !warp::all(index >= segment.count) {
            // SAFETY: as above.
            if index < segment.count && unsafe { mem::ld_acquire_gpu_u32(flag(index)) } == epoch {
                index += 32;
            }
        }
    }
    fence::named_barrier::<FIXUP_BARRIER, CONSUMER_THREADS>();
    // Two partial sums per round trip where the registers allow it (each is ACC words per
    // thread), added in segment order.
    let pairs = ACC <= 32;
    let mut index = REDUCER_SEGMENT + 1;
    while index < segment.count {
        let both = pairs && index + 1 < segment.count;
        let first = slot(index);
        let second = if both { slot(index + 1) } else { first };
        let mut words = [[[0u32; 4]; 2]; 32];
        unrolled32!(ACC / 4, |q| {
            // SAFETY: inside slots `index` and (when read) `index + 1`, written by their
            // segments before their release.
            unsafe {
                words[q][0] = mem::ld_global_cg_v4_b32(first.add(element(q)));
                if both {
                    words[q][1] = mem::ld_global_cg_v4_b32(second.add(element(q)));
                }
            }
        });
        unrolled32!(ACC / 4, |q| {
            for e in 0..4 {
                acc[4 * q + e] += f32::from_bits(words[q][0][e]);
                if both {
                    acc[4 * q + e] += f32::from_bits(words[q][1][e]);
                }
            }
        });
        index += if both { 2 } else { 1 };
    }
    true
}

/// The decoded slice before `position`.
#[inline(always)]
fn previous_stage(position: &RingPosition<DECODED_STAGES>) -> u32 {
    (position.stage + DECODED_STAGES - 1) % DECODED_STAGES
}

/// Releases the decoded slice before `position` (its wgmmas have completed).
#[inline(always)]
fn release_previous(shared: &Shared, position: &RingPosition<DECODED_STAGES>) {
    // SAFETY: barrier initialized.
    unsafe { mbarrier::arrive(shared.decoded_empty(previous_stage(position))) };
}

/// This thread's outputs, written through the staging. Accumulator `4q + e` is the gate row's
/// and `4q + 2 + e` the up row's sum for token `8q + 2t + e` of the tile. Gated: `C[token][n] =
/// silu(α_gate · gate) · (α_up · up)`; plain: `C[token][n] = α · gate`, `C[token][n + 8] = α ·
/// up`; each rounded to bf16 if `bf16` (a constant of the entry), else to fp16.
///
/// Each thread stages its values as 16-bit words in `staging` ([`stage_tile`]), then the
/// consumer threads copy the tile's existing tokens and outputs to C ([`copy_staged`]).
/// Storing straight from the accumulator fragment took a 2-byte store per value, each warp
/// instruction writing 16 bytes into each of four rows of C: ≈ 1.8 µs per 128 × 128 tile on an
/// H100, longer than a 64-K slice.
///
/// # Safety
/// All consumer threads call it together; `staging` is the consumers' own (`Shared::staging`)
/// and no copy-out warp still reads it; C holds the tile's tokens × N (16-byte aligned rows, N
/// a multiple of 64).
#[inline(always)]
unsafe fn epilogue<const ACC: usize>(
    job: &TileJob,
    acc: &[f32; ACC],
    lane: &ConsumerLane,
    gated: bool,
    bf16: bool,
    staging: u32,
    thread: u32,
) {
    // The previous tile's copy has read the staging.
    fence::named_barrier::<EPILOGUE_BARRIER, CONSUMER_THREADS>();
    // SAFETY (both): the caller's contract.
    unsafe { stage_tile(job, acc, lane, gated, bf16, staging) };
    fence::named_barrier::<EPILOGUE_BARRIER, CONSUMER_THREADS>();
    unsafe { copy_staged(staging, &StagedTile::of(job), gated, thread, CONSUMER_THREADS) };
}

/// This thread's values of the tile ([`epilogue`]) as 16-bit words in `staging`: token rows of
/// [`config::EPILOGUE_STAGING_PITCH`] bytes, a row's outputs in order.
///
/// # Safety
/// A consumer thread; no thread reads the staging until the consumers meet at a barrier after
/// this.
#[inline(always)]
unsafe fn stage_tile<const ACC: usize>(
    job: &TileJob,
    acc: &[f32; ACC],
    lane: &ConsumerLane,
    gated: bool,
    bf16: bool,
    staging: u32,
) {
    // Rows 2t and 2t + 1 (token 8q + 2t + e is 8q rows further), from an opaque copy of the
    // lane: LLVM would otherwise compute them before the mainloop and keep them live across it.
    let (column, t) = (reg::opaque(lane.n_in_tile), lane.t);
    let rows = [0, 1].map(|e| staging + (2 * t + e) * EPILOGUE_STAGING_PITCH + 2 * column);
    let product = GatedProduct::new(job.alpha_gate, job.alpha_up);
    unrolled32!(ACC / 4, |q| {
        for e in 0..2 {
            let at = rows[e] + 8 * q as u32 * EPILOGUE_STAGING_PITCH;
            let (gate, up) = (acc[4 * q + e], acc[4 * q + 2 + e]);
            // SAFETY (all): inside the staging's tile.tokens rows; rows past the tile's tokens
            // and outputs past N are staged but never copied.
            if gated {
                let value = product.value(gate, up);
                unsafe { smem::st_b16(at, half_bits(value, bf16)) };
            } else {
                unsafe { smem::st_b16(at, half_bits(job.alpha_gate * gate, bf16)) };
                let up_at = at + 2 * config::PLAIN_UP_ROW_OFFSET;
                unsafe { smem::st_b16(up_at, half_bits(job.alpha_gate * up, bf16)) };
            }
        }
    });
}

/// Where a staged tile goes in C: what [`copy_staged`] needs of its [`TileJob`].
#[derive(Clone, Copy)]
struct StagedTile {
    /// C's element of the tile's first token and output 0.
    out: *mut u16,
    /// Elements between rows of C.
    ldc: u32,
    /// Tokens of the tile that exist.
    tokens: u32,
    /// The tile's first output.
    n0: u32,
    /// Outputs of the tile's problem.
    n: u32,
}

impl StagedTile {
    #[inline(always)]
    fn of(job: &TileJob) -> Self {
        Self {
            out: job.out,
            ldc: job.ldc,
            tokens: job.tokens,
            n0: job.n0,
            n: job.n,
        }
    }
}

/// Copies the staged tile's existing tokens and outputs to C in 16-byte runs, thread `index` of
/// `threads` taking runs `index`, `index + threads`, …: a row's runs are consecutive threads, so
/// each warp stores whole rows of C.
///
/// # Safety
/// `staging` holds the tile, staged by [`stage_tile`] and made visible by a barrier; C holds
/// its tokens × N (16-byte aligned rows, N a multiple of 64); `threads` a multiple of 32.
#[inline(always)]
unsafe fn copy_staged(staging: u32, tile: &StagedTile, gated: bool, index: u32, threads: u32) {
    let runs_per_row = config::tile_n(gated) / 8;
    let runs = tile.tokens * runs_per_row;
    let ldc = tile.ldc as usize;
    let mut run = index;
    while run < runs {
        let (token, column) = (run / runs_per_row, 8 * (run % runs_per_row));
        if tile.n0 + column < tile.n {
            // SAFETY: a staged row and run; C's row `token` exists and output `n0 + column` + 8
            // ≤ N (N and the tile's first output are multiples of 8), 16-byte aligned.
            unsafe {
                let words = smem::ld_v4(staging + token * EPILOGUE_STAGING_PITCH + 2 * column);
                let at = tile.out.add(token as usize * ldc + (tile.n0 + column) as usize);
                mem::st_global_v4_b32(at as *mut u32, words);
            }
        }
        run += threads;
    }
}

/// Stores the staged tile's existing tokens to C by bulk copies (the TMA unit reads the
/// staging and writes C: no shared loads or global stores on the SM's load/store path), one a
/// token row of its outputs that exist (a plain tile's second half lies past N where its first
/// output + 64 reaches N); warp `warp` of `warps` takes rows `warp`, `warp + warps`, …, its lane
/// 0 issues them, and every lane returns once they have read the staging.
///
/// # Safety
/// `staging` holds the tile, staged by [`stage_tile`] and made visible to the async proxy and
/// to this warp (proxy fences by its writers, then a barrier); C as in [`copy_staged`]; all
/// lanes of the warp call it with the same arguments but `lane`.
#[inline(always)]
unsafe fn store_staged_rows(staging: u32, tile: &StagedTile, gated: bool, warp: u32, warps: u32, lane: u32) {
    let row_bytes = 2 * config::tile_n(gated).min(tile.n - tile.n0);
    let ldc = tile.ldc as usize;
    let mut token = warp;
    while token < tile.tokens {
        // SAFETY: a staged row; C's row `token` holds outputs n0 .. n0 + row_bytes / 2 ≤ N,
        // 16-byte aligned (rows 16-byte aligned, n0 a multiple of 64).
        unsafe {
            let at = tile.out.add(token as usize * ldc + tile.n0 as usize) as *mut u8;
            copy::bulk_store_lane0(at, staging + token * EPILOGUE_STAGING_PITCH, row_bytes, lane);
        }
        token += warps;
    }
    copy::bulk_commit();
    copy::bulk_wait_read_all();
}

/// The consumers' tile handed to the copy-out warps, in shared memory
/// (`SharedPlan::copy_out_record`): `[1, tokens, ldc, n0]`, `[out (low, high), n, 0]`, or a
/// first word 0 once the CTA has no more tiles to hand off. Written by one consumer thread
/// before the consumers arrive at [`STAGED_BARRIER`] (after their wait at
/// [`STAGING_FREE_BARRIER`] for the previous tile), read by the copy-out warps after their wait
/// there.
struct CopyOutRecord;

impl CopyOutRecord {
    /// Writes `tile`'s record (the end record for `None`) at `at`.
    ///
    /// # Safety
    /// `at` is the copy-out record, which no copy-out warp reads until the next hand-off.
    #[inline(always)]
    unsafe fn write(at: u32, tile: Option<&StagedTile>) {
        let Some(tile) = tile else {
            // SAFETY: the caller's contract.
            unsafe { smem::st_b32(at, 0) };
            return;
        };
        let out = tile.out as u64;
        // SAFETY (both): the caller's contract; 16-byte aligned words inside the record.
        unsafe {
            smem::st_v4(at, [1, tile.tokens, tile.ldc, tile.n0]);
            smem::st_v4(at + 16, [out as u32, (out >> 32) as u32, tile.n, 0]);
        }
    }

    /// The tile of the record at `at`, or `None` for the end record.
    ///
    /// # Safety
    /// After the wait at [`STAGED_BARRIER`] that the record's writer arrived at.
    #[inline(always)]
    unsafe fn read(at: u32) -> Option<StagedTile> {
        // SAFETY: the caller's contract.
        let [valid, tokens, ldc, n0] = unsafe { smem::ld_v4(at) };
        if valid == 0 {
            return None;
        }
        // SAFETY: as above.
        let [low, high, n, _] = unsafe { smem::ld_v4(at + 16) };
        Some(StagedTile {
            out: ((high as u64) << 32 | low as u64) as *mut u16,
            ldc,
            tokens,
            n0,
            n,
        })
    }
}

/// The index among the [`COPY_OUT_THREADS`] of `thread`, if it is a copy-out warp's: the first
/// two warps of the first decoder warpgroup where the tile has decoder warpgroups (idle where
/// tokens come pre-decoded), else the producer warpgroup's last two (its first two hold the
/// token and weight producer threads).
#[inline(always)]
fn copy_out_index(tile: Tile, thread: u32) -> Option<u32> {
    const { assert!(WEIGHT_PRODUCER_THREAD < WARPGROUP_THREADS - COPY_OUT_THREADS) };
    let (first, warpgroup) = if tile.decoder_warpgroups() > 0 {
        (0, FIRST_DECODER_WARPGROUP)
    } else {
        (WARPGROUP_THREADS - COPY_OUT_THREADS, tile.producer_warpgroup())
    };
    let index = thread.wrapping_sub(warpgroup * WARPGROUP_THREADS + first);
    (index < COPY_OUT_THREADS).then_some(index)
}

/// Whether the copy-out warps of `tile` store by bulk copies ([`store_staged_rows`]) rather
/// than 16-byte stores ([`copy_staged`]): where they are an idle decoder warpgroup's (8–128
/// tokens), as a 16-byte copy loop there moves those kernels' schedule arithmetic off the
/// uniform datapath (ptxas; gpumode-3/-4 1.5 % slower); the fitted tile's keep the 16-byte
/// stores, which its short-K prefills pay less for than ≈ 12 instructions a row (perf log
/// entry 195).
#[inline(always)]
const fn copy_out_by_bulk(tile: Tile) -> bool {
    tile.decoder_warpgroups() > 0
}

/// The copy-out warps ([`Problem::COPY_OUT_WARPS`]): per tile the consumers hand off, wait at
/// [`STAGED_BARRIER`], copy the staged tile to C ([`copy_staged`], or [`store_staged_rows`]
/// where [`copy_out_by_bulk`]) and arrive at [`STAGING_FREE_BARRIER`]; return at the end record.
///
/// # Safety
/// The copy-out warps of a launch whose consumers hand off tiles ([`Staging`]); `index` this
/// thread's ([`copy_out_index`]).
#[inline(always)]
unsafe fn copy_out_warps(shared: &Shared, gated: bool, index: u32) {
    let bulk = copy_out_by_bulk(shared.tile);
    loop {
        fence::named_barrier::<STAGED_BARRIER, HANDOFF_THREADS>();
        // SAFETY: after the wait the record's writer arrived at.
        let Some(tile) = (unsafe { CopyOutRecord::read(shared.copy_out_record()) }) else {
            if bulk {
                // Every store complete before the CTA ends.
                copy::bulk_wait_all();
            }
            return;
        };
        if bulk {
            // The warp index from lane 0: the same in the warp, so that the stores' operands
            // stay in uniform registers.
            let warp = warp::shuffle_index(index / 32, 0);
            // SAFETY: the consumers staged the tile, made it visible to the async proxy and
            // arrived after it.
            unsafe {
                store_staged_rows(
                    shared.staging(),
                    &tile,
                    gated,
                    warp,
                    COPY_OUT_THREADS / 32,
                    index % 32,
                )
            };
        } else {
            // SAFETY: the consumers staged the tile and arrived after it.
            unsafe { copy_staged(shared.staging(), &tile, gated, index, COPY_OUT_THREADS) };
        }
        fence::named_barrier_arrive::<STAGING_FREE_BARRIER, HANDOFF_THREADS>();
    }
}

/// The consumers' side of the hand-off to the copy-out warps: whether the staging is theirs
/// (no tile they handed off is still being copied).
struct Staging {
    owned: bool,
}

impl Staging {
    /// Waits until the copy-out warps have read the tile last handed to them, if one is out.
    #[inline(always)]
    fn reclaim(&mut self) {
        if !self.owned {
            fence::named_barrier::<STAGING_FREE_BARRIER, HANDOFF_THREADS>();
            self.owned = true;
        }
    }

    /// Hands the staged `tile` to the copy-out warps (after [`Staging::reclaim`] and the
    /// staging stores).
    ///
    /// # Safety
    /// All consumer threads call it together.
    #[inline(always)]
    unsafe fn hand_off(&mut self, shared: &Shared, tile: &StagedTile, thread: u32) {
        if thread == 0 {
            // SAFETY: reclaimed: the copy-out warps read it only after the arrival below.
            unsafe { CopyOutRecord::write(shared.copy_out_record(), Some(tile)) };
        }
        if copy_out_by_bulk(shared.tile) {
            // The staging's generic writes before the copy-out warps' bulk stores read them.
            fence::proxy_async_shared();
        }
        fence::named_barrier_arrive::<STAGED_BARRIER, HANDOFF_THREADS>();
        self.owned = false;
    }

    /// Tells the copy-out warps that no tile follows (after the CTA's last segment).
    ///
    /// # Safety
    /// All consumer threads call it together, once.
    #[inline(always)]
    unsafe fn finish(&mut self, shared: &Shared, thread: u32) {
        self.reclaim();
        if thread == 0 {
            // SAFETY: reclaimed.
            unsafe { CopyOutRecord::write(shared.copy_out_record(), None) };
        }
        fence::named_barrier_arrive::<STAGED_BARRIER, HANDOFF_THREADS>();
    }
}

/// The gated epilogue writing NVFP4 (`C` quantized along N, see [`Nvfp4Tile`]): every consumer
/// thread stages its `silu(α_gate · gate) · (α_up · up)` values, then encodes whole blocks.
/// The staging is the segment's last decoded slice, which the consumers release only after
/// this (so no other role writes it meanwhile, and the next tile's staging, another slice or
/// this one refilled, cannot overwrite values a slower thread still encodes); a first barrier
/// waits for both warpgroups' wgmmas on it.
///
/// # Safety
/// All consumer threads call it together; `staging` holds the staging of the tile's tokens.
#[inline(always)]
unsafe fn nvfp4_epilogue<const ACC: usize>(
    job: &TileJob,
    acc: &[f32; ACC],
    lane: &ConsumerLane,
    out: impl Fn() -> Nvfp4Tile,
    staging: u32,
    thread: u32,
) {
    // Both consumer warpgroups read the slice (their wgmmas' B operand): each waited for its
    // own wgmmas only.
    fence::named_barrier::<EPILOGUE_BARRIER, CONSUMER_THREADS>();
    // This thread's staging rows 2t and 2t + 1 (token 8q + 2t + e is 8q rows further), from an
    // opaque copy of its lane: LLVM would otherwise compute them before the mainloop and keep
    // them live across it. Every row of the tile is staged, as in the 16-bit epilogue: rows past
    // its tokens are never encoded, and a test per value made each store a branch (64 a
    // thread at 256 tokens, ≈ 1.6 µs a tile on an H100).
    let (column, t) = (reg::opaque(lane.n_in_tile), lane.t);
    let rows = [0, 1].map(|e| staging + Nvfp4Tile::staging_offset(2 * t + e, column));
    let product = GatedProduct::new(job.alpha_gate, job.alpha_up);
    unrolled32!(ACC / 4, |q| {
        for e in 0..2 {
            let (gate, up) = (acc[4 * q + e], acc[4 * q + 2 + e]);
            let at = rows[e] + 8 * q as u32 * NVFP4_STAGING_PITCH;
            // SAFETY: token 8q + 2t + e < the tile's token rows, column < its 64 outputs: inside
            // the staging (a decoded slice of the tile's tokens).
            unsafe { Nvfp4Tile::stage_at(at, product.value(gate, up)) };
        }
    });
    fence::named_barrier::<EPILOGUE_BARRIER, CONSUMER_THREADS>();
    // SAFETY: every existing token staged above (the caller's contract for the rest).
    unsafe { out().encode(staging, thread, CONSUMER_THREADS) };
}
