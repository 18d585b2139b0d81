//! Fused NVFP4 dual GEMM for Hopper (sm_90a): `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)`, fp16 out.
//!
//! Hopper has no fp4 tensor cores, so every fp4 value is decoded to fp16 (×its e4m3 scale) and
//! multiplied on fp16 wgmma with fp32 accumulators; both products of a tile live in one CTA so the
//! epilogue gates without a second pass.
//!
//! # Design
//! * **Swap AB.** The kernel computes tiles of `Cᵀ`: the weights (B1, B2: N rows, the big stream)
//!   are wgmma's A operand, decoded from global loads *straight into registers* (no shared-memory
//!   round trip), and the tokens (A: M rows) are wgmma's B operand in shared memory, read by
//!   both consumer warpgroups and both products. wgmma's N is the token tile (8…128, see
//!   [`config::TILES`]), which fits decode-sized M as well as prefill.
//! * **Tokens: decoded in the kernel or once per call.** Below
//!   [`config::PREDECODED_MIN_TOKENS`] the decoder warpgroups decode each tile's tokens (cheap:
//!   few tokens, and no second launch). From there on, decoding every token once per 64-output
//!   tile cost as much issue bandwidth as the weights, so the host first runs
//!   [`tokens::nvfp4_predecode_tokens_sm90`] (A → fp16 in the operand format of [`tokens`], once
//!   per call) and the producer loads each fp16 slice by TMA straight into the decoded ring; the
//!   decoders idle. Measured on an H200: 256×4096×7168 63.5 → 52.4 µs, M = 64 40.1 → 36.3 µs.
//! * **Gate and up in one accumulator.** A consumer warp's 16 wgmma rows are 8 rows of B1 and the
//!   same 8 rows of B2 (rows `g` and `g + 8` of the fragment), so one `m64nT` accumulator holds
//!   gate and up of the same outputs in the same thread: no exchange before SiLU·up.
//! * **K-order freedom.** A thread decodes whole 16-element scale blocks with the shift trick of
//!   [`crate::fp4::e2m1x8_to_f16x2_pairs`], whose pairs come out as elements (3,7), (2,6), … of
//!   the block ([`crate::fp4::PAIR_ELEMENTS`]); pair `p` of the block of quad lane `t` becomes
//!   fragment k-pair `8·(p % 2) + 2t` of k16 step `p / 2`. The token decoder writes shared memory
//!   in the same permuted K order, so the dot products are unchanged. Within a 256-K stage,
//!   slice `j` (64 K, one 128-byte swizzled row per token) holds the blocks
//!   [`config::stage_block`]`(j, t)` of lanes `t = 0..3`, chosen so that a thread loads each of its
//!   weight rows as two 16-byte chunks and two 2-byte scale pairs per stage.
//! * **Exact fp16 operands.** The trick yields `e2m1 · 2⁻¹⁴`; one `mul.f16x2` by the e4m3 scale
//!   gives `e2m1 · scale · 2⁻¹⁴` exactly (a multiple of 2⁻²⁴ below 0.17: subnormals included).
//!   The epilogue multiplies each fp32 sum by `alpha = 2²⁸ · g_A · g_B`.
//! * **Programmatic dependent launch.** Every CTA lets the next kernel of the stream start
//!   (`griddepcontrol.launch_dependents`) and sets up (barriers, `setmaxnreg`, an L2 prefetch of
//!   its first weight stages) before its roles wait for the previous kernel
//!   (`griddepcontrol.wait`) and touch memory; launched plainly, the wait is a no-op.
//! * **Stream-K fix-up.** A split tile's segment 0 (computed last by its CTA) waits for the other
//!   segments' count and adds their partial sums in segment order; the others store and count
//!   themselves without waiting (see [`fix_up`]). The weight pipeline runs across segments.
//!
//! # Roles (640 threads, one CTA per SM, persistent over tiles)
//! 1. Warpgroups 0–1, **consumers** (`setmaxnreg`: [`Tile::registers`]): per 64-K slice, decode 16 fragment
//!    registers (2 rows × 16 K per thread) from prefetched registers, wait for the decoded token
//!    slice, issue 4 `wgmma m64nTk16`, release the previous slice; epilogue from registers.
//! 2. Warpgroups 2–3, **decoders** (in-kernel tokens only): per 256-K stage, wait for the raw
//!    token tile; each half warpgroup decodes one of its 64-K slices into a 128-byte-swizzled
//!    fp16 tile, one 16-element scale block per thread (the same [`tokens::scaled_pairs`] as the
//!    weights), so that every slice's work sits on two schedulers and every scheduler gets
//!    decode work (a single warp's chain took ≈ 950 clocks per slice for an 8-token tile).
//! 3. Warpgroup 4, **producer**: one thread issues, per stage, the TMA load of the packed token
//!    tile (128-byte swizzle) and the 1-D bulk copy of its scale atoms; for pre-decoded tokens,
//!    one TMA load of fp16 tokens per 64-K slice into the decoded ring instead.
//!
//! Rings: raw (TMA → decoder, [`config::RAW_STAGES`] × 256 K; unused for pre-decoded tokens)
//! and decoded (decoder or TMA → consumers, [`config::DECODED_STAGES`] × 64 K), each with
//! full/empty mbarriers ([`RingPosition`]).
//!
//! # Cost per 64-K slice, T = 128 tokens (the benchmark tile), per CTA
//! * Tensor: 2 warpgroups × 4 × `m64n128k16` = 2 · 4 · 64 · 128 · 16 = 1 Mi FMA ≈ 512 clocks at
//!   the H100's 2048 dense fp16 FMA/clock/SM.
//! * Decode: weights 2 × 64 rows × 64 K = 8192 values into registers per slice (tokens are
//!   pre-decoded), 16 per consumer thread: per pair of values two shifts, two `lop3` and one
//!   `mul.f16x2` (SASS), ≈ 1000 warp-instructions per slice, 250 issue clocks per scheduler.
//!   Decoding tokens in the kernel as well (before pre-decoding) doubled that and the kernel
//!   ran at ≈ 1000 clocks per slice (IPC ≈ 1.9), issue-bound next to 512 clocks of tensor work.
//! * Shared memory: TMA writes 16 KiB of fp16 tokens; wgmma reads 2 × 16 KiB: 48 KiB per 512
//!   clocks ≈ 96 B/clock of the ≈ 128 B/clock the SM can move.
//! * L2: 16 KiB of tokens per slice per CTA (4× the packed size, the price of decoding once);
//!   global: weights 2 × 64 rows × 32 B = 4 KiB per slice per CTA, streamed through registers.
//!
//! # Contract (checked by the host plan before launch)
//! `m ≥ 1`; `n` a multiple of [`config::TILE_N`]; `k` a positive multiple of
//! [`config::K_PER_STAGE`]; `a_map` the generic address of a tensor map of A's packed bytes
//! (UINT8, dims {k/2, m}, box {128, 64}, 128-byte swizzle) or, for pre-decoded tiles, of the
//! fp16 tokens (FLOAT16, dims {k, m}, box {64, T}, 128-byte swizzle; `a_scales` unused);
//! scale buffers in the blocked layout;
//! all pointers aligned for their accesses; grid ≤ tiles and ≤ the SM count (one CTA per SM, so
//! all CTAs are resident: reducers wait for other CTAs), [`config::THREADS`] threads,
//! [`SharedPlan::total`] bytes of dynamic shared memory.

