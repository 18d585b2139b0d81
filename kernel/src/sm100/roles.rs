//! The roles every sm_100f kernel runs (design: `docs/sm100-kernels.md`): barrier and TMEM
//! setup, the TMA lane, the MMA warp and the four epilogue warps, over the tiles a [`Problem`]
//! deals this CTA. The dense dual GEMM and the grouped kernels differ only in their `Problem`:
//! which tiles, and where each reads and writes ([`Job`]).

use crate::desc::{umma_desc_scale_atom, umma_desc_sw128_k_major, umma_idesc_mxf4nvf4};
use crate::epilogue::GatedProduct;
use crate::layout::ATOM_BYTES;
use crate::ptx::tcgen05::ACollector;
use crate::ptx::{copy, cvt, fence, mbarrier, mem, smem, sreg, tcgen05};
use crate::quantize::encode_f16_block;
use crate::ring::RingPosition;
use crate::sm100::config::{
    BOX_ROWS, EPILOGUE_WARPS, K_PER_STAGE, MMA_WARP, NVFP4_CHUNK, NVFP4_CHUNKS_PER_SCALE_WORD, SCALE_BYTES,
    STAGE_A, STAGES, THREADS, TILE_M, TMA_WARP, TMEM_COLUMNS, Tile, TilePlace, nvfp4_data_offset,
    nvfp4_scale_word_offset, stage_mmas, tmem_address,
};

/// One tile's work: its operands (tensor maps and scale atoms), K, output and scales.
#[derive(Clone, Copy)]
pub(crate) struct Job {
    /// Generic address of the tokens' tensor map.
    pub a_map: u64,
    /// Generic address of the gate weights' tensor map.
    pub gate_map: u64,
    /// Generic address of the up weights' tensor map.
    pub up_map: u64,
    /// The tokens' scale atoms of the tile (stage 0; the stages follow contiguously).
    pub a_scales: *const u8,
    /// The gate tile's scale atoms (stage 0).
    pub gate_scales: *const u8,
    /// The up tile's scale atoms (stage 0).
    pub up_scales: *const u8,
    /// Rows, columns and element offsets (`place.out` is already applied to `out`).
    pub place: TilePlace,
    /// The tile's first output (token 0, output 0).
    pub out: *mut u16,
    /// Elements between output rows.
    pub ldc: u32,
    /// Reduction length (a positive multiple of 64).
    pub k: u32,
    /// Scale of the gate (or plain) product.
    pub alpha_gate: f32,
    /// Scale of the up product.
    pub alpha_up: f32,
    /// Where the tile writes NVFP4 (problems with [`Problem::NVFP4_OUT`]; else
    /// [`Nvfp4Output::NONE`]).
    pub nvfp4: Nvfp4Output,
}

impl Job {
    /// 256-K stages of the tile.
    fn stages(&self) -> u32 {
        self.k.div_ceil(K_PER_STAGE)
    }
}

/// What a kernel computes: gated (`silu(gate) · up` per output) or plain (the gate and up MMAs
/// produce the two halves of [`Tile::outputs`]), and the tiles of this CTA in order.
pub(crate) trait Problem {
    /// Gated (dual) or plain.
    const GATED: bool;
    /// This CTA's tiles.
    type Tiles: Iterator<Item = Job>;
    /// This CTA's tiles, in the same order for every role.
    fn tiles(&self) -> Self::Tiles;
    /// Warms the TMA descriptor cache (the TMA lane calls it once).
    fn prefetch_maps(&self) {}
    /// Whether A stays in the MMA's collector between the gate and up MMAs
    /// (`config::ACollectorUse`).
    fn reuse_a(&self) -> bool;
    /// Whether the (gated) tiles write NVFP4 ([`Job::nvfp4`]) instead of fp16 through
    /// `Job::out`.
    const NVFP4_OUT: bool = false;
}

/// A tile's NVFP4 output: the `m × n` matrix it belongs to (the dense C, or a group's rows of
/// it), as packed e2m1 data and blocked scales quantized along N with `global_scale`
/// (`config::nvfp4_data_offset`, `config::nvfp4_scale_word_offset`), and the tile's first token
/// and output in it (`m0` a multiple of 128: a whole row block of the scales).
#[derive(Clone, Copy)]
pub(crate) struct Nvfp4Output {
    pub data: *mut u8,
    pub scales: *mut u8,
    pub m: u32,
    pub n: u32,
    pub global_scale: f32,
    pub m0: u32,
    pub n0: u32,
}

