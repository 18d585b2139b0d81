//! The sm_100f (Blackwell) plans, checked on the host against independent values (no B200 here):
//! TMEM columns, stage layout, geometry, and the scale atoms each stage copies.

use nvfp4::DualGemmShape;

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
