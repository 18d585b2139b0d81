#![doc = include_str!("../../../docs/sm100-kernels.md")]

use crate::desc::{umma_desc_scale_atom, umma_desc_sw128_k_major, umma_idesc_mxf4nvf4};
use crate::epilogue::silu;
use crate::layout::{ATOM_BYTES, BlockedScales};
use crate::ptx::tcgen05::ACollector;
use crate::ptx::{copy, cvt, fence, mbarrier, mem, smem, sreg, tcgen05};
use crate::ring::RingPosition;
use crate::schedule::TileGrid;
use crate::sm100::config::{
    BOX_ROWS, DualGemmArgs, EPILOGUE_WARPS, K_PER_STAGE, MMA_WARP, STAGE_A, STAGES, THREADS, TILE_M,
    TMA_WARP, TMEM_COLUMNS, Tile, b_scale_column_offset, stage_mmas, stage_scale_atoms, tmem_address,
};

/// Kernel arguments (one definition: [`DualGemmArgs`]).
type Params = DualGemmArgs;

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

/// The kernel body for tiles of 128 tokens × `N` outputs with `BUFFERS` TMEM accumulator
/// buffers ([`Tile::accumulator_buffers`]).
#[inline(always)]
unsafe fn dual_gemm<const N: u32, const BUFFERS: u32>(p: &Params) {
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

    let grid = TileGrid::new(p.m, p.n, TILE_M, N).unwrap_or(TileGrid {
        m_tiles: 0,
        n_tiles: 0,
    });
    if grid.m_tiles != 0 && grid.n_tiles != 0 && p.k >= K_PER_STAGE {
        if warp == TMA_WARP {
            if sreg::lane_id() == 0 {
                // SAFETY: the host plan checked the module contract.
                unsafe { produce(p, &shared, &grid) };
            }
        } else if warp == MMA_WARP {
            // SAFETY: as above.
            unsafe { issue_mmas::<BUFFERS>(p, &shared, &grid, tmem) };
        } else {
            // SAFETY: as above.
            unsafe { drain_accumulators::<BUFFERS>(p, &shared, &grid, tmem, warp % 4) };
        }
    }
    // Every TMEM access has completed (epilogue loads waited, MMAs committed and consumed).
    fence::sync_threads();
    if warp == MMA_WARP {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<TMEM_COLUMNS>(tmem);
    }
}

/// This CTA's tiles: `blockIdx, blockIdx + gridDim, …`.
struct Tiles {
    next: u32,
    len: u32,
}

impl Iterator for Tiles {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        let tile = self.next;
        self.next += sreg::grid_dim_x();
        (tile < self.len).then_some(tile)
    }
}

fn my_tiles(grid: &TileGrid) -> Tiles {
    Tiles {
        next: sreg::block_idx_x(),
        len: grid.len(),
    }
}

