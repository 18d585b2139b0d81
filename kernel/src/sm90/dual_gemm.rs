//! The dense NVFP4 dual GEMM for Hopper (sm_90a), `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)`, and the dense
//! plain GEMM, `C = α·A·B1ᵀ` (the same kernel with a one-product epilogue, whose tiles hold
//! twice the outputs), fp16 out: their entry points and the problem they hand to the shared
//! roles (`sm90::mainloop`).
//!
#![doc = include_str!("../../../docs/sm90-kernels.md")]

use crate::epilogue::{NVFP4_TILE_BLOCKS, Nvfp4Tile};
use crate::layout::{BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{fence, reg, smem, sreg, wgmma};
use crate::schedule::{StreamK, TileGrid, TileSpan, UniformTiles};
use crate::sm90::config::{self, DualGemmArgs, K_PER_STAGE, Tile, tile_n};
use crate::sm90::mainloop::{
    self, ConsumerLane, PackedTokens, Problem, RowOffsets, Shared, TileJob, WeightBases, WeightStage, Work,
};
use crate::sm90::registry;
use crate::sm90::tokens::{DenseCodec, decoded_row_words};

/// A dense dual GEMM (`GATED`; with NVFP4 output if `NVFP4`) or plain GEMM, writing bf16
/// instead of fp16 if `BF16`: one problem, tiles numbered token tile fastest. A plain problem
/// reads only `b1` (its up halves are `b1` shifted by 8 rows).
struct DenseProblem<'a, M, const GATED: bool, const NVFP4: bool, const BF16: bool> {
    args: &'a DualGemmArgs,
    grid: TileGrid,
    /// The generic address of `args.a_map` in parameter space (computed where it is used: it
    /// is not kept in a register across the roles).
    token_map: M,
}

impl<M: Fn() -> u64, const GATED: bool, const NVFP4: bool, const BF16: bool> Problem
    for DenseProblem<'_, M, GATED, NVFP4, BF16>
{
    type Space = UniformTiles;
    const OUT_BF16: bool = {
        assert!(!(NVFP4 && BF16), "one output format");
        BF16
    };
    const GATED: bool = GATED;
    const NVFP4_OUT: bool = {
        assert!(GATED || !NVFP4, "NVFP4 output is the gated epilogue's");
        NVFP4
    };

    #[inline(always)]
    unsafe fn alpha_factors(&self) -> (f32, f32) {
        // SAFETY: the launch contract (device scales readable) and the caller's (after the wait).
        unsafe { self.args.device_globals.factors() }
    }

    #[inline(always)]
    fn token_map(&self) -> u64 {
        (self.token_map)()
    }

    #[inline(always)]
    fn job(&self, span: &TileSpan, tile: Tile) -> TileJob {
        let a = self.args;
        let (m_tile, n_tile) = self.grid.coords(span.local);
        let token_row = m_tile * tile.tokens;
        TileJob {
            token_row,
            tokens: (a.m - token_row).min(tile.tokens),
            n0: n_tile * tile_n(GATED),
            n: a.n,
            k: a.k,
            gate: a.b1,
            gate_scales: a.b1_scales,
            up: a.b2,
            up_scales: a.b2_scales,
            weight_rows: a.n,
            up_row_offset: 0,
            out: a.out.wrapping_add(token_row as usize * a.n as usize),
            ldc: a.n,
            alpha_gate: a.alpha_gate,
            alpha_up: a.alpha_up,
        }
    }

    type Rows = RowOffsets;
    type Codec = DenseCodec;

    #[inline(always)]
    fn weight_rows(&self, job: &TileJob, lane: &ConsumerLane) -> RowOffsets {
        if GATED {
            RowOffsets::new(job, lane, true)
        } else {
            RowOffsets::shifted_plain(job, lane)
        }
    }

    #[inline(always)]
    unsafe fn load_weight_chunk(&self, rows: &RowOffsets, stage: u32, h: usize, into: &mut WeightStage) {
        // The bases straight from the kernel parameters: no registers held for them.
        let a = self.args;
        let bases = if GATED {
            WeightBases {
                gate: a.b1,
                up: a.b2,
                gate_scales: a.b1_scales,
                up_scales: a.b2_scales,
            }
        } else {
            WeightBases::shifted_up(a.b1, a.b1_scales, a.k)
        };
        // SAFETY: forwarded.
        unsafe { rows.at(&bases).load_chunk(stage, h, !GATED, into) }
    }

    #[inline(always)]
    fn nvfp4_tile(&self, _span: &TileSpan, job: &TileJob) -> Nvfp4Tile {
        let a = self.args;
        let data_pitch = a.n / 2;
        // Opaque copies: LLVM would otherwise compute parts of the threads' output addresses
        // before the mainloop and keep them live across it (the 256-token tile spills).
        let (token_row, n0) = (reg::opaque(job.token_row), reg::opaque(job.n0));
        let (out, scales) = (
            reg::opaque_u64(a.out as u64),
            reg::opaque_u64(a.out_scales as u64),
        );
        Nvfp4Tile {
            data: (out as *mut u8).wrapping_add(token_row as usize * data_pitch as usize + (n0 / 2) as usize),
            data_pitch,
            scales: scales as *mut u8,
            layout: BlockedScales::new(a.m as usize, a.n as usize),
            scale_row: token_row,
            first_block: n0 / SCALE_BLOCK_K as u32,
            blocks: NVFP4_TILE_BLOCKS,
            tokens: job.tokens,
            padding: Nvfp4Tile::padding_rows(a.m, token_row, job.tokens),
            global_scale: a.out_global_scale,
            decoded: reg::opaque_u64(a.out_decoded as u64) as *mut u32,
            decoded_pitch: decoded_row_words(a.n),
        }
    }

    #[inline(always)]
    fn packed_tokens(&self) -> Option<PackedTokens> {
        Some(PackedTokens {
            scales: self.args.a_scales,
            m: self.args.m,
            k: self.args.k,
        })
    }
}