impl Nvfp4Output {
    /// No NVFP4 output (fp16 problems).
    pub const NONE: Self = Self {
        data: core::ptr::null_mut(),
        scales: core::ptr::null_mut(),
        m: 0,
        n: 0,
        global_scale: 1.0,
        m0: 0,
        n0: 0,
    };
}

/// Shared addresses of the ring, the barriers and the TMEM slot of one tile shape.
#[derive(Clone, Copy)]
struct Shared {
    tile: Tile,
    base: u32,
}

impl Shared {
    fn stage(&self, stage: u32) -> u32 {
        self.base + stage * self.tile.stage_bytes()
    }
    fn full(&self, stage: u32) -> u32 {
        self.base + self.tile.barriers() + 8 * stage
    }
    fn empty(&self, stage: u32) -> u32 {
        self.full(STAGES + stage)
    }
    fn accumulator_full(&self, buffer: u32) -> u32 {
        self.full(2 * STAGES + buffer)
    }
    fn accumulator_empty(&self, buffer: u32) -> u32 {
        self.full(2 * STAGES + self.tile.accumulator_buffers() + buffer)
    }
    fn tmem_slot(&self) -> u32 {
        self.base + self.tile.tmem_slot()
    }
}

/// Arrivals per barrier phase.
const FULL_ARRIVALS: u32 = 1; // the TMA lane's arrive.expect_tx (+ the stage's bytes)
const EMPTY_ARRIVALS: u32 = 1; // the MMA lane's tcgen05.commit
const ACCUMULATOR_FULL_ARRIVALS: u32 = 1; // the MMA lane's tcgen05.commit
const ACCUMULATOR_EMPTY_ARRIVALS: u32 = 32 * EPILOGUE_WARPS; // every epilogue thread

const _: () = assert!(THREADS == 192, "one TMA warp, one MMA warp, four epilogue warps");

/// The kernel body for tiles of 128 tokens × `N` (MMA N) with `BUFFERS` TMEM accumulator
/// buffers ([`Tile::accumulator_buffers`]): sets up barriers and TMEM, runs this thread's role
/// over `problem`'s tiles, frees TMEM.
///
/// # Safety
/// Every job satisfies the module contract (valid maps, scale atoms and outputs; `k` a positive
/// multiple of 64); `THREADS` threads; `Tile::shared_bytes` of dynamic shared memory.
#[inline(always)]
pub(crate) unsafe fn run<P: Problem, const N: u32, const BUFFERS: u32>(problem: &P) {
    const { assert!(P::GATED || !P::NVFP4_OUT, "NVFP4 output is the gated epilogue's") };
    let tile = Tile { n: N };
    let shared = Shared {
        tile,
        base: smem::base(),
    };
    let thread = sreg::thread_idx_x();
    let warp = thread / 32;
    if thread == 0 {
        for stage in 0..STAGES {
            // SAFETY: barrier slots are inside the shared plan; only thread 0 touches them here.
            unsafe {
                mbarrier::init(shared.full(stage), FULL_ARRIVALS);
                mbarrier::init(shared.empty(stage), EMPTY_ARRIVALS);
            }
        }
        for buffer in 0..BUFFERS {
            // SAFETY: as above.
            unsafe {
                mbarrier::init(shared.accumulator_full(buffer), ACCUMULATOR_FULL_ARRIVALS);
                mbarrier::init(shared.accumulator_empty(buffer), ACCUMULATOR_EMPTY_ARRIVALS);
            }
        }
        fence::mbarrier_init();
    }
    if warp == MMA_WARP {
        tcgen05::alloc::<TMEM_COLUMNS>(shared.tmem_slot());
        tcgen05::relinquish_alloc_permit();
        tcgen05::fence_before_thread_sync();
    }
    fence::sync_threads();
    tcgen05::fence_after_thread_sync();
    // SAFETY: written by tcgen05.alloc before the barrier.
    let tmem = unsafe { smem::ld_b32(shared.tmem_slot()) };

    if warp == TMA_WARP {
        if sreg::lane_id() == 0 {
            // SAFETY: the caller's contract.
            unsafe { produce(problem, &shared) };
        }
    } else if warp == MMA_WARP {
        // SAFETY: as above.
        unsafe { issue_mmas::<P, BUFFERS>(problem, &shared, tmem) };
    } else {
        // SAFETY: as above.
        unsafe { drain_accumulators::<P, BUFFERS>(problem, &shared, tmem, warp % 4) };
    }
    // Every TMEM access has completed (epilogue loads waited, MMAs committed and consumed).
    fence::sync_threads();
    if warp == MMA_WARP {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<TMEM_COLUMNS>(tmem);
    }
}

