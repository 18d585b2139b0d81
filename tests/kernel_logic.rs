//! The kernels' pure logic, on the host: fp4 pair decoding, descriptors, swizzle, scheduling,
//! ring bookkeeping and the sm_90a plan rules.

use half::f16;
use nvfp4::codec::e2m1_to_f32;
use nvfp4::dual_gemm::{DecodeSplit, Sm90Geometry};
use nvfp4::{DualGemmShape, Error};
use nvfp4_kernel::desc::{sw128_offset, wgmma_desc_sw128_k_major};
use nvfp4_kernel::fp4::{PAIR_ELEMENTS, e2m1_to_f16_bits_scaled, e2m1x8_to_f16x2_pairs};
use nvfp4_kernel::grouped;
use nvfp4_kernel::ring::RingPosition;
use nvfp4_kernel::schedule::{
    GroupSchedule, GroupedTiles, Segment, StreamK, Ticket, TileGrid, TileSpace, UniformTiles,
    data_parallel_ctas, virtual_cta, working_ctas,
};
use nvfp4_kernel::sm90::config::{BLOCKS_PER_STAGE, SLICES_PER_STAGE, WEIGHT_CHUNKS_PER_STAGE, stage_block};
use nvfp4_kernel::sm90::registry::{TILES, grouped_tile_for};

fn scaled_f16(code: u32) -> u16 {
    f16::from_f32(e2m1_to_f32(code as u8) * 2f32.powi(-14)).to_bits()
}

#[test]
fn single_code_trick_is_exactly_e2m1_times_2_pow_minus_14() {
    for code in 0..16 {
        assert_eq!(e2m1_to_f16_bits_scaled(code), scaled_f16(code), "code {code}");
    }
}

#[test]
fn pair_trick_decodes_every_code_in_every_position_in_pair_element_order() {
    for position in 0..16u32 {
        for code in 0..16u32 {
            // The code under test at `position`, a different code everywhere else.
            let mut block = [0u32; 16];
            for (i, c) in block.iter_mut().enumerate() {
                *c = if i as u32 == position {
                    code
                } else {
                    (i as u32 * 7 + 3) % 16
                };
            }
            let word = |half: usize| (0..8).fold(0u32, |w, i| w | (block[8 * half + i] << (4 * i)));
            let pairs: Vec<u32> = [word(0), word(1)]
                .iter()
                .flat_map(|&w| e2m1x8_to_f16x2_pairs(w))
                .collect();
            for (p, elements) in PAIR_ELEMENTS.iter().enumerate() {
                assert_eq!(pairs[p] as u16, scaled_f16(block[elements[0]]), "pair {p} low");
                assert_eq!(
                    (pairs[p] >> 16) as u16,
                    scaled_f16(block[elements[1]]),
                    "pair {p} high"
                );
            }
        }
    }
}