/// The kernel body for `2·ACC` tokens per tile with `SETS` accumulator sets and the tile's
/// register split; `PREDECODED`: the tile takes pre-decoded tokens; `GATED`: the dual GEMM,
/// else the plain GEMM; `NVFP4`: the dual GEMM writes NVFP4.
#[inline(always)]
unsafe fn dual_gemm<
    const ACC: usize,
    const SETS: usize,
    const CONSUMER: u32,
    const DECODER: u32,
    const PRODUCER: u32,
    const PREDECODED: bool,
    const GATED: bool,
    const NVFP4: bool,
    const BF16: bool,
>(
    args: &DualGemmArgs,
    token_map: impl Fn() -> u64,
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
    // Never `None` or empty with a valid plan; this also proves the divisions cannot panic.
    let Some(grid) = TileGrid::new(args.m, args.n, tile.tokens, tile_n(GATED)) else {
        return;
    };
    let Some(space) = UniformTiles::new(grid.len(), args.k.div_ceil(K_PER_STAGE)) else {
        return;
    };
    if sreg::thread_idx_x() == 0 {
        // SAFETY: thread 0; the plan's ticket counter.
        unsafe { mainloop::setup(&shared, PREDECODED, args.tickets) };
    }
    fence::sync_threads();
    // Programmatic dependent launch: the next kernel of the stream may start its CTAs now (they
    // wait for this grid before touching memory). This grid's roles wait for the previous
    // kernel (`grid_dependency_wait`) only before their first global access, so the setup above
    // and `setmaxnreg` overlap the previous kernel's tail: the producer before its first copy,
    // the consumers after prefetching their first weights into L2 (`WARM_UP`); the decoders
    // read shared memory only.
    fence::launch_dependents();
    // No whole-tile waves (`StreamK::tile_stages` 0): the small tiles' producers and
    // consumers have no registers to spare for their bookkeeping (ptxas spills), and no task
    // shape has the two waves of tiles they need.
    let split = StreamK::new(space, sreg::grid_dim_x(), 0);
    let work = Work::new(split, &shared, args.workspace, args.flags, args.abort);
    let problem = DenseProblem::<_, GATED, NVFP4, BF16> {
        args,
        grid,
        token_map,
    };
    // SAFETY: the module contract.
    unsafe {
        mainloop::roles::<_, ACC, SETS, CONSUMER, DECODER, PRODUCER, PREDECODED, true>(
            &problem, &shared, &work, mma,
        )
    }
}

macro_rules! entry_point {
    ($name:ident, $tokens:literal, $mma:path, $gated:literal, $nvfp4:literal, $bf16:literal) => {
        /// The sm_90a dual GEMM (or plain GEMM) for one token-tile width (see the module doc
        /// for the contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DualGemmArgs) {
            const TILE: Tile = Tile { tokens: $tokens };
            const ACC: usize = $tokens / 2;
            // SAFETY (both): forwarded contract; descriptors point into the decoded slices.
            let mma = |acc: &mut [f32; ACC], a: [u32; 4], b: u64| unsafe { $mma(acc, a, b, true) };
            const REGISTERS: config::RegisterSplit = TILE.registers();
            const SETS: usize = TILE.accumulator_sets() as usize;
            unsafe {
                dual_gemm::<
                    ACC,
                    SETS,
                    { REGISTERS.consumer },
                    { REGISTERS.decoder },
                    { REGISTERS.producer },
                    { TILE.predecoded_tokens() },
                    $gated,
                    $nvfp4,
                    $bf16,
                >(
                    &args,
                    || crate::ptx::kernel_param_address!($name, core::mem::offset_of!(DualGemmArgs, a_map)),
                    mma,
                )
            }
        }
    };
}

/// Defines the dense entries (dual, dual with NVFP4 output, plain, and the dual and plain
/// writing bf16) of every tile in the registry.
macro_rules! dense_entries {
    ($($tokens:literal $mma:ident $dense:ident $dense_nvfp4:ident $dense_plain:ident $dense_bf16:ident
        $dense_plain_bf16:ident ($($grouped:ident)*);)*) => {
        $(
            entry_point!($dense, $tokens, wgmma::$mma, true, false, false);
            entry_point!($dense_nvfp4, $tokens, wgmma::$mma, true, true, false);
            entry_point!($dense_plain, $tokens, wgmma::$mma, false, false, false);
            entry_point!($dense_bf16, $tokens, wgmma::$mma, true, false, true);
            entry_point!($dense_plain_bf16, $tokens, wgmma::$mma, false, false, true);
        )*
    };
}

registry::tiled_entries!(dense_entries);
