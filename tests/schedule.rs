//! The schedules of `nvfp4_kernel::schedule` and the grouped tables of `nvfp4_kernel::grouped`:
//! tile grids, the stream-K split with its waves, tickets, grouped tile spaces and walks.

use nvfp4_kernel::grouped;
use nvfp4_kernel::schedule::{
    GroupSchedule, GroupedTiles, Segment, StreamK, Ticket, TileGrid, TileSpace, UniformTiles,
    data_parallel_ctas, virtual_cta, working_ctas,
};

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
                for serpentine in [false, true] {
                    let sk =
                        StreamK::new(UniformTiles { tiles, stages }, ctas, stages).serpentine(serpentine);
                    cases.push(split_case(
                        format!("{tiles} tiles × {stages} stages / {ctas}, serpentine {serpentine}"),
                        &sk,
                    ));
                }
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
            for serpentine in [false, true] {
                let sk =
                    StreamK::new(GroupedTiles { table: &table[..] }, ctas, stages).serpentine(serpentine);
                cases.push(split_case(
                    format!("grouping {n} / {ctas} of {grid}, serpentine {serpentine}"),
                    &sk,
                ));
            }
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
fn waves_deal_whole_tiles_before_the_stream_k_part_round_robin_or_in_serpentine_order() {
    // 2048 tiles on 132 CTAs: 15 full waves and 68 tiles over; 14 waves are dealt whole,
    // forward (serpentine: forward in even waves and backward in odd ones), and the stream-K
    // part balances the last 200 tiles.
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
    for serpentine in [false, true] {
        let sk = sk.serpentine(serpentine);
        for cta in [0, 1, 77, 131] {
            let tiles: Vec<u32> = sk.segments(cta).take(14).map(|s| s.tile.local).collect();
            let expected: Vec<u32> = (0..14)
                .map(|w| w * 132 + if serpentine && w % 2 == 1 { 131 - cta } else { cta })
                .collect();
            assert_eq!(tiles, expected, "CTA {cta}, serpentine {serpentine}");
            assert!(sk.segments(cta).take(14).all(|s| s.count == 1 && s.stages == 28));
        }
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