use crate::desc::{sw128_in_row, sw128_offset, sw128_row, wgmma_desc_sw128_k_major};
use crate::epilogue::silu;
use crate::layout::{ATOM_BYTES, ATOM_ROWS, BlockedScales};
use crate::ptx::{copy, cvt, fence, mbarrier, mem, reg, smem, sreg, wgmma};
use crate::ring::RingPosition;
use crate::schedule::{Segment, Segments, StreamK, TileGrid};
use crate::sm90::config::{
    self, BLOCKS_PER_SLICE, BLOCKS_PER_STAGE, DECODED_STAGES, DECODER_WARPGROUPS, FIRST_DECODER_WARPGROUP,
    K_PER_STAGE, PRODUCER_WARPGROUP, RAW_STAGES, SCALE_GROUP_BYTES, SLICES_PER_STAGE, SharedPlan, TILE_N,
    TOKEN_BOX_ROWS, Tile, WARPGROUP_THREADS, WEIGHT_CHUNKS_PER_STAGE, stage_block,
};
use crate::sm90::tokens::{self, scaled_pairs};

/// Runs `$body` with `$q` bound to the literals 0, 1, …, 15 while below `$limit`. Loops over
/// the accumulators must use literal indices: LLVM does not fully unroll these loops, and a
/// run-time index moves the accumulator array to local memory.
macro_rules! unrolled16 {
    ($limit:expr, |$q:ident| $body:block) => {
        unrolled16!(@ $limit, $q, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $limit:expr, $q:ident, $body:block; $($n:literal)*) => {
        $( if $n < $limit { let $q: usize = $n; $body } )*
    };
}

/// Kernel arguments, in launch order.
struct Params {
    a_map: u64,
    a_scales: *const u8,
    b1: *const u8,
    b1_scales: *const u8,
    b2: *const u8,
    b2_scales: *const u8,
    out: *mut u16,
    workspace: *mut u32,
    tile_counters: *mut u32,
    m: u32,
    n: u32,
    k: u32,
    alpha_gate: f32,
    alpha_up: f32,
}

/// Shared addresses of everything in dynamic shared memory.
#[derive(Clone, Copy)]
struct Shared {
    tile: Tile,
    plan: SharedPlan,
    base: u32,
}

impl Shared {
    fn decoded_slice(&self, stage: u32) -> u32 {
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
}

/// The stream-K work split of this launch (see [`StreamK`]).
#[derive(Clone, Copy)]
struct Work {
    split: StreamK,
}

impl Work {
    fn new(tiles: u32, stages: u32) -> Self {
        Self {
            split: StreamK {
                tiles,
                stages,
                ctas: sreg::grid_dim_x(),
            },
        }
    }

    /// This CTA's segments, in order (every role walks the same sequence).
    fn segments(&self) -> Segments {
        self.split.segments(sreg::block_idx_x())
    }
}

/// The thread that issues the producer's bulk copies: the first of its warpgroup.
const PRODUCER_THREAD: u32 = PRODUCER_WARPGROUP * WARPGROUP_THREADS;
/// Threads of the consumer warpgroups (they meet at [`FIXUP_BARRIER`]).
const CONSUMER_THREADS: u32 = config::CONSUMER_WARPGROUPS * WARPGROUP_THREADS;
/// Named barrier of the stream-K fix-up (barrier 0 is the CTA-wide barrier of the setup).
const FIXUP_BARRIER: u32 = 1;

/// Arrivals that complete each barrier's phase.
const RAW_FULL_ARRIVALS: u32 = 1; // the producer's arrive.expect_tx (+ the copies' bytes)
const RAW_EMPTY_ARRIVALS: u32 = DECODER_WARPGROUPS * WARPGROUP_THREADS; // every decoder thread
const DECODED_FULL_ARRIVALS: u32 = DECODER_HALF_THREADS; // the slice's half decoder warpgroup, after its proxy fence
const PREDECODED_FULL_ARRIVALS: u32 = 1; // the producer's arrive.expect_tx (+ the TMA's bytes)
const DECODED_EMPTY_ARRIVALS: u32 = CONSUMER_THREADS; // every consumer thread

/// The kernel body for `2·ACC` tokens per tile with `SETS` accumulator sets; `CONSUMER`,
/// `DECODER` and `PRODUCER` are that tile's [`config::RegisterSplit`] (const arguments, as
/// `setmaxnreg` takes immediates).
#[inline(always)]
unsafe fn dual_gemm<
    const ACC: usize,
    const SETS: usize,
    const CONSUMER: u32,
    const DECODER: u32,
    const PRODUCER: u32,
>(
    p: &Params,
    mma: impl Fn(&mut [f32; ACC], [u32; 4], u64),
) {
    let tile = Tile {
        tokens: 2 * ACC as u32,
    };
    let shared = Shared {
        tile,
        plan: tile.shared(),
        base: smem::base(),
    };
    let thread = sreg::thread_idx_x();
    let grid = TileGrid::new(p.m, p.n, tile.tokens, TILE_N);
    if grid.m_tiles == 0 || grid.n_tiles == 0 {
        return; // never with a valid plan; also proves the tile divisions cannot panic
    }
    let work = Work::new(grid.len(), p.k / K_PER_STAGE);
    let warpgroup = thread / WARPGROUP_THREADS;
    if thread == PRODUCER_THREAD {
        // SAFETY: the host passes a valid tensor map (written by a copy before any launch).
        unsafe { copy::prefetch_tensor_map(p.a_map) };
    }
    if thread == 0 {
        for stage in 0..RAW_STAGES {
            // SAFETY: barrier slots are inside the plan; only thread 0 touches them here.
            unsafe {
                mbarrier::init(shared.raw_full(stage), RAW_FULL_ARRIVALS);
                mbarrier::init(shared.raw_empty(stage), RAW_EMPTY_ARRIVALS);
            }
        }
        for stage in 0..DECODED_STAGES {
            // SAFETY: as above.
            unsafe {
                let full_arrivals = if tile.predecoded_tokens() {
                    PREDECODED_FULL_ARRIVALS
                } else {
                    DECODED_FULL_ARRIVALS
                };
                mbarrier::init(shared.decoded_full(stage), full_arrivals);
                mbarrier::init(shared.decoded_empty(stage), DECODED_EMPTY_ARRIVALS);
            }
        }
        fence::mbarrier_init();
    }
    fence::sync_threads();
    // Programmatic dependent launch: the next kernel of the stream may start its CTAs now (they
    // wait for this grid before touching memory). This grid's roles wait for the previous
    // kernel (`grid_dependency_wait`) only before their first global access, so the setup above
    // and `setmaxnreg` overlap the previous kernel's tail: the producer before its first copy,
    // the consumers before their first weight load; the decoders read shared memory only.
    fence::launch_dependents();
    if warpgroup == PRODUCER_WARPGROUP {
        reg::decrease::<PRODUCER>();
        if thread == PRODUCER_THREAD {
            fence::grid_dependency_wait();
            // SAFETY: the host plan checked the contract of the module doc.
            unsafe {
                if tile.predecoded_tokens() {
                    produce_predecoded(p, &shared, &grid, &work)
                } else {
                    produce(p, &shared, &grid, &work)
                }
            };
        }
    } else if warpgroup >= FIRST_DECODER_WARPGROUP {
        reg::decrease::<DECODER>();
        if tile.predecoded_tokens() {
            return; // the producer loads decoded slices
        }
        let decoder = warpgroup - FIRST_DECODER_WARPGROUP;
        // SAFETY: as above.
        unsafe { decode_tokens(&shared, &grid, &work, decoder, thread % WARPGROUP_THREADS) };
    } else {
        reg::increase::<CONSUMER>();
        let lane = ConsumerLane::new(thread);
        // SAFETY: as above.
        unsafe { warm_up_weights(p, &grid, &work, &lane, thread) };
        fence::grid_dependency_wait();
        // SAFETY: as above.
        unsafe { consume::<ACC, SETS>(p, &shared, &grid, &work, &lane, &mma) };
    }
}

/// The producer thread: per tile and 256-K stage, one TMA box per 64 token rows and one bulk
/// copy per 128-row scale group into the raw ring.
#[inline(always)]
unsafe fn produce(p: &Params, shared: &Shared, grid: &TileGrid, work: &Work) {
    let tile = shared.tile;
    let scales = BlockedScales::new(p.m as usize, p.k as usize);
    let mut ring = RingPosition::<RAW_STAGES>::new();
    for segment in work.segments() {
        let m0 = grid.coords(segment.tile).0 * tile.tokens;
        let first_group = m0 / 128;
        let groups = tile.scale_groups().min(scales.row_blocks as u32 - first_group);
        let bytes = tile.raw_token_bytes() + groups * SCALE_GROUP_BYTES;
        for stage in segment.first_stage..segment.first_stage + segment.stages {
            let full = shared.raw_full(ring.stage);
            // SAFETY: barriers are initialized; copies stay inside the stage buffers and inside
            // A's scales (only existing row blocks are copied); the box may run past M (zeros).
            unsafe {
                mbarrier::wait_suspending(shared.raw_empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, bytes);
                for b in 0..tile.token_boxes() {
                    let dst = shared.raw_tokens(ring.stage) + b * TOKEN_BOX_ROWS * 128;
                    copy::tensor_2d(
                        dst,
                        p.a_map,
                        (stage * 128) as i32,
                        (m0 + b * TOKEN_BOX_ROWS) as i32,
                        full,
                    );
                }
                for g in 0..groups {
                    let src = p
                        .a_scales
                        .add(scales.atom_offset((first_group + g) as usize, (stage * 4) as usize));
                    copy::bulk(
                        shared.raw_scales(ring.stage) + g * SCALE_GROUP_BYTES,
                        src,
                        SCALE_GROUP_BYTES,
                        full,
                    );
                }
            }
            ring.advance();
        }
    }
}

/// The producer thread for pre-decoded tokens: per tile and 64-K slice, one TMA box of fp16
/// tokens (`K_PER_SLICE × tokens`, 128-byte swizzle) straight into the decoded ring.
#[inline(always)]
unsafe fn produce_predecoded(p: &Params, shared: &Shared, grid: &TileGrid, work: &Work) {
    let tile = shared.tile;
    let mut ring = RingPosition::<DECODED_STAGES>::new();
    for segment in work.segments() {
        let m0 = grid.coords(segment.tile).0 * tile.tokens;
        let first_slice = segment.first_stage * SLICES_PER_STAGE;
        for slice in first_slice..first_slice + segment.stages * SLICES_PER_STAGE {
            let full = shared.decoded_full(ring.stage);
            // SAFETY: barriers are initialized; the box fills exactly one decoded slice (rows
            // past M are zeros).
            unsafe {
                mbarrier::wait_suspending(shared.decoded_empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, tile.decoded_slice_bytes());
                copy::tensor_2d(
                    shared.decoded_slice(ring.stage),
                    p.a_map,
                    (slice * config::K_PER_SLICE) as i32,
                    m0 as i32,
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
unsafe fn decode_tokens(shared: &Shared, grid: &TileGrid, work: &Work, decoder: u32, thread: u32) {
    let tile = shared.tile;
    let my_slice = decoder_slice(decoder, thread / DECODER_HALF_THREADS);
    // Warp `w` of the half decodes tokens `w·T/2 .. (w + 1)·T/2`, eight per round, lane `l`
    // token `l / 4` of the round and word `l % 4`: a round's stores hit 32 distinct banks.
    let (warp, lane) = ((thread % DECODER_HALF_THREADS) / 32, thread % 32);
    let tokens_per_warp = tile.tokens / 2;
    let word = lane % BLOCKS_PER_SLICE;
    let mut raw = RingPosition::<RAW_STAGES>::new();
    let mut decoded = RingPosition::<DECODED_STAGES>::new();
    for segment in work.segments() {
        let m0 = grid.coords(segment.tile).0 * tile.tokens;
        for _ in 0..segment.stages {
            // SAFETY: barriers are initialized; the producer fills this raw stage.
            unsafe { mbarrier::wait_suspending(shared.raw_full(raw.stage), raw.full_parity()) };
            for slice in 0..SLICES_PER_STAGE {
                if slice != my_slice {
                    decoded.advance();
                    continue;
                }
                // SAFETY: as above; consumers release decoded slices.
                unsafe {
                    mbarrier::wait_suspending(shared.decoded_empty(decoded.stage), decoded.empty_parity())
                };
                let mut local = lane / BLOCKS_PER_SLICE;
                while local < tokens_per_warp {
                    let row = warp * tokens_per_warp + local;
                    // SAFETY: row < tokens ≤ raw rows, block < 4: inside the stage buffers.
                    unsafe { decode_token_block(shared, raw.stage, decoded.stage, m0, row, slice, word) };
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
/// ([`crate::fp4::PAIR_ELEMENTS`]) is word `word` of 16-byte chunk `p` (see [`tokens`]).
#[inline(always)]
unsafe fn decode_token_block(
    shared: &Shared,
    raw_stage: u32,
    decoded_stage: u32,
    m0: u32,
    row: u32,
    slice: u32,
    word: u32,
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
    let scale = cvt::e4m3_byte_to_f16x2_broadcast(unsafe { smem::ld_b32(scale_word) }, block % 4);
    let pairs = scaled_pairs(lo, hi, scale);
    // Pair p is word `word` of chunk p of the row; the row's address is 128-byte aligned, so
    // the offset within it ORs in (one LOP3 per store).
    let row_addr = shared.decoded_slice(decoded_stage) + sw128_row(row);
    for (p, pair) in pairs.iter().enumerate() {
        // SAFETY: row < tokens, chunk < 8: inside the decoded slice.
        unsafe { smem::st_b32(row_addr | sw128_in_row(row, p as u32) | (4 * word), *pair) };
    }
}

/// One thread's weights for one 256-K stage: for the gate row (B1) and the up row (B2), chunk
/// `h` (of [`WEIGHT_CHUNKS_PER_STAGE`]) holds the 16 bytes of blocks [`stage_block`]`(2h, t)`
/// (words 0, 1: slice `2h`) and `stage_block(2h + 1, t)` (words 2, 3: slice `2h + 1`), and
/// `*_scales[h]` their two e4m3 codes (low byte: slice `2h`).
#[derive(Clone, Copy)]
struct WeightStage {
    gate: [[u32; 4]; WEIGHT_CHUNKS],
    up: [[u32; 4]; WEIGHT_CHUNKS],
    gate_scales: [u32; WEIGHT_CHUNKS],
    up_scales: [u32; WEIGHT_CHUNKS],
}

/// [`WEIGHT_CHUNKS_PER_STAGE`] as an array length.
const WEIGHT_CHUNKS: usize = WEIGHT_CHUNKS_PER_STAGE as usize;

impl WeightStage {
    /// No weights (all zero): what the pipeline carries past a CTA's last stage.
    const ZERO: Self = Self {
        gate: [[0; 4]; WEIGHT_CHUNKS],
        up: [[0; 4]; WEIGHT_CHUNKS],
        gate_scales: [0; WEIGHT_CHUNKS],
        up_scales: [0; WEIGHT_CHUNKS],
    };
}

/// Where a consumer thread sits in the tile: its quad lane `t` (which picks its scale blocks,
/// [`stage_block`]) and the output column `n_in_tile` (from warpgroup, warp and row group `g`)
/// whose gate and up rows it decodes and stores.
struct ConsumerLane {
    t: u32,
    n_in_tile: u32,
}

impl ConsumerLane {
    /// The lane of consumer thread `thread` (meaningless for other threads, and unused there).
    #[inline(always)]
    fn new(thread: u32) -> Self {
        let (warpgroup, warp, lane) = (thread / WARPGROUP_THREADS, (thread / 32) % 4, thread % 32);
        let (g, t) = (lane / 4, lane % 4);
        Self {
            t,
            n_in_tile: warpgroup * config::N_PER_WARPGROUP + warp * config::N_PER_WARP + g,
        }
    }

    /// This thread's output column (row of B1 and B2) in `segment`'s tile.
    #[inline(always)]
    fn output(&self, grid: &TileGrid, segment: &Segment) -> u32 {
        grid.coords(segment.tile).1 * TILE_N + self.n_in_tile
    }
}

/// Where one consumer thread's weights are for one segment's tile: byte offsets, in stage 0, of
/// its first chunk in B1/B2 (`8 · stage_block(0, t)` bytes into its row) and of that chunk's
/// scale pair in their scales. Gate and up rows share both offsets; the base pointers stay
/// kernel parameters (constant bank, not registers).
struct WeightRows<'a> {
    p: &'a Params,
    data: usize,
    scale: usize,
}

/// Bytes between a thread's weight chunks `h` and `h + 1` in a row's stage (blocks 8 apart).
const CHUNK_STRIDE: usize = 8 * (stage_block(2, 0) - stage_block(0, 0)) as usize;
/// Bytes between the scale pairs of chunks `h` and `h + 1` (blocks 8 apart: two atoms).
const CHUNK_SCALE_STRIDE: usize = ((stage_block(2, 0) - stage_block(0, 0)) as usize / 4) * ATOM_BYTES;
/// Bytes of one row's stage of packed fp4.
const STAGE_ROW_BYTES: usize = K_PER_STAGE as usize / 2;
/// Bytes between one stage's scale atoms and the next stage's (for one 128-row block).
const STAGE_SCALE_BYTES: usize = (BLOCKS_PER_STAGE as usize / 4) * ATOM_BYTES;

impl<'a> WeightRows<'a> {
    /// The rows of `lane` in `segment`'s tile.
    #[inline(always)]
    fn new(p: &'a Params, grid: &TileGrid, lane: &ConsumerLane, segment: &Segment) -> Self {
        let n = lane.output(grid, segment);
        let block = stage_block(0, lane.t);
        // n < N (N is a multiple of TILE_N): the offsets are inside the buffers.
        Self {
            p,
            data: (n as usize) * (p.k as usize / 2) + 8 * block as usize,
            scale: BlockedScales::new(p.n as usize, p.k as usize).offset(n as usize, block as usize),
        }
    }

    /// Issues the loads of stage `stage` (they complete while earlier stages compute).
    #[inline(always)]
    unsafe fn load(&self, stage: u32) -> WeightStage {
        let mut w = WeightStage::ZERO;
        for h in 0..WEIGHT_CHUNKS {
            let data = self.data + stage as usize * STAGE_ROW_BYTES + h * CHUNK_STRIDE;
            let scale = self.scale + stage as usize * STAGE_SCALE_BYTES + h * CHUNK_SCALE_STRIDE;
            // SAFETY: rows and offsets are inside B1/B2 and their scales (host contract); the
            // chunks are 16-byte aligned, the scale pairs 2-byte aligned (even scale columns).
            unsafe {
                w.gate[h] = mem::ld_global_stream_v4_b32(self.p.b1.add(data) as *const u32);
                w.up[h] = mem::ld_global_stream_v4_b32(self.p.b2.add(data) as *const u32);
                w.gate_scales[h] = mem::ld_global_nc_u16(self.p.b1_scales.add(scale) as *const u16) as u32;
                w.up_scales[h] = mem::ld_global_nc_u16(self.p.b2_scales.add(scale) as *const u16) as u32;
            }
        }
        w
    }
}

/// 256-K stages of weights each CTA prefetches into L2 before it waits for the previous kernel.
const WARM_UP_STAGES: u32 = 2;

/// Starts loading the first [`WARM_UP_STAGES`] stages of this CTA's weights (and their scales)
/// into L2, before the dependency wait: with a programmatic launch this overlaps the previous
/// kernel's tail, and the first loads then hit L2 (and a warm TLB) instead of DRAM. L2 is
/// coherent for every SM, so data the previous kernel still writes cannot go stale this way.
/// Quad lane 0 of each consumer row prefetches its B1 row, lane 1 its B2 row; consumer threads
/// 2 and 3 the two scale ranges.
#[inline(always)]
unsafe fn warm_up_weights(p: &Params, grid: &TileGrid, work: &Work, lane: &ConsumerLane, thread: u32) {
    let Some(segment) = work.segments().next() else {
        return;
    };
    let stages = segment.stages.min(WARM_UP_STAGES);
    let row_bytes = stages * STAGE_ROW_BYTES as u32;
    let row = lane.output(grid, &segment) as usize;
    let data = row * (p.k as usize / 2) + segment.first_stage as usize * STAGE_ROW_BYTES;
    let n0 = grid.coords(segment.tile).1 * TILE_N;
    let scales = BlockedScales::new(p.n as usize, p.k as usize).atom_offset(
        (n0 / 128) as usize,
        (segment.first_stage * SLICES_PER_STAGE) as usize,
    );
    let scale_bytes = stages * SCALE_GROUP_BYTES;
    // SAFETY: the prefetched ranges are this CTA's first stages of its rows of B1/B2 and of their
    // scales (host contract), 16-byte aligned multiples of 16 bytes.
    unsafe {
        match lane.t {
            0 => copy::prefetch_bulk_l2(p.b1.add(data), row_bytes),
            1 => copy::prefetch_bulk_l2(p.b2.add(data), row_bytes),
            _ => {}
        }
        match thread {
            2 => copy::prefetch_bulk_l2(p.b1_scales.add(scales), scale_bytes),
            3 => copy::prefetch_bulk_l2(p.b2_scales.add(scales), scale_bytes),
            _ => {}
        }
    }
}

/// The 16 fragment registers of one 64-K slice: for each of its 4 k16 steps, `[a0, a1, a2, a3]`
/// = (gate, pair 2s), (up, pair 2s), (gate, pair 2s + 1), (up, pair 2s + 1) of the thread's
/// block [`stage_block`]`(j, t)`.
#[inline(always)]
fn slice_fragments(w: &WeightStage, j: usize) -> [[u32; 4]; 4] {
    let (h, odd) = (j / 2, j % 2 == 1);
    let words = 2 * (j % 2);
    // One conversion per scale pair (LLVM merges the two slices' `cvt`s), one `prmt` per slice.
    let gate_scale = cvt::f16x2_broadcast_half(cvt::e4m3x2_to_f16x2(w.gate_scales[h] as u16), odd);
    let up_scale = cvt::f16x2_broadcast_half(cvt::e4m3x2_to_f16x2(w.up_scales[h] as u16), odd);
    let gate = scaled_pairs(w.gate[h][words], w.gate[h][words + 1], gate_scale);
    let up = scaled_pairs(w.up[h][words], w.up[h][words + 1], up_scale);
    let mut steps = [[0u32; 4]; 4];
    for (s, step) in steps.iter_mut().enumerate() {
        *step = [gate[2 * s], up[2 * s], gate[2 * s + 1], up[2 * s + 1]];
    }
    steps
}

/// A consumer thread: per segment, the mainloop over its 64-K slices, then the SiLU·up epilogue
/// (whole tile) or the stream-K fix-up. The weight pipeline runs across segments: the last stage
/// of a segment loads the first stage of the next one, so a new tile starts without waiting for
/// memory.
#[inline(always)]
unsafe fn consume<const ACC: usize, const SETS: usize>(
    p: &Params,
    shared: &Shared,
    grid: &TileGrid,
    work: &Work,
    lane: &ConsumerLane,
    mma: &impl Fn(&mut [f32; ACC], [u32; 4], u64),
) {
    let tile = shared.tile;
    let thread = sreg::thread_idx_x();
    let mut decoded = RingPosition::<DECODED_STAGES>::new();
    let mut segments = work.segments();
    let mut current = match segments.clone().next() {
        // SAFETY: the first stage of the first segment's tile.
        Some(first) => unsafe { WeightRows::new(p, grid, lane, &first).load(first.first_stage) },
        None => WeightStage::ZERO,
    };
    let mut fragments = [slice_fragments(&current, 0), [[0; 4]; 4]];
    while let Some(segment) = segments.next() {
        let m0 = grid.coords(segment.tile).0 * tile.tokens;
        let n = lane.output(grid, &segment);
        let rows = WeightRows::new(p, grid, lane, &segment);
        let (first, last) = (segment.first_stage, segment.first_stage + segment.stages - 1);
        // What the last stage loads: the next segment's first stage (else its own stage again,
        // unused), chosen here so that the loop body has one unconditional load.
        let (tail_rows, tail_stage) = match segments.clone().next() {
            Some(following) => (WeightRows::new(p, grid, lane, &following), following.first_stage),
            None => (WeightRows::new(p, grid, lane, &segment), last),
        };
        // SETS independent accumulator sets, k16 step s into set s % SETS: small tiles' wgmmas
        // are latency-bound when chained through one accumulator (see `Tile::accumulator_sets`).
        let mut sets = [[0f32; ACC]; SETS];
        for stage in first..=last {
            // Loads in flight while this stage computes: the segment's next stage, else the tail.
            let (next_rows, next_stage) = if stage < last {
                (&rows, stage + 1)
            } else {
                (&tail_rows, tail_stage)
            };
            // SAFETY: a stage of this segment's tile or of the next segment's.
            let next = unsafe { next_rows.load(next_stage) };
            // One 64-K slice; written out four times so that every fragment index is a constant
            // (a run-time index would move the fragment registers to local memory).
            macro_rules! slice {
                ($j:literal, $decode_next:expr) => {{
                    let b = shared.decoded_slice(decoded.stage);
                    // SAFETY: barrier initialized; the decoder fills the slice.
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
                        release_previous(shared, &decoded);
                    }
                    decoded.advance();
                }};
            }
            slice!(0, slice_fragments(&current, 1));
            slice!(1, slice_fragments(&current, 2));
            slice!(2, slice_fragments(&current, 3));
            slice!(3, slice_fragments(&next, 0));
            current = next;
        }
        wgmma::wait_group::<0>();
        release_previous(shared, &decoded);
        // Constant indices only (an iterator over the sets moves them to local memory).
        let mut acc = sets[0];
        let mut add_set = |set: usize| {
            unrolled16!(ACC / 4, |q| {
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
        // SAFETY: the workspace and counters were sized by the host plan for this split.
        let finishes_tile = segment.count == 1 || unsafe { fix_up(p, work, &segment, &mut acc, thread) };
        if finishes_tile {
            // SAFETY: output indices are checked against M; N is exact.
            unsafe { epilogue(p, &acc, m0, n, lane.t) };
        }
    }
}

/// Stream-K fix-up of a segment of a split tile, called by all consumer threads together.
///
/// Segment 0 of a tile is the *reducer*: its CTA computes it last (a CTA's range ends inside
/// the tile), so the other segments are usually done by then. Every other segment stores its
/// partial sums to its slot and counts itself in the tile's counter (a release at GPU scope by
/// one thread after a barrier of the consumers), then goes on with its next segment. The reducer
/// waits until the counter shows all of them, adds their partial sums to its own in segment
/// order (a fixed order: results do not depend on timing), resets the counter for the next
/// launch and returns true. Waits only ever happen after a CTA's last segment, on segments that
/// other CTAs compute without waiting, so they cannot deadlock while the grid is resident (the
/// host launches at most one CTA per multiprocessor).
#[inline(always)]
unsafe fn fix_up<const ACC: usize>(
    p: &Params,
    work: &Work,
    segment: &Segment,
    acc: &mut [f32; ACC],
    thread: u32,
) -> bool {
    let slot_words = config::partial_slot_bytes(Tile {
        tokens: 2 * ACC as u32,
    }) as usize
        / 4;
    let slot = |index: u32| {
        // SAFETY: slots < 2 · CTAs, inside the workspace the plan allocated.
        unsafe {
            p.workspace
                .add(work.split.partial_slot(segment.tile, index) as usize * slot_words)
        }
    };
    // SAFETY: one counter per tile, allocated and zeroed by the plan.
    let counter = unsafe { p.tile_counters.add(segment.tile as usize) };
    // Accumulators q·4 .. q·4 + 3 of every thread are contiguous 16-byte runs: coalesced.
    let element = |q: usize| (q * CONSUMER_THREADS as usize + thread as usize) * 4;
    if segment.index != REDUCER_SEGMENT {
        let mine = slot(segment.index);
        unrolled16!(ACC / 4, |q| {
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
            // SAFETY: the tile's counter.
            unsafe { mem::red_add_relaxed_gpu_u32(counter, 1) };
        }
        return false;
    }
    // One thread polls (an acquire at GPU scope), the barrier passes what it saw on to the
    // other consumer threads; the partial sums are then read from L2.
    if thread == 0 {
        // SAFETY: the tile's counter; the other segments publish their slots before counting.
        while unsafe { mem::ld_acquire_gpu_u32(counter) } != segment.count - 1 {}
        // SAFETY: every other segment has counted itself; nobody reads it again in this launch.
        unsafe { mem::st_relaxed_gpu_b32(counter, 0) };
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
        let mut words = [[[0u32; 4]; 2]; 16];
        unrolled16!(ACC / 4, |q| {
            // SAFETY: inside slots `index` and (when read) `index + 1`, written by their
            // segments before their release.
            unsafe {
                words[q][0] = mem::ld_global_cg_v4_b32(first.add(element(q)));
                if both {
                    words[q][1] = mem::ld_global_cg_v4_b32(second.add(element(q)));
                }
            }
        });
        unrolled16!(ACC / 4, |q| {
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

/// The segment of a split tile that adds the others' partial sums (see [`fix_up`]).
const REDUCER_SEGMENT: u32 = 0;

/// Releases the decoded slice before `position` (its wgmmas have completed).
#[inline(always)]
fn release_previous(shared: &Shared, position: &RingPosition<DECODED_STAGES>) {
    let previous = (position.stage + DECODED_STAGES - 1) % DECODED_STAGES;
    // SAFETY: barrier initialized.
    unsafe { mbarrier::arrive(shared.decoded_empty(previous)) };
}

/// `C[token][n] = silu(alpha_gate · gate) · (alpha_up · up)` for this thread's outputs:
/// accumulator `4q + e` is the gate and `4q + 2 + e` the up value of token `8q + 2t + e`.
#[inline(always)]
unsafe fn epilogue<const ACC: usize>(p: &Params, acc: &[f32; ACC], m0: u32, n: u32, t: u32) {
    let store = |q: usize| {
        for e in 0..2 {
            let token = m0 + 8 * q as u32 + 2 * t + e as u32;
            if token < p.m {
                let gate = acc[4 * q + e] * p.alpha_gate;
                let up = acc[4 * q + 2 + e] * p.alpha_up;
                let value = cvt::f32_to_f16_rn(silu(gate) * up);
                // SAFETY: token < M, n < N.
                unsafe { mem::st_global_b16(p.out.add(token as usize * p.n as usize + n as usize), value) };
            }
        }
    };
    unrolled16!(ACC / 4, |q| { store(q) });
}

macro_rules! entry_point {
    ($name:ident, $acc:literal, $mma:path) => {
        /// The sm_90a dual GEMM for one token-tile width (see the module doc for the contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            a_map: u64,
            a_scales: *const u8,
            b1: *const u8,
            b1_scales: *const u8,
            b2: *const u8,
            b2_scales: *const u8,
            out: *mut u16,
            workspace: *mut u32,
            tile_counters: *mut u32,
            m: u32,
            n: u32,
            k: u32,
            alpha_gate: f32,
            alpha_up: f32,
        ) {
            let p = Params {
                a_map,
                a_scales,
                b1,
                b1_scales,
                b2,
                b2_scales,
                out,
                workspace,
                tile_counters,
                m,
                n,
                k,
                alpha_gate,
                alpha_up,
            };
            // SAFETY (both): forwarded contract; descriptors point into the decoded slices.
            let mma = |acc: &mut [f32; $acc], a: [u32; 4], b: u64| unsafe { $mma(acc, a, b, true) };
            const TILE: Tile = Tile { tokens: 2 * $acc };
            const REGISTERS: config::RegisterSplit = TILE.registers();
            const SETS: usize = TILE.accumulator_sets() as usize;
            unsafe {
                dual_gemm::<$acc, SETS, { REGISTERS.consumer }, { REGISTERS.decoder }, { REGISTERS.producer }>(
                    &p, mma,
                )
            }
        }
    };
}

entry_point!(nvfp4_dual_gemm_sm90_t8, 4, wgmma::m64n8k16);
entry_point!(nvfp4_dual_gemm_sm90_t16, 8, wgmma::m64n16k16);
entry_point!(nvfp4_dual_gemm_sm90_t32, 16, wgmma::m64n32k16);
entry_point!(nvfp4_dual_gemm_sm90_t64, 32, wgmma::m64n64k16);
entry_point!(nvfp4_dual_gemm_sm90_t128, 64, wgmma::m64n128k16);
