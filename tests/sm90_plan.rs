//! The sm_90a tile configuration and host plans: tile choice, K order, the dense plan's geometry
//! and cost model, the decode-size split, and their rejections.

use nvfp4::dual_gemm::{DecodeSplit, DecodeWholeK, Sm90Geometry};
use nvfp4::{DualGemmShape, Error};
use nvfp4_kernel::sm90::config::{BLOCKS_PER_STAGE, SLICES_PER_STAGE, WEIGHT_CHUNKS_PER_STAGE, stage_block};
use nvfp4_kernel::sm90::registry::{
    FITTED_MIN_TOKENS_PER_GROUP, FITTED_TWO_TILE_MAX_TOKENS, FITTED_TWO_TILE_MIN_GROUPS, TILES,
    grouped_tile_for,
};

#[test]
fn sm90_grouped_tiles_cover_small_groups_in_one_tile_and_fit_larger_ones() {
    for groups in [1, 2, 8, 256] {
        assert_eq!(grouped_tile_for(1, groups).tokens, 8);
        assert_eq!(grouped_tile_for(9, groups).tokens, 16);
        assert_eq!(grouped_tile_for(33, groups).tokens, 64);
        assert_eq!(grouped_tile_for(64, groups).tokens, 64);
        // Groups of about 65–176 tokens: the fitted tiles (one of 144 or 176 for 129–176
        // rows, not two of 128).
        for m in [FITTED_MIN_TOKENS_PER_GROUP, 100, 128, 176] {
            let tile = grouped_tile_for(m, groups);
            assert!(tile.fits_groups() && tile.tokens == 256, "{m}: {tile:?}");
        }
        assert_eq!(grouped_tile_for(289, groups).tokens, 128);
        assert_eq!(grouped_tile_for(1000, groups).tokens, 128);
    }
    // Up to two tiles of 144 tokens: fitted where the launch has many groups, else the 128-token
    // tiles (fewer, wider tiles would leave SMs idle in one wave).
    for m in [177, 256, FITTED_TWO_TILE_MAX_TOKENS] {
        assert_eq!(
            grouped_tile_for(m, FITTED_TWO_TILE_MIN_GROUPS - 1).tokens,
            128,
            "{m}"
        );
        assert!(
            grouped_tile_for(m, FITTED_TWO_TILE_MIN_GROUPS).fits_groups(),
            "{m}"
        );
    }
    assert_eq!(FITTED_TWO_TILE_MAX_TOKENS, 288);
    assert!(TILES.iter().filter(|tile| tile.fits_groups()).count() == 1);
    // A token map per fitted width, each box at most the launch's widest tile.
    let fitted = TILES.iter().find(|tile| tile.fits_groups()).unwrap();
    assert_eq!(
        [0, 1, 2, 3].map(|i| fitted.grouped_box_rows(i)),
        [64, 128, 144, 176]
    );
    assert_eq!(
        [0, 1, 2, 3].map(|i| grouped_tile_for(128, 1).grouped_box_rows(i)),
        [64, 128, 144, 176]
    );
    assert_eq!(
        [0, 1, 2, 3].map(|i| grouped_tile_for(256, 1).grouped_box_rows(i)),
        [64, 128, 128, 128]
    );
    for tile in TILES {
        assert!(tile.shared().total <= 227 * 1024, "{tile:?}");
    }
}

#[test]
fn sm90_predecoded_tiles_load_one_decoded_slice_per_tma_box_and_keep_no_raw_ring() {
    use nvfp4_kernel::sm90::config::{
        EPILOGUE_STAGING_PITCH, K_PER_SLICE, PLAIN_TILE_N, PREDECODED_MIN_TOKENS,
    };
    let mut predecoded = 0;
    for tile in TILES {
        let plan = tile.shared();
        if tile.predecoded_tokens() {
            predecoded += 1;
            assert!(tile.tokens >= PREDECODED_MIN_TOKENS);
            // The producer's box is {K_PER_SLICE fp16, tokens rows}: one decoded slice, within
            // TMA's 256-row box limit and the 128-byte swizzle span.
            assert_eq!(K_PER_SLICE * 2 * tile.tokens, tile.decoded_slice_bytes());
            assert!(tile.tokens <= 256 && K_PER_SLICE * 2 == 128);
            assert_eq!(plan.raw_scales, plan.raw_tokens, "no raw token stages");
            assert_eq!(plan.staging, plan.raw_scales, "no raw scale stages");
        } else {
            assert!(plan.raw_scales > plan.raw_tokens && plan.staging > plan.raw_scales);
        }
        // The 16-bit epilogue's staging: a plain tile's 128 outputs per token row.
        assert_eq!(plan.barriers - plan.staging, tile.tokens * EPILOGUE_STAGING_PITCH);
        assert!(EPILOGUE_STAGING_PITCH >= 2 * PLAIN_TILE_N && plan.staging.is_multiple_of(16));
    }
    assert!(predecoded >= 1, "the largest tile pre-decodes its tokens");
    assert!(TILES[TILES.len() - 1].predecoded_tokens() && !TILES[0].predecoded_tokens());
}

