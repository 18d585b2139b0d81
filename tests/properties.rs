//! Property tests over the public API's shapes, lengths and indices: every call gives a typed
//! error or a correct result, never a panic (plans, matrices, quantizer, layouts, schedules).
//! Bounded: a few hundred random cases per property, small enough for CI.

use nvfp4::dual_gemm::{Sm90Geometry, Sm100Geometry, grid_size};
use nvfp4::grouped::ContiguousTokens;
use nvfp4::{BlockedScales, DualGemmShape, Error, GlobalScale, NvFp4Matrix};
use nvfp4_kernel::schedule::{StreamK, TileGrid, UniformTiles};
use proptest::prelude::*;

/// Sizes from tiny to far past any GPU's limits (and past u32 / usize arithmetic).
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..300,
        Just(1 << 16),
        Just(1 << 23),
        Just((1 << 22) + 64),
        Just(1 << 31),
        Just(u32::MAX as usize),
        Just(1 << 40),
        Just(usize::MAX),
        any::<usize>(),
    ]
}

fn typed(error: &Error) -> bool {
    matches!(
        error,
        Error::InvalidArgument { .. } | Error::BufferLength { .. } | Error::ShapeMismatch(_)
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn plans_give_a_typed_error_or_a_consistent_geometry(m in size(), n in size(), k in size(), sms in 0u32..300) {
        let shape = DualGemmShape { m, n, k };
        match Sm90Geometry::new(shape, sms) {
            Ok(g) => {
                prop_assert!(g.grid >= 1 && g.grid <= sms.max(1));
                prop_assert!(g.grid <= g.split.total(), "never more CTAs than stages");
                prop_assert_eq!(g.split.space.tiles, g.tiles.len());
                prop_assert_eq!(g.tiles.m_tiles as usize, m.div_ceil(g.tile.tokens as usize));
                prop_assert_eq!(g.tiles.n_tiles as usize * 64, n);
                prop_assert_eq!(g.split.space.stages as usize, k.div_ceil(256));
            }
            Err(e) => prop_assert!(typed(&e), "{e:?}"),
        }
        if let Err(e) = Sm100Geometry::new(shape, sms) {
            prop_assert!(typed(&e), "{e:?}");
        }
    }

    #[test]
    fn grid_size_gives_a_typed_error_or_a_grid_within_the_multiprocessors(tiles in 0u32..5000, stages in 0u32..64, sms in prop_oneof![0u32..300, Just(u32::MAX)]) {
        match grid_size(nvfp4_kernel::sm90::config::Tile { tokens: 128 }, tiles, stages, sms) {
            Ok(grid) => prop_assert!(grid >= 1 && grid <= sms && grid <= tiles * stages),
            Err(e) => prop_assert!(typed(&e), "{e:?}"),
        }
    }

    #[test]
    fn tile_grids_and_splits_never_overflow(m in any::<u32>(), n in any::<u32>(), tile_m in 0u32..300, tile_n in 0u32..300, stages in 0u32..100, ctas in 1u32..200) {
        if let Some(grid) = TileGrid::new(m, n, tile_m, tile_n) {
            prop_assert_eq!(grid.len() as u64, grid.m_tiles as u64 * grid.n_tiles as u64);
            if let Some(space) = UniformTiles::new(grid.len(), stages).filter(|s| s.tiles * s.stages < 1 << 16) {
                let split = StreamK::new(space, ctas.min((space.tiles * space.stages).max(1)), space.stages);
                let stages_seen: u32 = (0..split.ctas).flat_map(|c| split.segments(c)).map(|s| s.stages).sum();
                prop_assert_eq!(stages_seen, space.tiles * space.stages);
            }
        }
    }

    #[test]
    fn blocked_layouts_give_a_length_or_none_and_offsets_inside_it(rows in size(), k in size(), r in any::<usize>(), c in any::<usize>()) {
        let layout = BlockedScales::new(rows, k);
        if let Some(len) = layout.checked_len() && rows > 0 && k >= 16 && len < 1 << 30 {
            let (row, column) = (r % rows, c % (k / 16));
            prop_assert!(layout.offset(row, column) < len);
        }
    }

    #[test]
    fn matrices_from_parts_check_every_length(rows in 0usize..40, k in 0usize..200, data_len in 0usize..4000, scales_len in 0usize..6000) {
        let result = NvFp4Matrix::from_parts(rows, k, vec![0x11; data_len], vec![0x38; scales_len], None);
        match result {
            Ok(m) => {
                prop_assert_eq!(m.data().len(), rows * k / 2);
                prop_assert_eq!(m.scales().len(), BlockedScales::new(rows, k).len());
            }
            Err(e) => prop_assert!(typed(&e), "{e:?}"),
        }
    }

    #[test]
    fn element_and_scale_accessors_answer_in_range_and_refuse_out_of_range(rows in 1usize..20, blocks in 1usize..8, r in 0usize..40, c in 0usize..300) {
        let k = 16 * blocks;
        let data: Vec<u8> = (0..rows * k / 2).map(|i| (i * 37 % 256) as u8).collect();
        let m = NvFp4Matrix::from_parts(rows, k, data.clone(), vec![0x38; BlockedScales::new(rows, k).len()], None).unwrap();
        match m.code(r, c) {
            Ok(code) => {
                prop_assert!(r < rows && c < k);
                let byte = data[r * k / 2 + c / 2];
                prop_assert_eq!(code, if c % 2 == 0 { byte & 0xF } else { byte >> 4 });
            }
            Err(e) => prop_assert!(typed(&e) && (r >= rows || c >= k), "{e:?}"),
        }
        prop_assert_eq!(m.scale_code(r, c).is_ok(), r < rows && c < k / 16);
        let mut out = vec![0f32; c];
        prop_assert_eq!(m.decode_row_unscaled(r, &mut out).is_ok(), r < rows && c == k);
    }

    #[test]
    fn quantization_gives_a_typed_error_or_a_matrix_within_one_e2m1_step(rows in 0usize..6, k in 0usize..70, len_delta in 0usize..3, seed in any::<u64>(), global in prop_oneof![Just(GlobalScale::None), Just(GlobalScale::Auto), Just(GlobalScale::Fixed(0.5)), Just(GlobalScale::Fixed(-1.0))]) {
        let mut rng = nvfp4::problem::Rng::new(seed);
        let len = (rows * k + len_delta).saturating_sub(1);
        let values: Vec<f32> = (0..len).map(|_| (rng.next_f32() - 0.5) * 20.0).collect();
        match NvFp4Matrix::quantize_with_stats(rows, k, &values, global) {
            Ok((m, stats)) => {
                prop_assert_eq!(stats.blocks, rows * k / 16);
                let decoded = m.dequantize_f32();
                let g = m.global_scale().unwrap_or(1.0);
                for (block, (got, want)) in decoded.chunks(16).zip(values.chunks(16)).enumerate() {
                    let r = block / (k / 16);
                    let unit = nvfp4::codec::e4m3_to_f32(m.scale_code(r, block % (k / 16)).unwrap()) * g;
                    for (x, y) in got.iter().zip(want) {
                        // Within one e2m1 step (2 units at the top of the range) of the input.
                        prop_assert!((x - y).abs() <= 2.0 * unit + 1e-6, "{x} vs {y}, unit {unit}");
                    }
                }
            }
            Err(e) => prop_assert!(typed(&e), "{e:?}"),
        }
    }

    #[test]
    fn contiguous_token_buffers_place_every_group_and_check_capacity(sizes in prop::collection::vec(0usize..40, 1..9), slack in 0usize..20, short in any::<bool>()) {
        let k = 64;
        let matrices: Vec<Option<NvFp4Matrix>> = sizes
            .iter()
            .map(|&m| (m > 0).then(|| NvFp4Matrix::quantize(m, k, &vec![1.0f32; m * k], GlobalScale::Auto).unwrap()))
            .collect();
        let refs: Vec<Option<&NvFp4Matrix>> = matrices.iter().map(|m| m.as_ref()).collect();
        let total: usize = sizes.iter().sum();
        let rows = if short && total > 0 { total - 1 } else { total + slack };
        match ContiguousTokens::new(&refs, k, rows) {
            Ok(t) => {
                prop_assert!(total <= rows);
                prop_assert_eq!(t.row_offsets.len(), sizes.len() + 1);
                prop_assert_eq!(*t.row_offsets.last().unwrap() as usize, total);
                for (g, &m) in sizes.iter().enumerate() {
                    prop_assert_eq!((t.row_offsets[g + 1] - t.row_offsets[g]) as usize, m);
                    prop_assert!(t.scale_offsets[g] % 128 == 0);
                    prop_assert!(t.scale_offsets[g] as usize + m <= t.scale_offsets[g + 1] as usize);
                }
                prop_assert!(*t.scale_offsets.last().unwrap() as usize <= t.scale_rows);
            }
            Err(e) => prop_assert!(typed(&e) && total > rows, "{e:?}"),
        }
    }
}

/// Views of caller memory refuse null addresses (a launch would read or write through them)
/// and misaligned ones, naming the argument; valid ones are accepted.
#[test]
fn raw_views_reject_null_and_misaligned_addresses() {
    use nvfp4::gpu::{F16Mut, NvFp4Mut, NvFp4Ref};
    fn named<T>(result: nvfp4::Result<T>, arg: &str) -> bool {
        matches!(result, Err(Error::InvalidArgument { arg: got, .. }) if got == arg)
    }
    // SAFETY (all): the views are checked and dropped, never launched on.
    unsafe {
        assert!(named(NvFp4Mut::from_raw(0, 0x1000, 1, 64, 1.0), "data"));
        assert!(named(NvFp4Mut::from_raw(0x1000, 0, 1, 64, 1.0), "scales"));
        assert!(named(NvFp4Mut::from_raw(0x1008, 0x1000, 1, 64, 1.0), "data"));
        assert!(NvFp4Mut::from_raw(0x1000, 0x2000, 1, 64, 1.0).is_ok());
        assert!(named(NvFp4Ref::from_raw(0, 0x1000, 1, 64, None), "data"));
        assert!(named(NvFp4Ref::from_raw(0x1000, 0, 1, 64, None), "scales"));
        assert!(NvFp4Ref::from_raw(0x1000, 0x2000, 1, 64, None).is_ok());
        assert!(named(F16Mut::from_raw(0, 64), "out"));
        assert!(named(F16Mut::from_raw(0x1004, 64), "out"));
        assert!(F16Mut::from_raw(0x1000, 64).is_ok());
    }
}
