//! The blocked scale layout against the formula of docs/format.md and the PyTorch permutation that defines it.

use nvfp4::BlockedScales;
use nvfp4_kernel::layout::{ATOM_BYTES, ATOM_K, ATOM_ROWS};

/// docs/format.md: off(i, j) = (i/128)·(rest_k·512) + (j/4)·512 + (i%32)·16 + ((i/32)%4)·4 + (j%4).
fn task_formula(i: usize, j: usize, rest_k: usize) -> usize {
    (i / 128) * (rest_k * 512) + (j / 4) * 512 + (i % 32) * 16 + ((i / 32) % 4) * 4 + (j % 4)
}

/// The reference builds the blocked tensor by permuting a contiguous
/// (rest_mn, rest_k, 32, 4, 4) array; index it directly.
fn contiguous_permutation(i: usize, j: usize, rest_k: usize) -> usize {
    let (mb, r32, i4) = (i / 128, i % 32, (i / 32) % 4);
    let (kb, g4) = (j / 4, j % 4);
    (((mb * rest_k + kb) * 32 + r32) * 4 + i4) * 4 + g4
}

const SHAPES: [(usize, usize); 6] = [(1, 16), (7, 64), (128, 256), (130, 80), (300, 7168), (4096, 512)];

#[test]
fn offsets_match_the_task_formula_and_the_reference_permutation() {
    for (rows, k) in SHAPES {
        let layout = BlockedScales::new(rows, k);
        for i in 0..rows {
            for j in 0..k / 16 {
                let off = layout.offset(i, j);
                assert_eq!(layout.offset_u32(i as u32, j as u32) as usize, off, "32-bit form");
                assert_eq!(
                    off,
                    task_formula(i, j, layout.k_blocks),
                    "rows {rows}, k {k}, ({i}, {j})"
                );
                assert_eq!(
                    off,
                    contiguous_permutation(i, j, layout.k_blocks),
                    "rows {rows}, k {k}, ({i}, {j})"
                );
            }
        }
    }
}

#[test]
fn every_byte_of_the_buffer_belongs_to_exactly_one_padded_position() {
    for (rows, k) in SHAPES {
        let layout = BlockedScales::new(rows, k);
        let mut hits = vec![0u8; layout.len()];
        for i in 0..layout.row_blocks * ATOM_ROWS {
            for j in 0..layout.k_blocks * 4 {
                hits[layout.offset(i, j)] += 1;
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "rows {rows}, k {k}");
    }
}

#[test]
fn one_row_blocks_scales_for_a_256_wide_k_tile_are_2048_contiguous_bytes() {
    let layout = BlockedScales::new(256, 7168);
    let first = layout.atom_offset(1, 8);
    for kb in 8..12 {
        assert_eq!(layout.atom_offset(1, kb), first + (kb - 8) * ATOM_BYTES);
    }
    assert_eq!(4 * ATOM_K, 256);
}

#[test]
fn sizes_round_rows_up_to_128_and_k_up_to_64() {
    assert_eq!(BlockedScales::new(1, 16).len(), 512);
    assert_eq!(BlockedScales::new(129, 64).len(), 1024);
    assert_eq!(BlockedScales::new(256, 7168).len(), 2 * 112 * 512);
    assert_eq!(BlockedScales::new(128, 80).len(), 2 * 512);
}

/// Emulates the quantizer's padding writes (`ScalePadding`'s items as the kernel stores them)
/// over a buffer whose real scales are marked, and checks that every padding byte is written
/// exactly once and no real scale at all.
#[test]
fn scale_padding_items_write_every_padding_byte_once_and_no_real_scale() {
    use nvfp4_kernel::layout::{ATOM_LINE_BYTES, ATOM_LINES, ScalePadding};
    for rows in [
        1, 2, 31, 32, 33, 64, 95, 96, 97, 127, 128, 129, 200, 255, 256, 300,
    ] {
        for k in [16, 32, 48, 64, 80, 112, 128, 144, 2880, 7168] {
            let layout = BlockedScales::new(rows, k);
            let blocks_per_row = k / 16;
            let mut writes = vec![0u32; layout.len()];
            let mut real = vec![false; layout.len()];
            for row in 0..rows {
                for col in 0..blocks_per_row {
                    real[layout.offset(row, col)] = true;
                }
            }
            let padding = ScalePadding::new(rows as u32, k as u32);
            let gap = padding.column_gap.max(1);
            for item in 0..padding.items() {
                if item < padding.column_items() {
                    let (row, g) = (item / gap, item % gap);
                    writes[layout.offset(row as usize, (padding.blocks_per_row + g) as usize)] += 1;
                } else {
                    let line = item - padding.column_items();
                    let at = padding.line_offset(line) as usize;
                    let first_word = padding.real_words(line % ATOM_LINES as u32) as usize;
                    for count in &mut writes[at + 4 * first_word..at + ATOM_LINE_BYTES] {
                        *count += 1;
                    }
                }
            }
            for (at, (&count, &is_real)) in writes.iter().zip(&real).enumerate() {
                let expected = u32::from(!is_real);
                assert_eq!(count, expected, "rows {rows}, k {k}, byte {at}: {count} writes");
            }
        }
    }
}

#[test]
fn a_plain_gemm_counts_one_weight_matrix_and_one_product_of_the_dual_gemm_s_two() {
    use nvfp4::DualGemmShape;
    use nvfp4::gemm::GemmShape;
    for (m, n, k) in [
        (1, 4096, 7168),
        (16, 2048, 8192),
        (129, 192, 64),
        (4096, 4096, 14336),
    ] {
        let (dual, plain) = (DualGemmShape { m, n, k }, GemmShape { m, n, k });
        let b = n * k / 2 + BlockedScales::new(n, k).len();
        assert_eq!(plain.bytes(), dual.bytes() - b, "{m}×{n}×{k}");
        assert_eq!(plain.flops(), dual.flops() / 2.0, "{m}×{n}×{k}");
    }
}
