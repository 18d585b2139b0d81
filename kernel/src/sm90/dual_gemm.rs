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
//!   segments' published partial sums and adds them in segment order; the others store and
//!   publish theirs without waiting (see `mainloop::fix_up`). The weight pipeline runs across
//!   segments.
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
//! * **Partial last stage.** K need only be a multiple of 64: a last 256-K stage with fewer
//!   blocks loads no weights for the missing ones (zeros), the token decoders and the
//!   pre-decoder write zeros for them, and the wgmmas run over the whole stage.
//!
//! # Contract (checked by the host plan before launch)
//! The fields of [`DualGemmArgs`]: `m ≥ 1`; `n` a multiple of [`config::TILE_N`]; `k` a
//! positive multiple of [`config::K_MULTIPLE`]; `a_map` the generic address of a tensor map of
//! A's packed bytes (UINT8, dims {k/2, m}, box {128, 64}, 128-byte swizzle) or, for pre-decoded
//! tiles, of the fp16 tokens (FLOAT16, dims {[`config::padded_k`]`(k)`, m}, box {64, T},
//! 128-byte swizzle; `a_scales` unused); scale buffers in the blocked layout; all pointers
//! aligned for their accesses; `workspace` and `flags` of two slots per CTA; `tickets` the
//! plan's counter, taken `grid` times by every launch; [`config::THREADS`] threads,
//! [`config::SharedPlan::total`] bytes of dynamic shared memory. Any number of CTAs may be
//! resident at a time: reducers wait only for CTAs that started before them (see
//! [`crate::schedule::StreamK`]).

use crate::ptx::{fence, smem, sreg, wgmma};
use crate::schedule::{StreamK, TileGrid, TileSpan, UniformTiles};
use crate::sm90::config::{self, DualGemmArgs, K_PER_STAGE, TILE_N, Tile};
use crate::sm90::mainloop::{
    self, ConsumerLane, PackedTokens, Problem, RowOffsets, Shared, TileJob, WeightBases, WeightStage, Work,
};

/// A dense dual GEMM: one problem, tiles numbered token tile fastest.
struct DenseProblem<'a> {
    args: &'a DualGemmArgs,
    grid: TileGrid,
}

impl Problem for DenseProblem<'_> {
    type Space = UniformTiles;
    const GATED: bool = true;

    #[inline(always)]
    fn token_map(&self) -> u64 {
        self.args.a_map
    }

    #[inline(always)]
    fn job(&self, span: &TileSpan, tile: Tile) -> TileJob {
        let a = self.args;
        let (m_tile, n_tile) = self.grid.coords(span.local);
        let token_row = m_tile * tile.tokens;
        TileJob {
            token_row,
            tokens: (a.m - token_row).min(tile.tokens),
            n0: n_tile * TILE_N,
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

    #[inline(always)]
    fn weight_rows(&self, job: &TileJob, lane: &ConsumerLane) -> RowOffsets {
        RowOffsets::new(job, lane, true)
    }

    #[inline(always)]
    unsafe fn load_weights(&self, rows: &RowOffsets, stage: u32) -> WeightStage {
        // The bases straight from the kernel parameters: no registers held for them.
        let a = self.args;
        let bases = WeightBases {
            gate: a.b1,
            up: a.b2,
            gate_scales: a.b1_scales,
            up_scales: a.b2_scales,
        };
        // SAFETY: forwarded.
        unsafe { rows.load(&bases, stage) }
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
/// register split; `PREDECODED`: the tile takes pre-decoded tokens.
#[inline(always)]
unsafe fn dual_gemm<
    const ACC: usize,
    const SETS: usize,
    const CONSUMER: u32,
    const DECODER: u32,
    const PRODUCER: u32,
    const PREDECODED: bool,
>(
    args: &DualGemmArgs,
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
    let Some(grid) = TileGrid::new(args.m, args.n, tile.tokens, TILE_N) else {
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
    let split = StreamK {
        space,
        ctas: sreg::grid_dim_x(),
    };
    let work = Work::new(split, &shared, args.workspace, args.flags);
    let problem = DenseProblem { args, grid };
    // SAFETY: the module contract.
    unsafe {
        mainloop::roles::<_, ACC, SETS, CONSUMER, DECODER, PRODUCER, PREDECODED, true>(
            &problem, &shared, &work, mma,
        )
    }
}

macro_rules! entry_point {
    ($name:ident, $acc:literal, $mma:path) => {
        /// The sm_90a dual GEMM for one token-tile width (see the module doc for the contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: DualGemmArgs) {
            // SAFETY (both): forwarded contract; descriptors point into the decoded slices.
            let mma = |acc: &mut [f32; $acc], a: [u32; 4], b: u64| unsafe { $mma(acc, a, b, true) };
            const TILE: Tile = Tile { tokens: 2 * $acc };
            const REGISTERS: config::RegisterSplit = TILE.registers();
            const SETS: usize = TILE.accumulator_sets() as usize;
            unsafe {
                dual_gemm::<
                    $acc,
                    SETS,
                    { REGISTERS.consumer },
                    { REGISTERS.decoder },
                    { REGISTERS.producer },
                    { TILE.predecoded_tokens() },
                >(&args, mma)
            }
        }
    };
}

entry_point!(nvfp4_dual_gemm_sm90_t8, 4, wgmma::m64n8k16);
entry_point!(nvfp4_dual_gemm_sm90_t16, 8, wgmma::m64n16k16);
entry_point!(nvfp4_dual_gemm_sm90_t32, 16, wgmma::m64n32k16);
entry_point!(nvfp4_dual_gemm_sm90_t64, 32, wgmma::m64n64k16);
entry_point!(nvfp4_dual_gemm_sm90_t128, 64, wgmma::m64n128k16);