/// The TMA lane: per tile and 256-K stage, A (two boxes), B1 and B2 (`n / 64` boxes each) and
/// their scale atoms.
#[inline(always)]
unsafe fn produce(p: &Params, shared: &Shared, grid: &TileGrid) {
    let tile = shared.tile;
    let (a_scales, b_scales) = (
        BlockedScales::new(p.m as usize, p.k as usize),
        BlockedScales::new(p.n as usize, p.k as usize),
    );
    // SAFETY: valid tensor maps (host contract).
    unsafe {
        copy::prefetch_tensor_map(p.a_map);
        copy::prefetch_tensor_map(p.b1_map);
        copy::prefetch_tensor_map(p.b2_map);
    }
    let mut ring = RingPosition::<STAGES>::new();
    for index in my_tiles(grid) {
        let (m_tile, n_tile) = grid.coords(index);
        let (m0, n0) = (m_tile * TILE_M, n_tile * tile.n);
        for k_stage in 0..p.k.div_ceil(K_PER_STAGE) {
            // A partial last stage copies only its existing scale atoms.
            let mmas = stage_mmas(p.k, k_stage);
            let scale_bytes = mmas * ATOM_BYTES as u32;
            let (full, base, x) = (
                shared.full(ring.stage),
                shared.stage(ring.stage),
                (k_stage * 128) as i32,
            );
            let (a_atoms, b_atoms) = (
                stage_scale_atoms(&a_scales, m0, k_stage),
                stage_scale_atoms(&b_scales, n0, k_stage),
            );
            // SAFETY: copies stay inside the stage and the scale buffers; A's box may run past M
            // (zeros); the A row block m0/128 exists since m0 < M.
            unsafe {
                mbarrier::wait(shared.empty(ring.stage), ring.empty_parity());
                mbarrier::arrive_expect_tx(full, tile.stage_transfer_bytes(mmas));
                for b in 0..TILE_M / BOX_ROWS {
                    copy::tensor_2d(
                        base + STAGE_A + b * BOX_ROWS * 128,
                        p.a_map,
                        x,
                        (m0 + b * BOX_ROWS) as i32,
                        full,
                    );
                }
                for b in 0..tile.b_boxes() {
                    let (offset, row) = (b * BOX_ROWS * 128, (n0 + b * BOX_ROWS) as i32);
                    copy::tensor_2d(base + tile.stage_b1() + offset, p.b1_map, x, row, full);
                    copy::tensor_2d(base + tile.stage_b2() + offset, p.b2_map, x, row, full);
                }
                copy::bulk(
                    base + tile.stage_sfa(),
                    p.a_scales.add(a_atoms),
                    scale_bytes,
                    full,
                );
                copy::bulk(
                    base + tile.stage_sfb1(),
                    p.b1_scales.add(b_atoms),
                    scale_bytes,
                    full,
                );
                copy::bulk(
                    base + tile.stage_sfb2(),
                    p.b2_scales.add(b_atoms),
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
unsafe fn issue_mmas<const BUFFERS: u32>(p: &Params, shared: &Shared, grid: &TileGrid, tmem: u32) {
    let tile = shared.tile;
    let idesc = umma_idesc_mxf4nvf4(TILE_M, tile.n);
    let issuer = sreg::lane_id() == 0;
    let mut ring = RingPosition::<STAGES>::new();
    let mut accumulators = RingPosition::<BUFFERS>::new();
    for index in my_tiles(grid) {
        let n0 = grid.coords(index).1 * tile.n;
        let sfb_offset = b_scale_column_offset(n0);
        let buffer = accumulators.stage;
        // SAFETY: barrier initialized; the epilogue releases the buffer.
        unsafe { mbarrier::wait(shared.accumulator_empty(buffer), accumulators.empty_parity()) };
        tcgen05::fence_after_thread_sync();
        let gate = tmem_address(tmem, 0, tile.gate_column(buffer));
        let up = gate + tile.n;
        for k_stage in 0..p.k.div_ceil(K_PER_STAGE) {
            let stage = ring.stage;
            // A partial last stage has fewer MMAs (and copied atoms).
            let mmas = stage_mmas(p.k, k_stage);
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
                    // A stays in the collector between the two MMAs: read from shared memory once.
                    let (sfa, sfb1, sfb2) =
                        (column(0, j), column(1, j) + sfb_offset, column(2, j) + sfb_offset);
                    // SAFETY: descriptors and TMEM addresses from the shared and TMEM plans.
                    unsafe {
                        tcgen05::mma_mxf4nvf4(gate, a, b1, idesc, sfa, sfb1, accumulate, ACollector::Fill);
                        tcgen05::mma_mxf4nvf4(up, a, b2, idesc, sfa, sfb2, accumulate, ACollector::LastUse);
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

/// An epilogue warp: TMEM lanes `32·quadrant ..`, i.e. tokens `m0 + 32·quadrant + lane`.
#[inline(always)]
unsafe fn drain_accumulators<const BUFFERS: u32>(
    p: &Params,
    shared: &Shared,
    grid: &TileGrid,
    tmem: u32,
    quadrant: u32,
) {
    let tile = shared.tile;
    let lane = sreg::lane_id();
    let mut accumulators = RingPosition::<BUFFERS>::new();
    for index in my_tiles(grid) {
        let (m_tile, n_tile) = grid.coords(index);
        let token = m_tile * TILE_M + 32 * quadrant + lane;
        let n0 = n_tile * tile.n;
        let buffer = accumulators.stage;
        // SAFETY: barrier initialized; the MMA warp commits the buffer.
        unsafe { mbarrier::wait(shared.accumulator_full(buffer), accumulators.full_parity()) };
        tcgen05::fence_after_thread_sync();
        for chunk in 0..tile.n / 16 {
            let column = tile.gate_column(buffer) + 16 * chunk;
            let lane_base = tmem_address(tmem, 32 * quadrant, column);
            let (gate, up) = tcgen05::ld_32x32b_x16_pair(lane_base, lane_base + tile.n);
            let value = |i: usize| {
                let g = f32::from_bits(gate[i]) * p.alpha_gate;
                let u = f32::from_bits(up[i]) * p.alpha_up;
                cvt::f32_to_f16_rn(silu(g) * u) as u32
            };
            // Literal indices: a run-time index would move the loaded registers to local memory.
            macro_rules! pair {
                ($i:literal) => {
                    value(2 * $i) | (value(2 * $i + 1) << 16)
                };
            }
            let packed = [
                pair!(0),
                pair!(1),
                pair!(2),
                pair!(3),
                pair!(4),
                pair!(5),
                pair!(6),
                pair!(7),
            ];
            if token < p.m {
                let offset = token as usize * p.n as usize + (n0 + 16 * chunk) as usize;
                // SAFETY: token < M, n0 + 16·chunk + 16 ≤ N; 32-byte aligned (N % 64 == 0).
                unsafe {
                    let dst = p.out.add(offset) as *mut u32;
                    mem::st_global_v4_b32(dst, [packed[0], packed[1], packed[2], packed[3]]);
                    mem::st_global_v4_b32(dst.add(4), [packed[4], packed[5], packed[6], packed[7]]);
                }
            }
        }
        tcgen05::fence_before_thread_sync();
        // SAFETY: barrier initialized; this thread's TMEM loads have completed (their wait::ld).
        unsafe { mbarrier::arrive(shared.accumulator_empty(buffer)) };
        accumulators.advance();
    }
}

macro_rules! entry_point {
    ($name:ident, $n:literal) => {
        /// The sm_100f dual GEMM for one tile width (see the module doc for the contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: DualGemmArgs) {
            const BUFFERS: u32 = Tile { n: $n }.accumulator_buffers();
            // SAFETY: forwarded contract.
            unsafe { dual_gemm::<$n, BUFFERS>(&p) }
        }
    };
}

entry_point!(nvfp4_dual_gemm_sm100_n64, 64);
entry_point!(nvfp4_dual_gemm_sm100_n128, 128);