#[test]
fn pair_elements_are_a_permutation_of_the_block() {
    let mut seen = [false; 16];
    for e in PAIR_ELEMENTS.iter().flatten() {
        assert!(!seen[*e], "element {e} twice");
        seen[*e] = true;
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn wgmma_descriptor_matches_the_documented_sw128_constant() {
    // docs/ptx-facts.md §3: sm90 SW128 K-major = 0x4000_0040_0001_0000 | (addr >> 4).
    for addr in [0u32, 1024, 0x1_2400, 0x3_FC00] {
        assert_eq!(
            wgmma_desc_sw128_k_major(addr),
            0x4000_0040_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
    }
    assert_eq!(
        wgmma_desc_sw128_k_major(1024 + 32) - wgmma_desc_sw128_k_major(1024),
        2,
        "a k16 step adds 32 B"
    );
}

#[test]
fn sw128_offsets_follow_tmas_xor_rule_and_cover_each_chunk_once() {
    let mut seen = [false; 16 * 128 / 16];
    for row in 0..16 {
        for chunk in 0..8 {
            let off = sw128_offset(row, chunk);
            let linear = row * 128 + chunk * 16;
            assert_eq!(
                off,
                linear ^ (((linear >> 7) & 7) << 4),
                "row {row} chunk {chunk}"
            );
            assert!(!std::mem::replace(&mut seen[(off / 16) as usize], true));
        }
    }
}

#[test]
fn tile_grid_numbers_every_tile_once_token_tiles_fastest() {
    let grid = TileGrid::new(300, 4096, 128, 64).unwrap();
    assert_eq!((grid.m_tiles, grid.n_tiles), (3, 64));
    let mut seen = vec![false; grid.len() as usize];
    for ctas in [1u32, 7, 132] {
        seen.iter_mut().for_each(|s| *s = false);
        for cta in 0..ctas {
            let mut index = cta;
            while index < grid.len() {
                let (m, n) = grid.coords(index);
                let slot = (n * grid.m_tiles + m) as usize;
                assert!(
                    !std::mem::replace(&mut seen[slot], true),
                    "tile ({m}, {n}) twice with {ctas} CTAs"
                );
                index += ctas;
            }
        }
        assert!(seen.iter().all(|&s| s), "a tile was missed with {ctas} CTAs");
    }
    assert_eq!(grid.coords(1), (1, 0));
}

#[test]
fn tile_grid_refuses_tile_counts_that_overflow_and_zero_tile_sizes() {
    assert_eq!(TileGrid::new(1 << 23, 1 << 22, 8, 64), None, "2^20 × 2^16 tiles");
    assert_eq!(TileGrid::new(1, 64, 0, 64), None);
    assert_eq!(TileGrid::new(1, 64, 8, 0), None);
    assert_eq!(
        TileGrid::new(u32::MAX, 64, 8, 64).map(|g| g.len()),
        Some(536_870_912)
    );
}

#[test]
fn ring_flips_parity_after_each_pass() {
    let mut ring = RingPosition::<3>::new();
    let mut visited = Vec::new();
    for _ in 0..7 {
        visited.push((ring.stage, ring.full_parity(), ring.empty_parity()));
        ring.advance();
    }
    assert_eq!(
        visited,
        [
            (0, 0, 1),
            (1, 0, 1),
            (2, 0, 1),
            (0, 1, 0),
            (1, 1, 0),
            (2, 1, 0),
            (0, 0, 1)
        ]
    );
}

/// Random interleavings of a producer that waits `empty[s]` then completes `full[s]` and a
/// consumer that waits `full[s]` then completes `empty[s]`, on the mbarrier model: `completed`
/// phases per barrier, and `try_wait.parity(p)` passes iff the in-progress phase's parity differs
/// from p.
fn simulate_ring<const STAGES: u32>(seed: u64) {
    let passes = |completed: u32, parity: u32| completed % 2 != parity;
    let mut rng = nvfp4::problem::Rng::new(seed);
    for _ in 0..20 {
        let (mut full, mut empty) = (vec![0u32; STAGES as usize], vec![0u32; STAGES as usize]);
        let (mut producer, mut consumer) = (RingPosition::<STAGES>::new(), RingPosition::<STAGES>::new());
        let (mut produced, mut consumed, total) = (0u32, 0u32, 200u32);
        while consumed < total {
            let producer_can =
                produced < total && passes(empty[producer.stage as usize], producer.empty_parity());
            let consumer_can = passes(full[consumer.stage as usize], consumer.full_parity());
            assert!(
                producer_can || consumer_can,
                "{STAGES} stages: deadlock at {produced}/{consumed}"
            );
            if producer_can && (!consumer_can || rng.next_u64() & 1 == 0) {
                assert!(
                    produced - consumed < STAGES,
                    "{STAGES} stages: refilled a stage not yet consumed"
                );
                full[producer.stage as usize] += 1;
                producer.advance();
                produced += 1;
            } else {
                assert!(
                    consumed < produced,
                    "{STAGES} stages: read a stage not yet filled"
                );
                empty[consumer.stage as usize] += 1;
                consumer.advance();
                consumed += 1;
            }
        }
    }
}

#[test]
fn ring_producer_and_consumer_never_share_a_stage_and_never_deadlock() {
    // Every ring depth the kernels use: accumulator buffers (2), stages (4), decoded slots (4).
    simulate_ring::<1>(1);
    simulate_ring::<2>(2);
    simulate_ring::<4>(4);
    simulate_ring::<8>(8);
}

#[test]
fn sm90_tiles_cover_small_m_in_one_tile_and_large_m_with_128() {
    assert_eq!(grouped_tile_for(1).tokens, 8);
    assert_eq!(grouped_tile_for(9).tokens, 16);
    assert_eq!(grouped_tile_for(33).tokens, 64);
    assert_eq!(grouped_tile_for(100).tokens, 128);
    assert_eq!(grouped_tile_for(1000).tokens, 128);
    for tile in TILES {
        assert!(tile.shared().total <= 227 * 1024, "{tile:?}");
    }
}

#[test]
fn sm90_predecoded_tiles_load_one_decoded_slice_per_tma_box_and_keep_no_raw_ring() {
    use nvfp4_kernel::sm90::config::{K_PER_SLICE, PREDECODED_MIN_TOKENS};
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
            assert_eq!(plan.barriers, plan.raw_scales, "no raw scale stages");
        } else {
            assert!(plan.raw_scales > plan.raw_tokens && plan.barriers > plan.raw_scales);
        }
    }
    assert!(predecoded >= 1, "the largest tile pre-decodes its tokens");
    assert!(TILES[TILES.len() - 1].predecoded_tokens() && !TILES[0].predecoded_tokens());
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
        (256, 4096, 7168, 128, true),  // 128 tiles: one 97 % wave
        (512, 4096, 7168, 128, true),  // 256 tiles: two 97 % waves
        (256, 3072, 4096, 132, false), // 96 tiles: 73 % → stream-K
        (512, 3072, 7168, 132, false), // 192 tiles: 73 % → stream-K
        (1, 4096, 7168, 128, false),   // 64 tiles: 48 % → stream-K, half a tile per CTA
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
fn sm90_geometry_picks_256_token_tiles_only_where_whole_waves_make_them_cheaper() {
    // (m, n, k, tokens per tile): measured on an H100 (perf log entry 29), 256-token tiles won
    // at 512×4096×7168 (102.3 → 87.8 µs) and lost at 384×4096×7168 (86.0 → 109.4), at
    // 256×4096×7168 (54.3 → 56.3) and 256×3072×4096 (36.2 → 42.7), split by stream-K.
    let cases = [
        (512, 4096, 7168, 256),
        (1024, 4096, 7168, 256),
        (4096, 14336, 4096, 256),
        (384, 4096, 7168, 128),
        (256, 4096, 7168, 128),
        (256, 3072, 4096, 128),
        (512, 3072, 7168, 128), // 96 wide tiles: not whole waves
        (128, 4096, 7168, 128),
        (16, 4096, 7168, 16),
    ];
    for (m, n, k, tokens) in cases {
        let g = Sm90Geometry::new(DualGemmShape { m, n, k }, 132).unwrap();
        assert_eq!(g.tile.tokens, tokens, "{m}×{n}×{k}");
        assert_eq!(g.shared_bytes, g.tile.shared().total);
        if tokens == 256 {
            let whole = nvfp4_kernel::schedule::data_parallel_ctas(g.tiles.len(), 132);
            assert_eq!(whole, Some(g.grid), "{m}×{n}×{k}: wide tiles only as whole tiles");
        }
    }
}

#[test]
fn decode_split_fills_one_wave_with_no_empty_split_and_fits_shared_memory() {
    use nvfp4_kernel::sm90::config::{
        DECODE_GROUP_N, DECODE_MAX_STEPS_PER_SPLIT, DECODE_MAX_TOKENS, MAX_SHARED_BYTES, decode_shared_bytes,
        decode_steps,
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
    assert!(decode_shared_bytes(DECODE_MAX_TOKENS, DECODE_MAX_STEPS_PER_SPLIT) <= MAX_SHARED_BYTES);
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
            matches!(grid_size(tiles, stages, sms), Err(Error::InvalidArgument { .. })),
            "{tiles} × {stages} on {sms}"
        );
    }
    assert_eq!(grid_size(128, 28, 132).unwrap(), 128);
    assert_eq!(grid_size(1, 1, 132).unwrap(), 1);
}

#[test]
fn sm90_geometry_takes_k_in_multiples_of_64_with_a_partial_last_stage() {
    for k in [64, 128, 192, 2880, 7168 + 64] {
        let g = Sm90Geometry::new(DualGemmShape { m: 16, n: 4096, k }, 132).unwrap();
        assert_eq!(g.split.space.stages, k.div_ceil(256) as u32, "k = {k}");
    }
}

/// A split of any tile space, with every segment of every virtual CTA listed.
struct SplitCase {
    name: String,
    total: u32,
    ctas: u32,
    /// Per virtual CTA, its segments in order, with their partial slots (split tiles only).
    segments: Vec<Vec<(Segment, Option<u32>)>>,
    /// Stages of the tile that starts at each tile-start iteration.
    tile_stages: std::collections::BTreeMap<u32, u32>,
}

fn split_case<S: TileSpace + Copy + std::fmt::Debug>(name: String, sk: &StreamK<S>) -> SplitCase {
    let segments = (0..sk.ctas)
        .map(|cta| {
            sk.segments(cta)
                .map(|seg| {
                    let slot = (seg.count > 1).then(|| sk.partial_slot(seg.tile.begin, seg.index));
                    (seg, slot)
                })
                .collect()
        })
        .collect();
    let mut tile_stages = std::collections::BTreeMap::new();
    let mut i = 0;
    while i < sk.total() {
        let span = sk.space.locate(i);
        assert_eq!(span.begin, i, "{name}: tiles start where the previous one ended");
        tile_stages.insert(span.begin, span.stages);
        i += span.stages.max(1);
    }
    SplitCase {
        name,
        total: sk.total(),
        ctas: sk.ctas,
        segments,
        tile_stages,
    }
}

/// Dense splits and grouped ones (groups of different sizes, empty groups first, in the middle
/// and last, different stage counts), over several CTA counts.
fn split_cases() -> Vec<SplitCase> {
    let mut cases = Vec::new();
    for (tiles, stages) in [
        (128, 28),
        (256, 28),
        (96, 16),
        (192, 28),
        (64, 28),
        (1, 1),
        (1, 28),
        (7, 3),
        (1024, 2),
        (2048, 28),
        (400, 5),
    ] {
        for ctas in [1u32, 2, 7, 131, 132] {
            if ctas <= tiles * stages {
                let sk = StreamK::new(UniformTiles { tiles, stages }, ctas, stages);
                cases.push(split_case(
                    format!("{tiles} tiles × {stages} stages / {ctas}"),
                    &sk,
                ));
            }
        }
    }
    // (rows, n tiles, stages) per group.
    let groupings: [&[(u32, u32, u32)]; 4] = [
        &[
            (0, 4, 3),
            (300, 4, 3),
            (2, 4, 3),
            (0, 4, 3),
            (2, 4, 3),
            (7, 4, 3),
            (0, 4, 3),
        ],
        &[(129, 2, 5), (1, 3, 2), (0, 1, 1), (64, 4, 7)],
        &[(5, 64, 28)],
        &[(1, 1, 1), (1, 1, 1), (1, 1, 1)],
    ];
    for (n, groups) in groupings.iter().enumerate() {
        let mut table = Vec::new();
        let mut begin = 0;
        for &(rows, n_tiles, stages) in groups.iter() {
            let mut g = grouped::group_schedule(rows, 64 * n_tiles, 256 * stages, 64, 64, 256);
            g.iteration_begin = begin;
            begin += g.iterations();
            table.push(g);
        }
        for grid in [1u32, 3, 16, 132] {
            let ctas = working_ctas(0, 0, begin, grid);
            // Every tile has the same stages in some groupings: waves then.
            let uniform = table
                .iter()
                .filter(|g| g.m_tiles * g.n_tiles > 0)
                .map(|g| g.stages);
            let stages = match (uniform.clone().min(), uniform.max()) {
                (Some(low), Some(high)) if low == high => high,
                _ => 0,
            };
            let sk = StreamK::new(GroupedTiles { table: &table[..] }, ctas, stages);
            cases.push(split_case(format!("grouping {n} / {ctas} of {grid}"), &sk));
        }
    }
    cases
}

#[test]
fn ctas_without_a_share_get_no_segments() {
    // A grouped launch gives shares to fewer CTAs than it has; the others must see an empty
    // range (`begin(ctas + 1)` lies past the last iteration: a phantom tile there once hung).
    for (tiles, stages, ctas) in [(9, 3, 27), (4, 1, 4), (1, 28, 7)] {
        let sk = StreamK::new(UniformTiles { tiles, stages }, ctas, stages);
        for cta in [ctas, ctas + 1, 131, u32::MAX - 1] {
            assert_eq!(
                sk.segments(cta).count(),
                0,
                "{tiles} × {stages} / {ctas}: CTA {cta}"
            );
        }
    }
}

#[test]
fn stream_k_gives_every_stage_of_every_tile_to_exactly_one_cta_with_balanced_shares() {
    for case in split_cases() {
        let mut seen = vec![0u8; case.total as usize];
        for segs in &case.segments {
            let share: u32 = segs.iter().map(|(s, _)| s.stages).sum();
            assert!(
                share <= case.total.div_ceil(case.ctas) && share >= case.total / case.ctas,
                "{}: unequal share {share}",
                case.name
            );
            for (seg, _) in segs {
                assert!(
                    seg.stages >= 1 && seg.first_stage + seg.stages <= seg.tile.stages,
                    "{}: {seg:?}",
                    case.name
                );
                for s in 0..seg.stages {
                    seen[(seg.tile.begin + seg.first_stage + s) as usize] += 1;
                }
            }
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "{}: a stage was missed or repeated",
            case.name
        );
    }
}

#[test]
fn waves_deal_whole_tiles_round_robin_before_the_stream_k_part() {
    // 2048 tiles on 132 CTAs: 15 full waves and 68 tiles over; 14 waves are dealt round-robin,
    // and the stream-K part balances the last 200 tiles.
    assert_eq!(StreamK::waves_for(2048, 132), 14);
    assert_eq!(StreamK::waves_for(264, 132), 2);
    assert_eq!(StreamK::waves_for(200, 132), 0);
    assert_eq!(StreamK::waves_for(5, 0), 0);
    let sk = StreamK::new(
        UniformTiles {
            tiles: 2048,
            stages: 28,
        },
        132,
        28,
    );
    assert_eq!(sk.stream_k_begin(), 14 * 132 * 28);
    for cta in [0, 1, 77, 131] {
        let tiles: Vec<u32> = sk.segments(cta).take(14).map(|s| s.tile.local).collect();
        let expected: Vec<u32> = (0..14).map(|w| w * 132 + cta).collect();
        assert_eq!(tiles, expected, "CTA {cta}");
        assert!(sk.segments(cta).take(14).all(|s| s.count == 1 && s.stages == 28));
    }
    // Tiles of different stage counts: no waves.
    let sk = StreamK::new(
        UniformTiles {
            tiles: 2048,
            stages: 28,
        },
        132,
        0,
    );
    assert_eq!((sk.waves(), sk.stream_k_begin()), (0, 0));
}

#[test]
fn stream_k_segments_of_a_tile_are_numbered_along_k_and_own_distinct_slots() {
    for case in split_cases() {
        let mut by_tile: std::collections::BTreeMap<u32, Vec<Segment>> = Default::default();
        let mut slots = std::collections::HashSet::new();
        for segs in &case.segments {
            for (seg, slot) in segs {
                by_tile.entry(seg.tile.begin).or_default().push(*seg);
                if let Some(slot) = slot {
                    assert!(
                        *slot < 2 * case.ctas && slots.insert(*slot),
                        "{}: slot {slot} reused",
                        case.name
                    );
                }
            }
        }
        assert_eq!(by_tile.len(), case.tile_stages.len(), "{}: tiles", case.name);
        for (tile, segs) in &by_tile {
            for (n, seg) in segs.iter().enumerate() {
                assert_eq!(
                    (seg.index, seg.count),
                    (n as u32, segs.len() as u32),
                    "{} tile {tile}",
                    case.name
                );
            }
        }
    }
}

#[test]
fn stream_k_reducers_wait_only_after_their_last_segment_on_segments_that_never_wait_first() {
    // The sm_90a fix-up: segment 0 of a split tile waits for the tile's other segments, which
    // must be their CTAs' first segments (published before those CTAs can wait on anything),
    // and segment 0 must be its own CTA's last (the wait comes after all of the CTA's own work).
    for case in split_cases() {
        for (cta, segs) in case.segments.iter().enumerate() {
            for (n, (seg, _)) in segs.iter().enumerate() {
                if seg.count == 1 {
                    continue;
                }
                if seg.index == 0 {
                    assert_eq!(
                        n,
                        segs.len() - 1,
                        "{} CTA {cta}: the reducer is not last",
                        case.name
                    );
                } else {
                    // Only whole tiles (the waves, which never wait) may come before it.
                    assert!(
                        segs[..n].iter().all(|(s, _)| s.count == 1),
                        "{} CTA {cta}: a waited-for segment is not its CTA's first split one",
                        case.name
                    );
                }
            }
        }
    }
}

/// Runs a launch on `slots` multiprocessors: CTAs start in ticket order as slots free up, each
/// becomes virtual CTA `virtual_cta(ticket)`, runs its segments one step at a time, publishes
/// non-reducer segments and, at a reducer, waits until the tile's other segments are published.
/// Returns whether every CTA finished (no deadlock).
fn simulate_launch(case: &SplitCase, slots: usize) -> bool {
    let mut published = std::collections::HashSet::new();
    let mut next_ticket = 0u32;
    // (virtual CTA, next segment)
    let mut running: Vec<(u32, usize)> = Vec::new();
    let mut finished = 0;
    loop {
        while running.len() < slots && next_ticket < case.ctas {
            let cta = virtual_cta(next_ticket, case.ctas).unwrap();
            running.push((cta, 0));
            next_ticket += 1;
        }
        if running.is_empty() {
            return finished == case.ctas;
        }
        let mut progressed = false;
        running.retain_mut(|(cta, next)| {
            let segs = &case.segments[*cta as usize];
            if let Some((seg, _)) = segs.get(*next) {
                let ready = seg.count == 1
                    || seg.index != 0
                    || (1..seg.count).all(|i| published.contains(&(seg.tile.begin, i)));
                if !ready {
                    return true; // waits, holding its multiprocessor
                }
                if seg.count > 1 && seg.index != 0 {
                    published.insert((seg.tile.begin, seg.index));
                }
                *next += 1;
                progressed = true;
                return true;
            }
            finished += 1;
            progressed = true;
            false
        });
        if !progressed {
            return false;
        }
    }
}

#[test]
fn stream_k_never_deadlocks_whatever_the_number_of_multiprocessors_available() {
    // Reducers wait only for CTAs that started earlier (virtual CTAs are handed out in reverse
    // ticket order), so a launch finishes even on one multiprocessor.
    for case in split_cases() {
        for slots in [1, 2, 3, 5, 64, case.ctas as usize] {
            assert!(
                simulate_launch(&case, slots),
                "{}: deadlock on {slots} SMs",
                case.name
            );
        }
    }
}

#[test]
fn tickets_give_each_launch_every_start_position_once_and_a_fresh_nonzero_epoch() {
    for grid in [1u32, 7, 132] {
        let mut epochs = std::collections::HashSet::new();
        for launch in 0..5u64 {
            let positions: std::collections::BTreeSet<u32> = (0..grid as u64)
                .map(|i| Ticket::new(launch * grid as u64 + i, grid))
                .map(|t| {
                    assert_ne!(t.epoch, 0);
                    epochs.insert(t.epoch);
                    t.started
                })
                .collect();
            assert_eq!(positions, (0..grid).collect(), "grid {grid}, launch {launch}");
        }
        assert_eq!(epochs.len(), 5, "every launch of grid {grid} has its own epoch");
    }
    assert_eq!(
        Ticket::new(u64::MAX, 1).epoch,
        u32::MAX as u64 as u32 % u32::MAX + 1
    );
    assert_eq!(virtual_cta(0, 4), Some(3));
    assert_eq!(virtual_cta(4, 4), None);
}

#[test]
fn working_ctas_keeps_whole_tiles_only_for_full_waves_of_equal_tiles() {
    assert_eq!(working_ctas(128, 28, 128 * 28, 132), 128, "one 97 % wave");
    assert_eq!(working_ctas(256, 28, 256 * 28, 132), 128, "two 97 % waves");
    assert_eq!(working_ctas(96, 16, 96 * 16, 132), 132, "73 %: stream-K");
    assert_eq!(working_ctas(128, 0, 9000, 132), 132, "unequal tiles: stream-K");
    assert_eq!(working_ctas(3, 4, 12, 132), 12, "never more CTAs than stages");
    assert_eq!(
        working_ctas(0, 4, 0, 132),
        132,
        "no work: the count does not matter"
    );
    assert_eq!(working_ctas(5, 4, 20, 0), 1);
    assert_eq!(data_parallel_ctas(0, 132), None);
    assert_eq!(data_parallel_ctas(132, 132), Some(132));
}

#[test]
fn grouped_tiles_locate_each_iteration_in_its_group_skipping_empty_groups() {
    let sizes = [(0u32, 1u32, 2u32), (3, 2, 2), (0, 2, 2), (1, 1, 3), (0, 1, 1)];
    let mut table = Vec::new();
    let mut begin = 0;
    for &(m_tiles, n_tiles, stages) in &sizes {
        table.push(GroupSchedule {
            iteration_begin: begin,
            m_tiles,
            n_tiles,
            stages,
        });
        begin += m_tiles * n_tiles * stages;
    }
    let space = GroupedTiles { table: &table[..] };
    assert_eq!(space.total(), 15);
    let located: Vec<(u32, u32, u32)> = (0..15)
        .map(|i| {
            let t = space.locate(i);
            (t.group, t.local, i - t.begin)
        })
        .collect();
    let expected: Vec<(u32, u32, u32)> = (0..6)
        .flat_map(|tile| (0..2).map(move |s| (1, tile, s)))
        .chain((0..3).map(|s| (3, 0, s)))
        .collect();
    assert_eq!(located, expected);
}

#[test]
fn group_tile_walks_deal_every_tile_once_in_order_and_skip_empty_groups() {
    use nvfp4_kernel::schedule::GroupTileWalk;
    // Tiles per group: 2, 0, 6, 0, 1, 0 (the zero-tile groups first, in the middle and last).
    let sizes = [(0u32, 4u32), (2, 1), (0, 3), (3, 2), (0, 0), (1, 1), (0, 5)];
    let table: Vec<GroupSchedule> = sizes
        .iter()
        .map(|&(m_tiles, n_tiles)| GroupSchedule {
            iteration_begin: 0,
            m_tiles,
            n_tiles,
            stages: 1,
        })
        .collect();
    let all: Vec<(u32, u32)> = sizes
        .iter()
        .enumerate()
        .flat_map(|(g, &(m, n))| (0..m * n).map(move |t| (g as u32, t)))
        .collect();
    assert_eq!(all.len(), 9);
    for stride in 1..=12u32 {
        let mut dealt = Vec::new();
        for first in 0..stride {
            let walk: Vec<(u32, u32)> = GroupTileWalk::new(&table[..], first, stride).collect();
            let expected: Vec<(u32, u32)> = all
                .iter()
                .copied()
                .skip(first as usize)
                .step_by(stride as usize)
                .collect();
            assert_eq!(walk, expected, "stride {stride}, first {first}");
            dealt.extend(walk);
        }
        dealt.sort_unstable();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(dealt, sorted, "stride {stride}: every tile exactly once");
    }
    let empty: [GroupSchedule; 0] = [];
    assert_eq!(GroupTileWalk::new(&empty[..], 0, 1).next(), None);
    assert_eq!(
        GroupTileWalk::new(&table[..], u32::MAX, u32::MAX).next(),
        None,
        "no overflow"
    );
    assert_eq!(
        GroupTileWalk::new(&table[..], 8, 0).count(),
        1,
        "a zero stride is taken as 1"
    );
}

#[test]
fn group_schedules_round_rows_and_outputs_up_and_give_empty_groups_no_tiles() {
    let g = grouped::group_schedule(129, 4096, 2880, 128, 64, 256);
    assert_eq!(
        (g.m_tiles, g.n_tiles, g.stages, g.iterations()),
        (2, 64, 12, 1536)
    );
    assert_eq!(grouped::group_schedule(0, 4096, 7168, 8, 64, 256).iterations(), 0);
    assert_eq!(
        grouped::group_schedule(5, 64, 64, 0, 64, 256).m_tiles,
        0,
        "no panic on a zero tile"
    );
}

// --- sm_100f (Blackwell): encoders and plans checked against independent values (no B200 here).

#[test]
fn umma_instruction_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::umma_idesc_mxf4nvf4;
    // docs/ptx-facts.md §2, checked there against CUTLASS, ThunderKittens, JAX and a raw-PTX kernel.
    assert_eq!(umma_idesc_mxf4nvf4(128, 128), 0x0820_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 64), 0x0810_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 256), 0x0840_0480);
    assert_eq!(umma_idesc_mxf4nvf4(256, 256), 0x1040_0480);
}

