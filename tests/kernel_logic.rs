//! The kernels' pure logic, on the host: fp4 pair decoding, descriptors, swizzle, scheduling,
//! ring bookkeeping and the sm_90a plan rules.

use half::f16;
use nvfp4::codec::e2m1_to_f32;
use nvfp4::dual_gemm::Sm90Geometry;
use nvfp4::{DualGemmShape, Error};
use nvfp4_kernel::desc::{sw128_offset, wgmma_desc_sw128_k_major};
use nvfp4_kernel::fp4::{PAIR_ELEMENTS, e2m1_to_f16_bits_scaled, e2m1x8_to_f16x2_pairs};
use nvfp4_kernel::ring::RingPosition;
use nvfp4_kernel::schedule::{Segment, StreamK, TileGrid};
use nvfp4_kernel::sm90::config::{
    BLOCKS_PER_STAGE, SLICES_PER_STAGE, TILES, Tile, WEIGHT_CHUNKS_PER_STAGE, stage_block,
};

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
    // ptx-facts.md §3: sm90 SW128 K-major = 0x4000_0040_0001_0000 | (addr >> 4).
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
    let grid = TileGrid::new(300, 4096, 128, 64);
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
    assert_eq!(Tile::for_tokens(1).tokens, 8);
    assert_eq!(Tile::for_tokens(9).tokens, 16);
    assert_eq!(Tile::for_tokens(33).tokens, 64);
    assert_eq!(Tile::for_tokens(100).tokens, 128);
    assert_eq!(Tile::for_tokens(1000).tokens, 128);
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
            least.is_multiple_of(g.split.stages) && most == least,
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
fn sm90_geometry_rejects_shapes_naming_the_dimension_and_rule() {
    let bad = [
        ((0, 64, 256), "m"),
        ((1, 96, 256), "n"),
        ((1, 0, 256), "n"),
        ((1, 64, 128), "k"),
        ((1, 64, 0), "k"),
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

fn stream_k_cases() -> Vec<StreamK> {
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
    ] {
        for ctas in [1u32, 2, 7, 131, 132] {
            if ctas <= tiles * stages {
                cases.push(StreamK { tiles, stages, ctas });
            }
        }
    }
    cases
}

#[test]
fn stream_k_gives_every_stage_of_every_tile_to_exactly_one_cta_with_balanced_shares() {
    for sk in stream_k_cases() {
        let mut seen = vec![0u8; sk.total() as usize];
        for cta in 0..sk.ctas {
            let (begin, end) = (sk.begin(cta), sk.begin(cta + 1));
            assert!(
                end - begin <= sk.total().div_ceil(sk.ctas) && end - begin >= sk.total() / sk.ctas,
                "{sk:?}"
            );
            let mut i = begin;
            while i < end {
                let seg = sk.segment(i, end);
                assert!(
                    seg.stages >= 1 && seg.first_stage + seg.stages <= sk.stages,
                    "{sk:?} {seg:?}"
                );
                for s in 0..seg.stages {
                    seen[(seg.tile * sk.stages + seg.first_stage + s) as usize] += 1;
                }
                assert_eq!(sk.cta_of(i), cta, "{sk:?}: iteration {i}");
                i += seg.stages;
            }
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "{sk:?}: a stage was missed or repeated"
        );
    }
}

#[test]
fn stream_k_segments_of_a_tile_are_numbered_along_k_and_own_distinct_slots() {
    for sk in stream_k_cases() {
        let mut segments: Vec<Vec<Segment>> = vec![Vec::new(); sk.tiles as usize];
        for cta in 0..sk.ctas {
            let (mut i, end) = (sk.begin(cta), sk.begin(cta + 1));
            while i < end {
                let seg = sk.segment(i, end);
                segments[seg.tile as usize].push(seg);
                i += seg.stages;
            }
        }
        let mut slots = std::collections::HashSet::new();
        for (tile, segs) in segments.iter().enumerate() {
            let mut by_k = segs.clone();
            by_k.sort_by_key(|s| s.first_stage);
            for (n, seg) in by_k.iter().enumerate() {
                assert_eq!(
                    (seg.index, seg.count),
                    (n as u32, segs.len() as u32),
                    "{sk:?} tile {tile}"
                );
                if seg.count > 1 {
                    // Only segments of split tiles store partial sums.
                    let slot = sk.partial_slot(tile as u32, seg.index);
                    assert!(
                        slot < 2 * sk.ctas && slots.insert(slot),
                        "{sk:?}: slot {slot} reused"
                    );
                }
            }
        }
    }
}

#[test]
fn stream_k_reducers_wait_only_after_their_last_segment_on_segments_that_never_wait_first() {
    // The sm_90a fix-up: segment 0 of a split tile waits for the tile's other segments. That is
    // deadlock-free if segment 0 is its CTA's last segment (the wait comes after all of the CTA's
    // own work) and every other segment is its CTA's first (done before that CTA can wait).
    for sk in stream_k_cases() {
        for cta in 0..sk.ctas {
            let segs: Vec<Segment> = sk.segments(cta).collect();
            for (n, seg) in segs.iter().enumerate() {
                if seg.count == 1 {
                    continue;
                }
                if seg.index == 0 {
                    assert_eq!(n, segs.len() - 1, "{sk:?} CTA {cta}: the reducer is not last");
                } else {
                    assert_eq!(n, 0, "{sk:?} CTA {cta}: a waited-for segment is not first");
                }
            }
        }
    }
}

// --- sm_100a (Blackwell): encoders and plans checked against independent values (no B200 here).

#[test]
fn umma_instruction_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::umma_idesc_mxf4nvf4;
    // ptx-facts.md §2, checked there against CUTLASS, ThunderKittens, JAX and a raw-PTX kernel.
    assert_eq!(umma_idesc_mxf4nvf4(128, 128), 0x0820_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 64), 0x0810_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 256), 0x0840_0480);
    assert_eq!(umma_idesc_mxf4nvf4(256, 256), 0x1040_0480);
}

#[test]
fn umma_shared_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::{umma_desc_scale_atom, umma_desc_sw128_k_major};
    for addr in [0u32, 1024, 0x1_2400, 0x3_FC00] {
        // ptx-facts.md §3 and §5.
        assert_eq!(
            umma_desc_sw128_k_major(addr),
            0x4000_4040_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
        assert_eq!(
            umma_desc_scale_atom(addr),
            0x0000_4008_0000_0000 | (addr as u64 >> 4),
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
    assert!(Sm100Geometry::new(DualGemmShape { m: 1, n: 64, k: 128 }, 148).is_err());
}

#[test]
fn sm100_stage_copies_hold_every_scale_its_mmas_read_at_the_addressed_tmem_columns() {
    use nvfp4::BlockedScales;
    use nvfp4_kernel::layout::ATOM_BYTES;
    use nvfp4_kernel::sm100::config::{
        MMAS_PER_STAGE, TILE_M, TILES, b_scale_column_offset, stage_scale_atoms,
    };
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