/// The TMA lane: per tile and 256-K stage, A (two boxes), gate and up (`n / 64` boxes each) and
/// their scale atoms.
#[inline(always)]
unsafe fn produce<P: Problem>(problem: &P, shared: &Shared) {
    let tile = shared.tile;
    problem.prefetch_maps();
    let mut ring = RingPosition::<STAGES>::new();
    for job in problem.tiles() {
        let place = job.place;
        for k_stage in 0..job.stages() {
            // A partial last stage copies only its existing scale atoms.
            let mmas = stage_mmas(job.k, k_stage);
            let scale_bytes = mmas * ATOM_BYTES as u32;
            let atoms = (k_stage * SCALE_BYTES) as usize;
            let (full, base, x) = (
                shared.full(ring.stage),
                shared.stage(ring.stage),
                (k_stage * 128) as i32,
            );
            // SAFETY: copies stay inside the stage and the scale buffers (the job's contract);
            // boxes past a map's rows or K are filled with zeros.
            unsafe {
                mbarrier::wait(shared.empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, tile.stage_transfer_bytes(mmas));
                for b in 0..TILE_M / BOX_ROWS {
                    let row = (place.a_row + b * BOX_ROWS) as i32;
                    copy::tensor_2d(base + STAGE_A + b * BOX_ROWS * 128, job.a_map, x, row, full);
                }
                for b in 0..tile.b_boxes() {
                    let offset = b * BOX_ROWS * 128;
                    let (gate_row, up_row) = (place.gate_row + b * BOX_ROWS, place.up_row + b * BOX_ROWS);
                    copy::tensor_2d(
                        base + tile.stage_b1() + offset,
                        job.gate_map,
                        x,
                        gate_row as i32,
                        full,
                    );
                    copy::tensor_2d(
                        base + tile.stage_b2() + offset,
                        job.up_map,
                        x,
                        up_row as i32,
                        full,
                    );
                }
                copy::bulk(
                    base + tile.stage_sfa(),
                    job.a_scales.add(atoms),
                    scale_bytes,
                    full,
                );
                copy::bulk(
                    base + tile.stage_sfb1(),
                    job.gate_scales.add(atoms),
                    scale_bytes,
                    full,
                );
                copy::bulk(
                    base + tile.stage_sfb2(),
                    job.up_scales.add(atoms),
                    scale_bytes,
                    full,
                );
            }
            ring.advance();
        }
    }
}