#[test]
fn tensor_maps_get_cutlasss_driver_workaround_only_when_small_and_the_driver_is_old() {
    use nvfp4_kernel::launch::TensorMap;
    let all = TensorMap([u64::MAX; 16]);
    let words32 =
        |m: TensorMap| -> Vec<u32> { m.0.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]).collect() };
    // Cleared: 64-bit word 1, bit 21 = 32-bit word 2, bit 21 (CUTLASS's `[1] &= ~(1 << 21)` on
    // the map as uint64_t[16]); nothing else changes.
    let cleared = all.with_driver_workaround(13000, 100 * 1024);
    let mut want = vec![u32::MAX; 32];
    want[2] &= !(1 << 21);
    assert_eq!(words32(cleared), want);
    assert_eq!(all.with_driver_workaround(13010, 0), cleared, "13.1 is affected");
    for (driver, span) in [(13020, 1024), (13000, 128 * 1024), (12080 + 2000, 1 << 20)] {
        assert_eq!(all.with_driver_workaround(driver, span), all, "{driver} {span}");
    }
    // Spans as CuTe's cosize: the last row's end. Decode activations are small, weights large.
    assert_eq!(TensorMap::span_bytes_2d([3584, 1], 3584, 1), 3584);
    assert_eq!(TensorMap::span_bytes_2d([3584, 16], 3584, 1), 57_344);
    assert_eq!(
        TensorMap::span_bytes_2d([7168, 4096], 3584, 1),
        4095 * 3584 + 7168
    );
    assert_eq!(TensorMap::span_bytes_2d([256, 64], 512, 2), 63 * 512 + 512);
    assert_eq!(TensorMap::span_bytes_2d([0, 64], 512, 2), 0);
}