#[test]
fn sm90_tile_rows_cover_every_output_once_and_a_plain_threads_scale_pairs_share_a_word() {
    use nvfp4::BlockedScales;
    use nvfp4_kernel::sm90::config::{
        CONSUMER_WARPGROUPS, PLAIN_TILE_N, PLAIN_UP_ROW_OFFSET, TILE_N, gate_output,
    };
    for gated in [true, false] {
        let tile_n = if gated { TILE_N } else { PLAIN_TILE_N };
        let mut seen = vec![0u32; tile_n as usize];
        for warpgroup in 0..CONSUMER_WARPGROUPS {
            for warp in 0..4 {
                for g in 0..8 {
                    let gate = gate_output(gated, warpgroup, warp, g);
                    seen[gate as usize] += 1;
                    if !gated {
                        let up = gate + PLAIN_UP_ROW_OFFSET;
                        seen[up as usize] += 1;
                        // A last tile of 64 outputs clamps the second warpgroup's rows to the
                        // last 64 with the same place (`shifted_plain`): still a gate row.
                        assert!(gate % 64 < 32, "gate output {gate}");
                    }
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "gated {gated}: {seen:?}");
    }
    // A plain thread's gate and up scale pairs (blocks 2t, 2t + 1 of an atom) lie in one aligned
    // 8-byte word, the up pair 4 bytes after the gate pair, in every 128-row group.
    let layout = BlockedScales::new(512, 256);
    for tile in 0..4u32 {
        for warpgroup in 0..CONSUMER_WARPGROUPS {
            for warp in 0..4 {
                for g in 0..8 {
                    let gate = (tile * PLAIN_TILE_N + gate_output(false, warpgroup, warp, g)) as usize;
                    for column in [0, 2, 4, 6, 8, 10, 12, 14] {
                        let (gate_at, up_at) = (
                            layout.offset(gate, column),
                            layout.offset(gate + PLAIN_UP_ROW_OFFSET as usize, column),
                        );
                        assert_eq!(up_at, gate_at + 4, "row {gate} column {column}");
                        assert!(gate_at % 8 < 4 && gate_at / 8 == up_at / 8, "row {gate}");
                    }
                }
            }
        }
    }
}

#[test]
fn sm90_k_order_gives_every_block_of_a_stage_one_slice_and_lane_and_each_lane_whole_chunks() {
    let mut owner = vec![None; BLOCKS_PER_STAGE as usize];
    for slice in 0..SLICES_PER_STAGE {
        for lane in 0..4 {
            let block = stage_block(slice, lane);
            assert!(
                block < BLOCKS_PER_STAGE,
                "slice {slice} lane {lane}: block {block}"
            );
            assert_eq!(owner[block as usize], None, "block {block} assigned twice");
            owner[block as usize] = Some((slice, lane));
        }
    }
    assert!(
        owner.iter().all(Option::is_some),
        "every block of the stage is decoded"
    );
    // Each lane's blocks are whole 16-byte chunks (two blocks each): slices 2h and 2h + 1 take
    // the low and high half of chunk h, whose scale codes are adjacent bytes of one atom word.
    for lane in 0..4 {
        for h in 0..WEIGHT_CHUNKS_PER_STAGE {
            let (low, high) = (stage_block(2 * h, lane), stage_block(2 * h + 1, lane));
            assert_eq!(low % 2, 0, "lane {lane} chunk {h} starts a 16-byte chunk");
            assert_eq!(high, low + 1, "lane {lane} chunk {h} is one 16-byte chunk");
            assert_eq!(low / 4, high / 4, "both scale codes in one atom word");
        }
        // The chunks of a lane sit at a fixed stride (one address increment in the kernel).
        assert_eq!(
            stage_block(2, lane) - stage_block(0, lane),
            stage_block(2, 0) - stage_block(0, 0)
        );
    }
    // A quad's four lanes read four consecutive 16-byte chunks per load: coalesced rows.
    for h in 0..WEIGHT_CHUNKS_PER_STAGE {
        let chunks: Vec<u32> = (0..4).map(|lane| stage_block(2 * h, lane) / 2).collect();
        assert!(chunks.windows(2).all(|w| w[1] == w[0] + 1), "chunks {chunks:?}");
    }
}

#[test]
fn sm90_geometry_keeps_whole_tiles_when_waves_are_full_and_splits_k_otherwise() {
    // (m, n, k, CTAs, whole tiles per CTA)
    let cases = [
        (256, 4096, 7168, 128, true), // 128 tiles: one 97 % wave
        (512, 4096, 7168, 128, true), // 256 tiles: two 97 % waves
        // 96 and 192 tiles: 73 % waves → stream-K, on 128 CTAs (fewer split tiles than on 132;
        // H100, perf log entry 57: 0.98× and 0.96× the time on 132)
        (256, 3072, 4096, 128, false),
        (512, 3072, 7168, 128, false),
        (1, 4096, 7168, 128, false), // 64 tiles: 48 % → stream-K, half a tile per CTA
    ];
    for (m, n, k, ctas, whole) in cases {
        let g = Sm90Geometry::new(DualGemmShape { m, n, k }, 132).unwrap();
        assert_eq!(g.grid, ctas, "{m}×{n}×{k}");
        let share = |c: u32| g.split.begin(c + 1) - g.split.begin(c);
        let (most, least) = (
            (0..ctas).map(share).max().unwrap(),
            (0..ctas).map(share).min().unwrap(),
        );
        assert!(
            most <= least + 1,
            "{m}×{n}×{k}: shares differ by more than one stage"
        );
        assert_eq!(
            least.is_multiple_of(g.split.space.stages) && most == least,
            whole,
            "{m}×{n}×{k}"
        );
    }
    let tiny = Sm90Geometry::new(DualGemmShape { m: 1, n: 64, k: 256 }, 132).unwrap();
    assert_eq!(
        (tiny.grid, tiny.split.total()),
        (1, 1),
        "never more CTAs than K-stages"
    );
}

#[test]
fn sm90_geometry_picks_256_token_tiles_only_as_whole_tiles_where_they_are_cheaper() {
    // (m, n, k, tokens per tile, CTAs where checked): measured on an H100 (perf log entry 29), 256-token
    // tiles won at 512×4096×7168 (102.3 → 87.8 µs) and lost at 384×4096×7168 (86.0 → 109.4),
    // at 256×4096×7168 (54.3 → 56.3) and 256×3072×4096 (36.2 → 42.7), split by stream-K; and
    // (entry 68) as whole tiles on a grid of fewer CTAs than SMs that divides them, they won at
    // 4096×18432×7168 (3718 → 3106 µs, 36 tiles on each of 128 CTAs, against stream-K over
    // 9216 128-token tiles) and 256×14336×4096 (101.0 → 90.0 µs, 2 tiles on each of 112).
    let cases = [
        (512, 4096, 7168, 256, Some(128)),
        (1024, 4096, 7168, 256, Some(128)),
        (4096, 14336, 4096, 256, Some(128)),
        (4096, 18432, 7168, 256, Some(128)),
        (256, 14336, 4096, 256, Some(112)),
        (1024, 7168, 4096, 256, Some(112)),
        (384, 4096, 7168, 128, None),
        (256, 4096, 7168, 128, None),
        (256, 3072, 4096, 128, None),
        (512, 3072, 7168, 128, None), // 96 wide tiles: one CTA each leaves 36 SMs idle
        (128, 4096, 7168, 128, None),
        (16, 4096, 7168, 16, None),
    ];
    for (m, n, k, tokens, ctas) in cases {
        let g = Sm90Geometry::new(DualGemmShape { m, n, k }, 132).unwrap();
        assert_eq!(g.tile.tokens, tokens, "{m}×{n}×{k}");
        if let Some(ctas) = ctas {
            assert_eq!(g.grid, ctas, "{m}×{n}×{k}");
        }
        assert_eq!(g.shared_bytes, g.tile.shared().total);
        if tokens == 256 {
            // Whole tiles, an equal count on every CTA, which the kernel runs data-parallel.
            let whole = nvfp4_kernel::schedule::data_parallel_ctas(g.tiles.len(), g.grid);
            assert_eq!(whole, Some(g.grid), "{m}×{n}×{k}: wide tiles only as whole tiles");
            assert_eq!(g.tiles.len() % g.grid, 0, "{m}×{n}×{k}");
        }
    }
}

#[test]
fn wide_tiles_split_by_stream_k_only_with_two_a_cta_where_whole_ones_leave_a_quarter_of_the_sms_idle() {
    // (m, n, k, gated): measured on an H100 (perf log entry 72), stream-K shares of 256-token
    // tiles beat whole ones and 128-token tiles here: 288 or 576 wide tiles, whole only on 96
    // of 132 SMs.
    for (m, n, k, gated) in [
        (256, 18432, 7168, true),
        (512, 18432, 7168, true),
        (1024, 18432, 7168, false),
    ] {
        let g = Sm90Geometry::for_op(DualGemmShape { m, n, k }, 132, gated).unwrap();
        assert_eq!((g.tile.tokens, g.grid), (256, 132), "{m}×{n}×{k}");
        assert!(
            g.tiles.len() >= 2 * g.grid,
            "{m}×{n}×{k}: two tiles a CTA at least"
        );
        assert_ne!(g.tiles.len() % g.grid, 0, "{m}×{n}×{k}: split");
    }
    // Slower split (entries 29 and 72): fewer than two wide tiles a CTA, or whole ones filling
    // 112 SMs; these stay whole or take 128-token tiles.
    for (m, n, k, gated) in [
        (256, 4096, 7168, true),
        (256, 4096, 14336, false),
        (512, 4096, 7168, false),
        (1024, 2048, 8192, false),
        (1024, 7168, 18432, false),
        (1024, 7168, 4096, true),
    ] {
        let g = Sm90Geometry::for_op(DualGemmShape { m, n, k }, 132, gated).unwrap();
        if g.tile.tokens == 256 {
            assert_eq!(g.tiles.len() % g.grid, 0, "{m}×{n}×{k}: whole wide tiles");
        }
    }
}

#[test]
fn decode_split_fills_one_wave_with_no_empty_split_and_fits_shared_memory() {
    use nvfp4_kernel::sm90::config::{
        DECODE_GROUP_N, DECODE_MAX_STEPS_PER_SPLIT, DECODE_MAX_TOKENS, DECODE_WIDE_WARPS_PER_MATRIX,
        MAX_SHARED_BYTES, decode_shared_bytes, decode_steps,
    };
    // (n, k, resident CTAs, splits): 4 CTAs on each of 132 SMs.
    let cases = [
        (4096, 7168, 528, 8),  // 64 row groups × 8 splits of 7 steps
        (3072, 7168, 528, 10), // 48 row groups: 11 splits would leave one of 1 step; 6 each
        (512, 64, 528, 1),     // one step
        (64, 2880, 528, 23),   // one row group: a split per step (the last holds 64 K)
        (32768, 7168, 528, 2), // 512 row groups: one split would exceed shared memory
        (4096, 7168, 1, 2),    // one resident CTA: the longest splits
    ];
    for (n, k, capacity, splits) in cases {
        let split = DecodeSplit::new(n, k, capacity);
        let steps = decode_steps(k);
        assert_eq!(split.splits, splits, "{n}×{k}");
        assert_eq!(split.grid, split.splits * n / DECODE_GROUP_N, "{n}×{k}");
        assert!(split.steps_per_split <= DECODE_MAX_STEPS_PER_SPLIT, "{n}×{k}");
        assert!(
            split.splits * split.steps_per_split >= steps,
            "{n}×{k}: K covered"
        );
        assert!(
            (split.splits - 1) * split.steps_per_split < steps,
            "{n}×{k}: no empty split"
        );
    }
    for nvfp4 in [false, true] {
        assert!(
            decode_shared_bytes(
                DECODE_MAX_TOKENS,
                DECODE_MAX_STEPS_PER_SPLIT,
                nvfp4,
                true,
                DECODE_WIDE_WARPS_PER_MATRIX
            ) <= MAX_SHARED_BYTES
        );
    }
}

#[test]
fn sm90_geometry_rejects_shapes_naming_the_dimension_and_rule() {
    let bad = [
        ((0, 64, 256), "m"),
        ((1, 96, 256), "n"),
        ((1, 0, 256), "n"),
        ((1, 64, 96), "k"),
        ((1, 64, 0), "k"),
        ((1 << 31, 64, 256), "m"),
    ];
    for ((m, n, k), arg) in bad {
        match Sm90Geometry::new(DualGemmShape { m, n, k }, 132) {
            Err(Error::InvalidArgument { arg: a, rule, .. }) => {
                assert_eq!(a, arg, "{m}×{n}×{k}");
                assert!(rule.contains("multiple") || rule.contains("1..="), "{rule}");
            }
            other => panic!("{m}×{n}×{k}: expected an error naming `{arg}`, got {other:?}"),
        }
    }
}

#[test]
fn sm90_geometry_reports_launches_too_large_for_32_bit_counts_instead_of_wrapping() {
    // 2^20 token tiles × 2^16 output tiles wrapped to 0 tiles in u32 (then divided by it).
    for n in [1 << 22, (1 << 22) + 64] {
        let shape = DualGemmShape {
            m: 1 << 23,
            n,
            k: 256,
        };
        match Sm90Geometry::new(shape, 132) {
            Err(Error::InvalidArgument { arg, rule, .. }) => {
                assert!(arg.starts_with("m × n"), "{arg}: {rule}");
                assert!(rule.contains("too large"), "{rule}");
            }
            other => panic!("{shape:?}: expected a typed error, got {other:?}"),
        }
    }
    assert!(Sm90Geometry::new(DualGemmShape { m: 1, n: 64, k: 256 }, 0).is_err());
}

#[test]
fn grid_size_is_an_error_for_zero_tiles_stages_or_multiprocessors_and_for_overflow() {
    use nvfp4::dual_gemm::grid_size;
    for (tiles, stages, sms) in [(0, 1, 132), (4, 1, 0), (4, 0, 132), (1 << 20, 1 << 12, 132)] {
        assert!(
            matches!(
                grid_size(
                    nvfp4_kernel::sm90::config::Tile { tokens: 128 },
                    tiles,
                    stages,
                    sms
                ),
                Err(Error::InvalidArgument { .. })
            ),
            "{tiles} × {stages} on {sms}"
        );
    }
    assert_eq!(
        grid_size(nvfp4_kernel::sm90::config::Tile { tokens: 128 }, 128, 28, 132).unwrap(),
        128
    );
    assert_eq!(
        grid_size(nvfp4_kernel::sm90::config::Tile { tokens: 128 }, 1, 1, 132).unwrap(),
        1
    );
}

#[test]
fn few_tiles_take_whole_64_token_tiles_where_the_stream_k_fix_up_costs_more() {
    // Measured on an H100 (perf log entry 57): the plain GEMM at 128×7168×2048 took 19.7 µs as
    // 56 tiles of 128 tokens split over 126 CTAs and 16.9 µs as 112 whole 64-token tiles; at
    // 128×4096×7168, 32 tiles of 128 tokens in four segments each (25.5 µs) stay as they were.
    let plain = |m, n, k| Sm90Geometry::for_op(DualGemmShape { m, n, k }, 132, false).unwrap();
    let few = plain(128, 7168, 2048);
    assert_eq!((few.tile.tokens, few.grid, few.tiles.len()), (64, 112, 112));
    let split = plain(128, 4096, 7168);
    assert_eq!((split.tile.tokens, split.grid), (128, 128));
    // Full waves of whole tiles stay whole (data-parallel), as before the model weighed fix-ups.
    let waves = plain(1024, 4096, 7168);
    assert_eq!((waves.tiles.len(), waves.grid), (128, 128));
}

#[test]
fn sm90_geometry_takes_k_in_multiples_of_64_with_a_partial_last_stage() {
    for k in [64, 128, 192, 2880, 7168 + 64] {
        let g = Sm90Geometry::new(DualGemmShape { m: 16, n: 4096, k }, 132).unwrap();
        assert_eq!(g.split.space.stages, k.div_ceil(256) as u32, "k = {k}");
    }
}

/// Resident decode-size CTAs per SM on an H100 for `m` tokens and splits of `steps` steps: four
/// by registers, fewer when their token rows fill the 228 KiB of shared memory (1 KiB reserved
/// per CTA).
fn h100_decode_residency(m: u32, steps: u32) -> u32 {
    h100_decode_residency_of(m, steps, false)
}

/// [`h100_decode_residency`], with the two-tile copy of the packed token rows if `copied`.
fn h100_decode_residency_of(m: u32, steps: u32, copied: bool) -> u32 {
    use nvfp4_kernel::sm90::config::{DECODE_WARPS_PER_MATRIX, decode_shared_bytes};
    let per_cta = decode_shared_bytes(m, steps, false, copied, DECODE_WARPS_PER_MATRIX) + 1024;
    (228 * 1024 / per_cta).min(4)
}

#[test]
fn two_token_tiles_copy_their_rows_only_where_the_wave_stays_resident() {
    let plan = |m: u32, n: u32, k: u32| {
        let split = DecodeSplit::fitted(n, k, 132, |s| h100_decode_residency(m, s));
        let copied = split.copies_tokens(m, 132, |s| h100_decode_residency_of(m, s, true));
        (split, copied)
    };
    // The MLP's 16-token shapes that run the split kernel: 7 or 4 steps a split, four CTAs an
    // SM with or without the copy.
    for (m, n, k) in [
        (16, 4096, 7168),
        (16, 8192, 2048),
        (16, 2048, 8192),
        (9, 7168, 2048),
        (12, 512, 192),
    ] {
        let (split, copied) = plan(m, n, k);
        assert!(copied, "{m}×{n}×{k}: {split:?}");
    }
    // Llama-2-7B's gate/up at 16 tokens: 172 row groups × 3 splits of 11 steps, four CTAs an SM
    // without the copy, three with it: the rows are decoded straight from global memory.
    let (split, copied) = plan(16, 11008, 4096);
    assert_eq!((split.steps_per_split, split.splits), (11, 3));
    assert_eq!(h100_decode_residency_of(16, 11, true), 3);
    assert!(
        split.serves(16, true, 132, |s| h100_decode_residency(16, s)),
        "{split:?}"
    );
    assert!(!copied, "{split:?}");
    // One token tile never copies.
    assert!(!plan(8, 4096, 7168).1);
}

/// Resident wide decode-size CTAs per SM on an H100 (16 warps of 64 registers: two by
/// registers), fewer when their token rows fill the shared memory.
fn h100_wide_residency(m: u32, steps: u32) -> u32 {
    use nvfp4_kernel::sm90::config::{DECODE_WIDE_WARPS_PER_MATRIX, decode_shared_bytes};
    let per_cta = decode_shared_bytes(m, steps, false, false, DECODE_WIDE_WARPS_PER_MATRIX) + 1024;
    (228 * 1024 / per_cta).min(2)
}

#[test]
fn two_token_tiles_take_the_wide_entries_where_only_they_fit_one_wave_or_splits_are_long() {
    use nvfp4_kernel::sm90::config::{DECODE_WIDE_WARPS_PER_MATRIX, decode_group_n};
    let wide_n = decode_group_n(DECODE_WIDE_WARPS_PER_MATRIX);
    assert_eq!(wide_n, 128);
    // (m, n, k) → takes the wide entries, their split (steps, splits).
    let takes = |m: u32, n: u32, k: u32| {
        let resident = |s| h100_decode_residency(m, s);
        let standard = DecodeSplit::fitted(n, k, 132, resident).serves(m, true, 132, resident);
        let wide = DecodeSplit::fitted_rows(n, k, 132, |s| h100_wide_residency(m, s), wide_n);
        assert_eq!(wide.grid, wide.splits * n / wide_n, "{m}×{n}×{k}");
        let takes = wide.takes_wide(standard, 132, |s| h100_wide_residency(m, s));
        (takes, (wide.steps_per_split, wide.splits))
    };
    // Llama-3-8B's 16-token GEMMs: only the wide split fits one wave (two CTAs an SM).
    assert_eq!(takes(16, 14336, 4096), (true, (16, 2)));
    assert_eq!(takes(16, 4096, 14336), (true, (14, 8)));
    assert_eq!(takes(9, 4096, 14336), (true, (14, 8)));
    // Both fit: the wide entries from `DECODE_WIDE_MIN_STEPS` steps a split.
    assert_eq!(takes(16, 11008, 4096), (true, (11, 3)));
    assert_eq!(takes(16, 12544, 4096), (true, (16, 2)));
    assert!(takes(16, 4096, 9216).0, "16, 4096, 9216");
    assert!(!takes(16, 4096, 8192).0, "16, 4096, 8192");
    assert!(!takes(16, 4096, 7168).0, "16, 4096, 7168");
    assert!(!takes(16, 8192, 2048).0, "16, 8192, 2048");
    // Neither fits one wave: the tiled kernel (288 wide row groups × 2 splits).
    assert!(!takes(16, 18432, 7168).0, "16, 18432, 7168");
}

#[test]
fn fitted_decode_split_keeps_one_wave_splits_and_fits_long_splits_to_residency() {
    use nvfp4_kernel::sm90::config::{DECODE_GROUP_N, DECODE_MAX_STEPS_PER_SPLIT, decode_steps};
    // Shapes whose one-wave split is resident: unchanged.
    for (m, n, k) in [
        (1, 4096, 7168),
        (16, 4096, 7168),
        (1, 3072, 7168),
        (1, 64, 2880),
        (8, 512, 64),
    ] {
        let fitted = DecodeSplit::fitted(n, k, 132, |s| h100_decode_residency(m, s));
        assert_eq!(fitted, DecodeSplit::new(n, k, 528), "{m}×{n}×{k}");
    }
    // 16 tokens at 18432 × 7168: the one-wave split (2 splits of 28 steps, 115 KiB of token
    // rows) leaves one CTA per SM; the fitted split keeps three.
    let one_wave = DecodeSplit::new(18432, 7168, 528);
    assert_eq!(h100_decode_residency(16, one_wave.steps_per_split), 1);
    let fitted = DecodeSplit::fitted(18432, 7168, 132, |s| h100_decode_residency(16, s));
    assert!(
        h100_decode_residency(16, fitted.steps_per_split) >= 3,
        "{fitted:?}"
    );
    // Every fitted split covers K, has no empty split and fits.
    for m in [1, 8, 9, 16] {
        for n in [64, 2048, 4096, 7168, 14336, 18432, 32768] {
            for k in [64, 2048, 2880, 4096, 7168, 14336, 18432] {
                let split = DecodeSplit::fitted(n, k, 132, |s| h100_decode_residency(m, s));
                let steps = decode_steps(k);
                assert!(split.steps_per_split <= DECODE_MAX_STEPS_PER_SPLIT, "{m}×{n}×{k}");
                assert!(
                    h100_decode_residency(m, split.steps_per_split) >= 1,
                    "{m}×{n}×{k}"
                );
                assert!(split.splits * split.steps_per_split >= steps, "{m}×{n}×{k}");
                assert!((split.splits - 1) * split.steps_per_split < steps, "{m}×{n}×{k}");
                assert_eq!(split.grid, split.splits * n / DECODE_GROUP_N, "{m}×{n}×{k}");
            }
        }
    }
}

#[test]
fn the_decode_size_kernel_serves_one_wave_splits_and_the_plain_gemms_one_token_tile() {
    let serves = |m: u32, gated: bool, n: u32, k: u32| {
        let resident = |s| h100_decode_residency(m, s);
        DecodeSplit::fitted(n, k, 132, resident).serves(m, gated, 132, resident)
    };
    // One-wave splits (measured faster than the tiled kernel on an H100).
    for (n, k) in [(4096, 7168), (8192, 2048), (2048, 8192)] {
        for m in [1, 8, 12, 16] {
            for gated in [false, true] {
                assert!(serves(m, gated, n, k), "{m}×{n}×{k}, gated {gated}");
            }
        }
    }
    // Several waves at 16 tokens: the tiled kernel (measured faster).
    for (n, k) in [(18432, 7168), (7168, 18432), (14336, 4096), (4096, 14336)] {
        for gated in [false, true] {
            assert!(!serves(16, gated, n, k), "16×{n}×{k}, gated {gated}");
        }
    }
    // Several waves at one token tile: the tiled kernel for the dual GEMM, the decode-size one
    // for the plain GEMM (both measured faster).
    for (n, k) in [(18432, 7168), (14336, 8192), (16384, 7168), (28672, 8192)] {
        for m in [1, 8] {
            assert!(!serves(m, true, n, k), "dual GEMM {m}×{n}×{k}");
        }
    }
    for (n, k) in [(7168, 18432), (7168, 16384), (8192, 28672), (7168, 24576)] {
        for m in [1, 8] {
            assert!(serves(m, false, n, k), "GEMM {m}×{n}×{k}");
        }
    }
}

/// The whole-K decode-size CTAs of `warps` warps an H100 SM holds for `m` tokens and reduction
/// length `k`: 64 registers a thread, 228 KiB of shared memory (1 KiB reserved per CTA, at most
/// 227 KiB a CTA).
fn h100_whole_k_residency(m: u32, k: u32, warps: u32, small: bool, gated: bool) -> u32 {
    use nvfp4_kernel::sm90::config::decode_whole_k_shared_bytes;
    let shared = decode_whole_k_shared_bytes(m, k, warps, gated, true);
    if shared > 227 * 1024 {
        return 0;
    }
    // 64 registers a thread, or 56 for the small-CTA entries.
    let registers = if small { 56 } else { 64 };
    (228 * 1024 / (shared + 1024)).min(65536 / (32 * warps * registers))
}

#[test]
fn one_token_tile_takes_whole_k_ctas_where_they_fill_the_sms_in_one_wave() {
    let choose = |m: u32, n: u32, k: u32, gated: bool| {
        DecodeWholeK::choose([m, n, k], gated, 132, |warps, small| {
            h100_whole_k_residency(m, k, warps, small, gated)
        })
    };
    let small = |m, n, k| choose(m, n, k, true).is_some_and(|c| c.small);
    let warps = |m, n, k, gated| choose(m, n, k, gated).map(|c| c.warps);
    // Measured faster than the split kernel on an H100 (dual GEMM 0.87–0.95×, GEMM 0.91–0.97×).
    assert_eq!(warps(1, 4096, 7168, true), Some(16));
    assert_eq!(warps(4, 4096, 7168, true), Some(16));
    assert_eq!(warps(1, 14336, 4096, true), Some(4));
    assert_eq!(warps(1, 8192, 2048, true), Some(8));
    assert_eq!(warps(1, 3072, 4096, true), Some(16));
    assert_eq!(warps(1, 4096, 7168, false), Some(16));
    assert_eq!(warps(1, 4096, 14336, false), Some(16));
    assert_eq!(warps(1, 7168, 16384, false), Some(8));
    // DeepSeek-V3's gate/up at one token: 1152 CTAs, nine a SM only at 56 registers (0.85×
    // the tiled kernel's time); where eight fit, the 64-register entry.
    assert_eq!(warps(1, 18432, 7168, true), Some(4));
    assert!(small(1, 18432, 7168) && !small(1, 14336, 4096) && !small(1, 16384, 7168));
    // Measured slower: too few warps an SM, or too few steps a warp; or no wave fits.
    assert_eq!(warps(1, 2048, 8192, true), None);
    assert_eq!(warps(1, 2048, 8192, false), None);
    assert_eq!(warps(1, 28672, 8192, true), None);
    assert_eq!(warps(1, 7168, 2048, false), None);
    // Token rows over all of K that do not fit beside enough neighbours, and two token tiles.
    assert_eq!(warps(8, 4096, 7168, true), None);
    // The plain GEMM stages no token rows: 8 tokens fit whole-K blocks of 16 warps.
    assert_eq!(warps(8, 4096, 14336, false), Some(16));
    assert_eq!(warps(8, 4096, 7168, false), Some(16));
    assert_eq!(warps(9, 4096, 7168, true), None);
    for m in 1..=8 {
        for (n, k) in [(64, 64), (4096, 7168), (14336, 4096), (7168, 18432), (40960, 256)] {
            for gated in [false, true] {
                if let Some(c) = choose(m, n, k, gated) {
                    assert!(c.warps.is_multiple_of(2) && c.warps <= 16, "{c:?}");
                    assert_eq!(c.grid, n / 16);
                    assert!(gated || !c.small, "{c:?}: small CTAs are the dual GEMM's");
                    assert!(
                        c.grid <= 132 * h100_whole_k_residency(m, k, c.warps, c.small, gated),
                        "{c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_one_tile_dual_gemm_takes_the_paired_decode_entries_for_splits_of_sixteen_steps() {
    use nvfp4_kernel::sm90::config::DECODE_PAIRED_MIN_STEPS;
    let fitted = |m: u32, n: u32, k: u32| DecodeSplit::fitted(n, k, 132, |s| h100_decode_residency(m, s));
    // Llama-3-8B's gate/up at one token: 224 row groups × 2 splits of 16 steps.
    let long = fitted(1, 14336, 4096);
    assert_eq!(long.steps_per_split, DECODE_PAIRED_MIN_STEPS);
    for m in [1, 8] {
        assert!(long.paired(m, true), "{long:?}");
        assert!(!long.paired(m, false), "the plain GEMM has one loop");
    }
    // Two token tiles in one wave, 196 row groups × 2 splits of 16 steps: one loop (the paired
    // one measured slower there).
    let two_tiles = fitted(16, 12544, 4096);
    assert!(
        two_tiles.serves(16, true, 132, |s| h100_decode_residency(16, s)),
        "{two_tiles:?}"
    );
    assert_eq!(two_tiles.steps_per_split, DECODE_PAIRED_MIN_STEPS);
    assert!(!two_tiles.paired(16, true), "{two_tiles:?}");
    for (m, n, k) in [(1, 4096, 7168), (1, 8192, 2048), (8, 3072, 4096)] {
        let short = fitted(m, n, k);
        assert!(
            short.steps_per_split < DECODE_PAIRED_MIN_STEPS && !short.paired(m, true),
            "{short:?}"
        );
    }
}

#[test]
fn grouped_decode_windows_cover_k_evenly_and_fit_their_buffers() {
    use nvfp4_kernel::sm90::config::{
        DECODE_MAX_TOKENS, DECODE_TOKEN_TILE, GROUPED_DECODE_MAX_WINDOW_STEPS, MAX_SHARED_BYTES,
        balanced_window_steps, decode_steps, decode_token_pitch, grouped_decode_buffer_bytes,
        grouped_decode_shared_bytes, grouped_decode_window_steps,
    };
    for k in (64..=32768).step_by(64) {
        let steps = decode_steps(k);
        let launch = grouped_decode_window_steps(k);
        assert!(launch <= GROUPED_DECODE_MAX_WINDOW_STEPS, "k = {k}");
        // A chunk of `rows` token rows: windows of at most `launch · 16 / rows` steps.
        for rows in [DECODE_TOKEN_TILE, DECODE_MAX_TOKENS] {
            let most = launch * (DECODE_MAX_TOKENS / rows);
            let window = balanced_window_steps(steps, most);
            assert!(
                window > 0 && window.is_multiple_of(2) && window <= most,
                "k = {k}, {rows} rows"
            );
            // As few windows as `most` allows, none of them empty.
            assert_eq!(
                steps.div_ceil(window),
                steps.div_ceil(most),
                "k = {k}, {rows} rows"
            );
            assert!(
                rows * decode_token_pitch(window) <= grouped_decode_buffer_bytes(launch),
                "k = {k}"
            );
        }
    }
    for nvfp4 in [false, true] {
        // Three CTAs per SM.
        assert!(3 * grouped_decode_shared_bytes(GROUPED_DECODE_MAX_WINDOW_STEPS, nvfp4) <= MAX_SHARED_BYTES);
    }
}

#[test]
fn sm90_fitted_tiles_cover_each_group_with_the_fewest_tiles_of_the_narrowest_width() {
    use nvfp4_kernel::sm90::config::{
        FITTED_MAX_TOKENS, FITTED_WIDTHS, fitted_tile_width, fitted_width_index,
    };
    let widest = *TILES.last().unwrap();
    assert!(widest.fits_groups() && widest.grouped_tile_tokens() == FITTED_MAX_TOKENS);
    // Narrowest first, each a whole wgmma token step.
    assert!(FITTED_WIDTHS.windows(2).all(|w| w[0] < w[1]));
    assert!(FITTED_WIDTHS.iter().all(|w| w.is_multiple_of(8)));
    for tokens in 1..=FITTED_MAX_TOKENS {
        let width = FITTED_WIDTHS[fitted_width_index(tokens) as usize];
        let narrower = FITTED_WIDTHS.iter().filter(|&&w| w < width).max();
        assert!(
            tokens <= width && narrower.is_none_or(|&n| n < tokens),
            "{tokens}: {width}"
        );
    }
    for rows in 1..=2048u32 {
        let m_tiles = rows.div_ceil(FITTED_MAX_TOKENS);
        let width = fitted_tile_width(rows, m_tiles);
        // One of the widths, every tile holding at least one token.
        assert!(FITTED_WIDTHS.contains(&width), "{rows}: {width}");
        assert!(
            (m_tiles - 1) * width < rows && rows <= m_tiles * width,
            "{rows}: {m_tiles} × {width}"
        );
        // No narrower width would cover the rows with as few tiles.
        let narrower = FITTED_WIDTHS.iter().filter(|&&w| w < width).max();
        assert!(
            narrower.is_none_or(|&n| n * m_tiles < rows),
            "{rows}: {width} is wider than needed"
        );
    }
    assert_eq!(fitted_tile_width(176, 1), 176);
    assert_eq!(fitted_tile_width(150, 1), 176);
    assert_eq!(fitted_tile_width(140, 1), 144);
    assert_eq!(fitted_tile_width(260, 2), 144);
    assert_eq!(fitted_tile_width(300, 2), 176);
    assert_eq!(fitted_tile_width(513, 3), 176);
    assert_eq!(fitted_tile_width(0, 0), 0);
}