/// The MMA warp: all lanes wait, lane 0 issues scale copies, MMAs and commits.
#[inline(always)]
unsafe fn issue_mmas<P: Problem, const BUFFERS: u32>(problem: &P, shared: &Shared, tmem: u32) {
    let tile = shared.tile;
    let idesc = umma_idesc_mxf4nvf4(TILE_M, tile.n);
    let issuer = sreg::lane_id() == 0;
    let (first, second) = if problem.reuse_a() {
        (ACollector::Fill, ACollector::LastUse)
    } else {
        (ACollector::Discard, ACollector::Discard)
    };
    let mut ring = RingPosition::<STAGES>::new();
    let mut accumulators = RingPosition::<BUFFERS>::new();
    for job in problem.tiles() {
        let buffer = accumulators.stage;
        // SAFETY: barrier initialized; the epilogue releases the buffer.
        unsafe { mbarrier::wait(shared.accumulator_empty(buffer), accumulators.empty_parity()) };
        tcgen05::fence_after_thread_sync();
        let gate = tmem_address(tmem, 0, tile.gate_column(buffer));
        let up = gate + tile.n;
        for k_stage in 0..job.stages() {
            let stage = ring.stage;
            // A partial last stage has fewer MMAs (and copied atoms).
            let mmas = stage_mmas(job.k, k_stage);
            // SAFETY: barrier initialized; the TMA lane fills the stage.
            unsafe { mbarrier::wait(shared.full(stage), ring.full_parity()) };
            tcgen05::fence_after_thread_sync();
            if issuer {
                let base = shared.stage(stage);
                let column =
                    |operand: u32, mma: u32| tmem_address(tmem, 0, tile.scale_column(stage, operand, mma));
                for j in 0..mmas {
                    let atom = j * ATOM_BYTES as u32;
                    // SAFETY: atoms inside the stage; columns inside this stage's scale range,
                    // whose previous readers completed before `empty[stage]` let the TMA refill it.
                    unsafe {
                        tcgen05::cp_32x128b_warpx4(
                            column(0, j),
                            umma_desc_scale_atom(base + tile.stage_sfa() + atom),
                        );
                        tcgen05::cp_32x128b_warpx4(
                            column(1, j),
                            umma_desc_scale_atom(base + tile.stage_sfb1() + atom),
                        );
                        tcgen05::cp_32x128b_warpx4(
                            column(2, j),
                            umma_desc_scale_atom(base + tile.stage_sfb2() + atom),
                        );
                    }
                }
                for j in 0..mmas {
                    // K = 64 fp4 is 32 bytes along the 128-byte swizzled rows.
                    let a = umma_desc_sw128_k_major(base + STAGE_A + 32 * j);
                    let b1 = umma_desc_sw128_k_major(base + tile.stage_b1() + 32 * j);
                    let b2 = umma_desc_sw128_k_major(base + tile.stage_b2() + 32 * j);
                    let accumulate = k_stage > 0 || j > 0;
                    // With reuse, A stays in the collector between the two MMAs: read from shared
                    // memory once.
                    let (sfa, sfb1, sfb2) = (
                        column(0, j),
                        column(1, j) + job.place.gate_column,
                        column(2, j) + job.place.up_column,
                    );
                    // SAFETY: descriptors and TMEM addresses from the shared and TMEM plans.
                    unsafe {
                        tcgen05::mma_mxf4nvf4(gate, a, b1, idesc, sfa, sfb1, accumulate, first);
                        tcgen05::mma_mxf4nvf4(up, a, b2, idesc, sfa, sfb2, accumulate, second);
                    }
                }
                // SAFETY: barrier initialized; arrives when this stage's MMAs have read it.
                unsafe { tcgen05::commit(shared.empty(stage)) };
            }
            ring.advance();
        }
        if issuer {
            // SAFETY: barrier initialized; arrives when the tile's MMAs have completed.
            unsafe { tcgen05::commit(shared.accumulator_full(buffer)) };
        }
        accumulators.advance();
    }
}

/// An epilogue warp: TMEM lanes `32·quadrant ..`, i.e. the tile's tokens `32·quadrant + lane`.
/// Gated: `silu(α_gate·gate) · α_up·up` into outputs `0 .. n`; plain: `α_gate·gate` into
/// `0 .. n` and `α_up·up` into `n .. 2n`. Tokens and outputs past the job's are not written.
#[inline(always)]
unsafe fn drain_accumulators<P: Problem, const BUFFERS: u32>(
    problem: &P,
    shared: &Shared,
    tmem: u32,
    quadrant: u32,
) {
    let tile = shared.tile;
    let token = 32 * quadrant + sreg::lane_id();
    let mut accumulators = RingPosition::<BUFFERS>::new();
    for job in problem.tiles() {
        let buffer = accumulators.stage;
        // SAFETY: barrier initialized; the MMA warp commits the buffer.
        unsafe { mbarrier::wait(shared.accumulator_full(buffer), accumulators.full_parity()) };
        tcgen05::fence_after_thread_sync();
        let row = job.out.wrapping_add(token as usize * job.ldc as usize);
        let exists = token < job.place.rows;
        // The NVFP4 output's scales of the current four chunks (one word of the layout).
        let mut scale_word = 0u32;
        for chunk in 0..tile.n / 16 {
            let column = tile.gate_column(buffer) + 16 * chunk;
            let lane_base = tmem_address(tmem, 32 * quadrant, column);
            let (gate, up) = tcgen05::ld_32x32b_x16_pair(lane_base, lane_base + tile.n);
            let output = 16 * chunk;
            if P::NVFP4_OUT {
                // SAFETY: the chunk's outputs exist (checked inside); C's buffers hold `m × n`.
                unsafe { store_nvfp4_chunk(&job, token, chunk, &mut scale_word, gate, up) };
            } else if P::GATED {
                let product = GatedProduct::new(job.alpha_gate, job.alpha_up);
                let value = |i: usize| {
                    cvt::f32_to_f16_rn(product.value(f32::from_bits(gate[i]), f32::from_bits(up[i]))) as u32
                };
                if exists && output < job.place.columns {
                    // SAFETY: an existing token and 16 existing outputs; 32-byte aligned.
                    unsafe { store_16(row.wrapping_add(output as usize), pack_16(value)) };
                }
            } else {
                let gate_value =
                    |i: usize| cvt::f32_to_f16_rn(f32::from_bits(gate[i]) * job.alpha_gate) as u32;
                let up_value = |i: usize| cvt::f32_to_f16_rn(f32::from_bits(up[i]) * job.alpha_up) as u32;
                if exists && output < job.place.columns {
                    // SAFETY: as above.
                    unsafe { store_16(row.wrapping_add(output as usize), pack_16(gate_value)) };
                }
                if exists && tile.n + output < job.place.columns {
                    // SAFETY: as above, for the up half.
                    unsafe { store_16(row.wrapping_add((tile.n + output) as usize), pack_16(up_value)) };
                }
            }
        }
        tcgen05::fence_before_thread_sync();
        // SAFETY: barrier initialized; this thread's TMEM loads have completed (their wait::ld).
        unsafe { mbarrier::arrive(shared.accumulator_empty(buffer)) };
        accumulators.advance();
    }
}