#[test]
fn umma_shared_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::{umma_desc_scale_atom, umma_desc_sw128_k_major};
    for addr in [0u32, 1024, 0x1_2400, 0x3_FC00] {
        // docs/ptx-facts.md §3 and §5.
        assert_eq!(
            umma_desc_sw128_k_major(addr),
            0x4000_4040_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
        assert_eq!(
            umma_desc_scale_atom(addr),
            0x0000_4008_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
    }
    // The sm_100 SW128 descriptor is the sm_90 one plus the version bit (same swizzle bits).
    assert_eq!(
        umma_desc_sw128_k_major(2048) ^ wgmma_desc_sw128_k_major(2048),
        1 << 46
    );
}

#[test]
fn sm100_tmem_plan_gives_every_column_one_owner_inside_the_allocation() {
    use nvfp4_kernel::sm100::config::*;
    use nvfp4_kernel::sm100::registry::TILES;
    for tile in TILES {
        let mut owner = vec![None; TMEM_COLUMNS as usize];
        let mut claim = |column: u32, what: String| {
            let slot = &mut owner[column as usize];
            assert!(
                slot.is_none(),
                "{tile:?}: column {column}: {what} overlaps {:?}",
                slot
            );
            *slot = Some(what);
        };
        for buffer in 0..tile.accumulator_buffers() {
            for n in 0..tile.n {
                claim(tile.gate_column(buffer) + n, format!("gate {buffer}/{n}"));
                claim(tile.gate_column(buffer) + tile.n + n, format!("up {buffer}/{n}"));
            }
        }
        for stage in 0..STAGES {
            for operand in 0..3 {
                for mma in 0..MMAS_PER_STAGE {
                    for c in 0..4 {
                        claim(
                            tile.scale_column(stage, operand, mma) + c,
                            format!("scale {stage}/{operand}/{mma}"),
                        );
                    }
                }
            }
        }
        assert_eq!(
            owner.iter().filter(|o| o.is_some()).count() as u32,
            tile.tmem_columns_used(),
            "{tile:?}"
        );
    }
    assert_eq!(tmem_address(0x0040, 32, 5), (32 << 16) | 0x45);
}

#[test]
fn sm100_stage_layout_fits_shared_memory_and_keeps_swizzled_tiles_aligned() {
    use nvfp4_kernel::sm100::config::*;
    use nvfp4_kernel::sm100::registry::TILES;
    for tile in TILES {
        assert_eq!(
            tile.stage_bytes(),
            16384 + 2 * tile.n * 128 + 3 * 2048,
            "{tile:?}"
        );
        for offset in [STAGE_A, tile.stage_b1(), tile.stage_b2()] {
            assert_eq!(offset % 1024, 0, "{tile:?}");
        }
        assert_eq!(tile.stage_sfb2() + SCALE_BYTES, tile.stage_bytes());
        assert!(tile.shared_bytes() <= 227 * 1024, "{tile:?}");
        assert_eq!(tile.b_boxes() * BOX_ROWS, tile.n);
    }
    assert_eq!(THREADS, 32 * (2 + EPILOGUE_WARPS));
    // The four epilogue warps cover the four TMEM lane quadrants.
    let mut quadrants: Vec<u32> = (FIRST_EPILOGUE_WARP..FIRST_EPILOGUE_WARP + EPILOGUE_WARPS)
        .map(|w| w % 4)
        .collect();
    quadrants.sort();
    assert_eq!(quadrants, [0, 1, 2, 3]);
}

#[test]
fn sm100_geometry_applies_the_shared_shape_rules_and_one_tile_per_cta() {
    use nvfp4::dual_gemm::Sm100Geometry;
    let g = Sm100Geometry::new(
        DualGemmShape {
            m: 256,
            n: 4096,
            k: 7168,
        },
        148,
    )
    .unwrap();
    assert_eq!((g.tiles.m_tiles, g.tiles.n_tiles, g.grid), (2, 64, 128));
    let g = Sm100Geometry::new(DualGemmShape { m: 1, n: 64, k: 256 }, 148).unwrap();
    assert_eq!((g.tiles.len(), g.grid), (1, 1));
    assert!(Sm100Geometry::new(DualGemmShape { m: 1, n: 96, k: 256 }, 148).is_err());
    assert!(Sm100Geometry::new(DualGemmShape { m: 1, n: 64, k: 96 }, 148).is_err());
    assert!(Sm100Geometry::new(DualGemmShape { m: 1, n: 64, k: 2880 }, 148).is_ok());
}

#[test]
fn sm100_stage_copies_hold_every_scale_its_mmas_read_at_the_addressed_tmem_columns() {
    use nvfp4::BlockedScales;
    use nvfp4_kernel::layout::ATOM_BYTES;
    use nvfp4_kernel::sm100::config::{MMAS_PER_STAGE, TILE_M, b_scale_column_offset, stage_scale_atoms};
    use nvfp4_kernel::sm100::registry::TILES;
    for (rows, k) in [(256usize, 7168usize), (300, 512), (4096, 256)] {
        let layout = BlockedScales::new(rows, k);
        for k_stage in 0..(k / 256) as u32 {
            for tile_rows in [TILE_M, TILES[0].n, TILES[1].n] {
                for row0 in (0..rows as u32).step_by(tile_rows as usize) {
                    let copied = stage_scale_atoms(&layout, row0, k_stage);
                    for row in row0..(row0 + tile_rows).min(rows as u32) {
                        for mma in 0..MMAS_PER_STAGE {
                            for g in 0..4 {
                                let col = 16 * k_stage + 4 * mma + g; // scale column of K-block `mma`
                                let at = layout.offset(row as usize, col as usize);
                                // Inside atom `mma` of the 2 KiB the stage copies …
                                let atom = copied + mma as usize * ATOM_BYTES;
                                assert!((atom..atom + ATOM_BYTES).contains(&at), "row {row}, col {col}");
                                // … at the 16-byte row (TMEM lane) `row % 32` and column group
                                // `(row % 128) / 32`, which the MMA addresses as its start column
                                // plus the row's offset inside the tile.
                                let (lane, group) = ((at - atom) / 16, ((at - atom) % 16) / 4);
                                assert_eq!(lane as u32, row % 32);
                                let start = if tile_rows < TILE_M {
                                    b_scale_column_offset(row0)
                                } else {
                                    0
                                };
                                assert_eq!(group as u32, start + (row - row0) / 32, "row {row}");
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn sm100_partial_last_stage_copies_and_multiplies_only_its_existing_scale_atoms() {
    use nvfp4_kernel::layout::ATOM_BYTES;
    use nvfp4_kernel::sm100::config::{MMAS_PER_STAGE, stage_mmas};
    use nvfp4_kernel::sm100::registry::TILES;
    // K = 2880 = 11 stages + 64: the last stage has one MMA; K = 320: 4 then 1; K = 7168: whole.
    for (k, expected) in [
        (2880u32, vec![4; 11].into_iter().chain([1]).collect::<Vec<_>>()),
        (320, vec![4, 1]),
        (7168, vec![4; 28]),
        (64, vec![1]),
    ] {
        let mmas: Vec<u32> = (0..k.div_ceil(256)).map(|s| stage_mmas(k, s)).collect();
        assert_eq!(mmas, expected, "k = {k}");
        assert_eq!(
            mmas.iter().sum::<u32>(),
            k / 64,
            "every 64-K block multiplied once"
        );
    }
    for tile in TILES {
        assert_eq!(
            tile.stage_transfer_bytes(MMAS_PER_STAGE),
            tile.stage_bytes(),
            "a whole stage"
        );
        assert_eq!(
            tile.stage_bytes() - tile.stage_transfer_bytes(1),
            3 * (MMAS_PER_STAGE - 1) * ATOM_BYTES as u32,
            "three operands' missing atoms are not expected"
        );
    }
}