/// The NVFP4 epilogue of one 16-output chunk of token lane `token` (one scale block): the
/// values rounded to fp16 as the fp16 epilogue stores them, then encoded with the quantizer's
/// block arithmetic (`quantize::encode_f16_block`, so the output is bit for bit
/// `quantize(fp16 C)`): 8 data bytes if the token exists; the block's scale joins
/// `scale_word`, which every fourth chunk stores (zeros for the layout's padding rows). The
/// chunk's 16 outputs are one block: TMEM hands each lane one token's consecutive columns, so
/// nothing is staged or exchanged.
///
/// # Safety
/// `job.nvfp4` is the tile's NVFP4 output: `m × n/2` data bytes and the whole scale layout.
#[inline(always)]
unsafe fn store_nvfp4_chunk(
    job: &Job,
    token: u32,
    chunk: u32,
    scale_word: &mut u32,
    gate: [u32; 16],
    up: [u32; 16],
) {
    let out = job.nvfp4;
    let (m0, n0) = (out.m0, out.n0);
    if NVFP4_CHUNK * chunk >= job.place.columns {
        return;
    }
    if token < job.place.rows {
        let product = GatedProduct::new(job.alpha_gate, job.alpha_up);
        let value = |i: usize| {
            cvt::f32_to_f16_rn(product.value(f32::from_bits(gate[i]), f32::from_bits(up[i]))) as u32
        };
        let p = pack_16(value);
        let (scale, words) = encode_f16_block(
            [[p[0], p[1], p[2], p[3]], [p[4], p[5], p[6], p[7]]],
            out.global_scale,
        );
        let at = nvfp4_data_offset(out.n, m0, n0, token, chunk);
        // SAFETY: an existing token's block inside C's data (caller), 8-byte aligned.
        unsafe { mem::st_global_v2_b32(out.data.add(at) as *mut u32, words) };
        *scale_word |= (scale as u32) << (8 * (chunk % NVFP4_CHUNKS_PER_SCALE_WORD));
    }
    if chunk % NVFP4_CHUNKS_PER_SCALE_WORD == NVFP4_CHUNKS_PER_SCALE_WORD - 1 {
        let word = chunk / NVFP4_CHUNKS_PER_SCALE_WORD;
        if let Some(at) = nvfp4_scale_word_offset(out.m, out.n, m0, n0, token, word) {
            // SAFETY: a word of C's scale layout (caller), 4-byte aligned.
            unsafe { mem::st_global_b32(out.scales.add(at) as *mut u32, *scale_word) };
        }
        *scale_word = 0;
    }
}

/// 16 fp16 values `value(0..16)` packed in pairs.
#[inline(always)]
fn pack_16(value: impl Fn(usize) -> u32) -> [u32; 8] {
    // Literal indices: a run-time index would move the loaded registers to local memory.
    macro_rules! pair {
        ($i:literal) => {
            value(2 * $i) | (value(2 * $i + 1) << 16)
        };
    }
    [
        pair!(0),
        pair!(1),
        pair!(2),
        pair!(3),
        pair!(4),
        pair!(5),
        pair!(6),
        pair!(7),
    ]
}

/// Stores 16 packed fp16 values at `dst` (32-byte aligned).
#[inline(always)]
unsafe fn store_16(dst: *mut u16, packed: [u32; 8]) {
    let dst = dst as *mut u32;
    // SAFETY: the caller's.
    unsafe {
        mem::st_global_v4_b32(dst, [packed[0], packed[1], packed[2], packed[3]]);
        mem::st_global_v4_b32(dst.add(4), [packed[4], packed[5], packed[6], packed[7]]);
    }
}
