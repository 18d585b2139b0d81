//! The sm_100f kernels' tile arithmetic, emulated on the host (no B200 here): for every tile a
//! grouped launch deals ([`GroupTileWalk`]), what the TMA lane copies (tensor-map rows from
//! [`TilePlace`], zeros past a map's rows or K; the scale atoms stage by stage as `stage_mmas`
//! copies them), which atom rows the MMAs read (B scales from the `gate_column` / `up_column`
//! TMEM column offset), and what the epilogue stores (masked by `rows` and `columns`), against
//! the CPU reference under the task tolerance. Every output the groups own must be written once
//! and nothing else. The dense dual GEMM's and GEMM's [`TilePlace::dense`] is checked the same
//! way.
//!
//! What this does not cover: the pipeline (barriers, phases), the instruction and descriptor
//! encodings (ptxas/SASS and the descriptor tests do), and the preparation pass's device code
//! (its descriptors are written here by the rule it implements; it runs on Hopper too).

use half::f16;
use nvfp4::codec::{e2m1_to_f32, e4m3_to_f32};
use nvfp4::grouped::ContiguousTokens;
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{Distribution, NvFp4Matrix};
use nvfp4_kernel::grouped::{GroupDesc, group_schedule};
use nvfp4_kernel::layout::{ATOM_BYTES, BlockedScales};
use nvfp4_kernel::schedule::{GroupSchedule, GroupTileWalk};
use nvfp4_kernel::sm100::config::{K_PER_MMA, K_PER_STAGE, SCALE_BYTES, TILE_M, Tile, TilePlace, stage_mmas};
use nvfp4_kernel::sm100::registry::{TILES, tile_for_shape};

/// Packed fp4 rows as a tensor map sees them: zeros past `rows` and past K.
struct Map<'a> {
    data: &'a [u8],
    rows: usize,
    k: usize,
}

impl Map<'_> {
    fn value(&self, row: usize, col: usize) -> f32 {
        if row >= self.rows || col >= self.k {
            return 0.0;
        }
        let byte = self.data[row * self.k / 2 + col / 2];
        e2m1_to_f32(if col.is_multiple_of(2) {
            byte & 0xF
        } else {
            byte >> 4
        })
    }
}

/// One operand of a tile: its map, its scale buffer and the byte offset of the tile's first atom
/// (stage 0, K-block 0), and the TMEM column offset its MMA reads scales from.
struct Operand<'a> {
    map: Map<'a>,
    row: usize,
    scales: &'a [u8],
    atoms: usize,
    column: u32,
}

impl Operand<'_> {
    /// Element `(i, col)` of the tile times its scale, reading scales the way the kernel does:
    /// stage `s` copies `stage_mmas` atoms from `atoms + s · SCALE_BYTES`, and the MMA reads
    /// tile row `i`'s scales from atom row `32 · column + i`.
    fn scaled(&self, i: usize, col: usize, k: u32) -> f32 {
        let (stage, mma) = (col as u32 / K_PER_STAGE, (col as u32 % K_PER_STAGE) / K_PER_MMA);
        assert!(
            mma < stage_mmas(k, stage),
            "K-block {col} outside the copied atoms"
        );
        let atom_row = 32 * self.column as usize + i;
        assert!(atom_row < 128, "tile rows straddle a scale atom");
        let atom = self.atoms + (stage * SCALE_BYTES) as usize + mma as usize * ATOM_BYTES;
        let within = (atom_row % 32) * 16 + (atom_row / 32) * 4 + (col % 64) / 16;
        self.map.value(self.row + i, col) * e4m3_to_f32(self.scales[atom + within])
    }
}

/// A matrix as an operand: its own map and scales.
fn of_matrix(m: &NvFp4Matrix, row: u32, atoms: usize, column: u32) -> Operand<'_> {
    Operand {
        map: Map {
            data: m.data(),
            rows: m.rows(),
            k: m.k(),
        },
        row: row as usize,
        scales: m.scales(),
        atoms,
        column,
    }
}

/// Emulates one tile and stores its outputs into `out` (`None`: not written yet).
#[allow(clippy::too_many_arguments)]
fn run_tile(
    a: &Operand,
    gate: &Operand,
    up: &Operand,
    place: &TilePlace,
    desc: &GroupDesc,
    tile: Tile,
    gated: bool,
    out: &mut [Option<f16>],
    out_base: usize,
) {
    let n = tile.n as usize;
    let k = desc.k;
    let product = |b: &Operand, r: usize, i: usize| -> f32 {
        (0..k as usize)
            .map(|col| a.scaled(r, col, k) * b.scaled(i, col, k))
            .sum()
    };
    for r in 0..TILE_M as usize {
        if r as u32 >= place.rows {
            continue;
        }
        for i in 0..n {
            let chunk = (i / 16 * 16) as u32;
            let mut store = |column: usize, value: f32| {
                let index = out_base + place.out + r * desc.ldc as usize + column;
                assert!(out[index].is_none(), "output {index} written twice");
                out[index] = Some(f16::from_f32(value));
            };
            let (g, u) = (product(gate, r, i), product(up, r, i));
            if gated {
                if chunk < place.columns {
                    store(i, reference::silu_mul(g * desc.alpha_gate, u * desc.alpha_up));
                }
            } else {
                if chunk < place.columns {
                    store(i, g * desc.alpha_gate);
                }
                if tile.n + chunk < place.columns {
                    store(n + i, u * desc.alpha_up);
                }
            }
        }
    }
}

/// The groups' schedule records as the preparation pass writes them for `tile`.
fn schedules(descs: &[GroupDesc], tile: Tile, gated: bool) -> Vec<GroupSchedule> {
    descs
        .iter()
        .map(|d| group_schedule(d.rows, d.n, d.k, TILE_M, tile.outputs(gated), K_PER_STAGE))
        .collect()
}

fn matrix(rows: usize, k: usize, global: f32, rng: &mut Rng) -> NvFp4Matrix {
    let m = random_matrix(rows, k, Distribution::Task, rng).unwrap();
    NvFp4Matrix::from_parts(rows, k, m.data().to_vec(), m.scales().to_vec(), Some(global)).unwrap()
}

fn stack(matrices: &[NvFp4Matrix]) -> (Vec<u8>, Vec<u8>) {
    (
        matrices.iter().flat_map(|m| m.data().iter().copied()).collect(),
        matrices.iter().flat_map(|m| m.scales().iter().copied()).collect(),
    )
}

/// Checks `out` (`None` where nothing was written) against the reference rows, and that no other
/// element was written.
fn check(out: &[Option<f16>], expected: &[(usize, Vec<f16>)], cols: usize, what: &str) {
    let mut owned = vec![false; out.len()];
    for (start, values) in expected {
        let got: Vec<f16> = out[*start..start + values.len()]
            .iter()
            .enumerate()
            .map(|(i, v)| v.unwrap_or_else(|| panic!("{what}: output {} not written", start + i)))
            .collect();
        let report = reference::check(&got, values, cols, TASK_TOLERANCE).unwrap();
        assert!(report.passed(), "{what}: {report}");
        owned[*start..start + values.len()]
            .iter_mut()
            .for_each(|o| *o = true);
    }
    for (i, v) in out.iter().enumerate() {
        assert!(
            owned[i] || v.is_none(),
            "{what}: element {i} written outside every group"
        );
    }
}

/// The contiguous convention: tokens of all groups in one A, stacked weights (`w13`
/// concatenated or separate), one C; run with 3 CTAs.
fn contiguous(rows: &[usize], n: usize, k: usize, gated: bool, concatenated: bool, tile: Tile) {
    let what = format!(
        "contiguous rows {rows:?} n {n} k {k} gated {gated} w13 {concatenated} tile {}",
        tile.n
    );
    let mut rng = Rng::new(7 + n as u64 + k as u64);
    let groups = rows.len();
    let tokens: Vec<Option<NvFp4Matrix>> = rows
        .iter()
        .map(|&m| (m > 0).then(|| matrix(m, k, 1.0, &mut rng)))
        .collect();
    let w1: Vec<NvFp4Matrix> = (0..groups)
        .map(|g| matrix(n, k, 0.5 + g as f32, &mut rng))
        .collect();
    let w3: Vec<NvFp4Matrix> = (0..groups)
        .map(|g| matrix(n, k, 1.5 - 0.25 * g as f32, &mut rng))
        .collect();
    let capacity = rows.iter().sum::<usize>() + 3;
    let packed = ContiguousTokens::new(
        &tokens.iter().map(|t| t.as_ref()).collect::<Vec<_>>(),
        k,
        capacity,
    )
    .unwrap();
    // Weight stacks: w13 is each group's w1 rows then its w3 rows, one scale layout of 2N rows.
    let (gate_stack, up_stack, weight_rows, up_row_offset) = if gated && concatenated {
        let w13: Vec<NvFp4Matrix> = w1
            .iter()
            .zip(&w3)
            .map(|(a, b)| {
                let data = [a.data(), b.data()].concat();
                let mut scales = vec![0u8; BlockedScales::new(2 * n, k).len()];
                let layout = BlockedScales::new(2 * n, k);
                for row in 0..2 * n {
                    for c in 0..k / 16 {
                        let source = if row < n {
                            a.scale_code(row, c)
                        } else {
                            b.scale_code(row - n, c)
                        };
                        scales[layout.offset(row, c)] = source.unwrap();
                    }
                }
                NvFp4Matrix::from_parts(2 * n, k, data, scales, None).unwrap()
            })
            .collect();
        let s = stack(&w13);
        (s.clone(), s, 2 * n, n as u32)
    } else if gated {
        (stack(&w1), stack(&w3), n, 0)
    } else {
        (stack(&w1), stack(&w1), n, 0)
    };
    let group_scale_bytes = BlockedScales::new(weight_rows, k).len();
    let a_layout = BlockedScales::new(packed.scale_rows, k);
    let descs: Vec<GroupDesc> = (0..groups)
        .map(|g| {
            let token_row = packed.row_offsets[g];
            let (alpha_gate, alpha_up) = (
                0.5 + g as f32,
                if gated {
                    1.5 - 0.25 * g as f32
                } else {
                    0.5 + g as f32
                },
            );
            GroupDesc {
                gate_scales: (g * group_scale_bytes) as u64,
                up_scales: (g * group_scale_bytes) as u64,
                out: token_row as u64 * n as u64,
                a_scales: a_layout.atom_offset(packed.scale_offsets[g] as usize / 128, 0) as u64,
                token_row,
                rows: packed.row_offsets[g + 1] - token_row,
                n: n as u32,
                k: k as u32,
                ldc: n as u32,
                weight_rows: weight_rows as u32,
                up_row_offset,
                weight_map_row: (g * weight_rows) as u32,
                alpha_gate,
                alpha_up,
                ..GroupDesc::default()
            }
        })
        .collect();
    let mut out = vec![None; capacity * n];
    let table = schedules(&descs, tile, gated);
    let ctas = 3;
    for cta in 0..ctas {
        for (g, local) in GroupTileWalk::new(&table[..], cta, ctas) {
            let desc = &descs[g as usize];
            let place = TilePlace::grouped(desc, table[g as usize].m_tiles, local, tile, gated);
            let operand = |data: &'static str, row: u32, atoms: usize, column: u32| {
                let (map_data, rows, scales, base) = match data {
                    "a" => (&packed.data[..], capacity, &packed.scales[..], desc.a_scales),
                    "gate" => (
                        &gate_stack.0[..],
                        groups * weight_rows,
                        &gate_stack.1[..],
                        desc.gate_scales,
                    ),
                    _ => (
                        &up_stack.0[..],
                        groups * weight_rows,
                        &up_stack.1[..],
                        desc.up_scales,
                    ),
                };
                Operand {
                    map: Map {
                        data: map_data,
                        rows,
                        k,
                    },
                    row: row as usize,
                    scales,
                    atoms: base as usize + atoms,
                    column,
                }
            };
            run_tile(
                &operand("a", place.a_row, place.a_atoms, 0),
                &operand("gate", place.gate_row, place.gate_atoms, place.gate_column),
                &operand("up", place.up_row, place.up_atoms, place.up_column),
                &place,
                desc,
                tile,
                gated,
                &mut out,
                desc.out as usize,
            );
        }
    }
    let expected: Vec<(usize, Vec<f16>)> = (0..groups)
        .filter_map(|g| {
            let a = tokens[g].as_ref()?;
            let with = |w: &NvFp4Matrix, alpha: f32| {
                NvFp4Matrix::from_parts(n, k, w.data().to_vec(), w.scales().to_vec(), Some(alpha)).unwrap()
            };
            let reference = if gated {
                reference::dual_gemm(
                    a,
                    &with(&w1[g], descs[g].alpha_gate),
                    &with(&w3[g], descs[g].alpha_up),
                )
            } else {
                reference::gemm(a, &with(&w1[g], descs[g].alpha_gate))
            };
            Some((descs[g].out as usize, reference.unwrap()))
        })
        .collect();
    check(&out, &expected, n, &what);
}

#[test]
fn grouped_tiles_of_the_contiguous_convention_read_and_write_what_the_reference_needs() {
    let rows = [130, 0, 7, 1];
    for gated in [true, false] {
        // N = 192: the narrow tile only (a plain tile's up half runs past N in the last atom).
        contiguous(&rows, 192, 320, gated, false, TILES[0]);
        // N = 256: both tiles.
        for tile in TILES {
            contiguous(&rows, 256, 320, gated, false, tile);
        }
    }
    // w13 concatenated: up rows N + n0 (192 + n0 sits 64 rows into an atom).
    contiguous(&rows, 192, 320, true, true, TILES[0]);
    contiguous(&rows, 256, 576, true, true, TILES[1]);
    // One group (the dense plain GEMM through the grouped kernels), K = 64.
    contiguous(&[300], 128, 64, false, false, TILES[0]);
}

#[test]
fn grouped_tiles_of_the_separate_convention_read_and_write_what_the_reference_needs() {
    // (rows, n, k) per group: N and K differ between groups; each group's own maps.
    let shapes = [
        (5usize, 64usize, 128usize),
        (200, 128, 320),
        (0, 192, 64),
        (129, 256, 576),
    ];
    for gated in [true, false] {
        for tile in TILES {
            if !shapes
                .iter()
                .all(|&(_, n, _)| tile.fits_grouped(gated, n as u32, 0))
            {
                continue;
            }
            let what = format!("separate gated {gated} tile {}", tile.n);
            let mut rng = Rng::new(11);
            let a: Vec<NvFp4Matrix> = shapes
                .iter()
                .map(|&(m, _, k)| matrix(m.max(1), k, 1.0, &mut rng))
                .collect();
            let w1: Vec<NvFp4Matrix> = shapes
                .iter()
                .map(|&(_, n, k)| matrix(n, k, 0.75, &mut rng))
                .collect();
            let w3: Vec<NvFp4Matrix> = shapes
                .iter()
                .map(|&(_, n, k)| matrix(n, k, 1.25, &mut rng))
                .collect();
            // Each group's C at its own offset of one output vector.
            let mut out_base = Vec::new();
            let mut total = 0;
            for &(m, n, _) in &shapes {
                out_base.push(total);
                total += m * n;
            }
            let descs: Vec<GroupDesc> = shapes
                .iter()
                .map(|&(m, n, k)| GroupDesc {
                    rows: m as u32,
                    n: n as u32,
                    k: k as u32,
                    ldc: n as u32,
                    weight_rows: n as u32,
                    alpha_gate: 0.75,
                    alpha_up: if gated { 1.25 } else { 0.75 },
                    ..GroupDesc::default()
                })
                .collect();
            let table = schedules(&descs, tile, gated);
            let mut out = vec![None; total];
            for (g, local) in GroupTileWalk::new(&table[..], 0, 1) {
                let (g, desc) = (g as usize, &descs[g as usize]);
                let place = TilePlace::grouped(desc, table[g].m_tiles, local, tile, gated);
                let up = if gated { &w3[g] } else { &w1[g] };
                let operand = |m, row, atoms, column| of_matrix(m, row, atoms, column);
                run_tile(
                    &operand(&a[g], place.a_row, place.a_atoms, 0),
                    &operand(&w1[g], place.gate_row, place.gate_atoms, place.gate_column),
                    &operand(up, place.up_row, place.up_atoms, place.up_column),
                    &place,
                    desc,
                    tile,
                    gated,
                    &mut out,
                    out_base[g],
                );
            }
            let expected: Vec<(usize, Vec<f16>)> = (0..shapes.len())
                .filter(|&g| shapes[g].0 > 0)
                .map(|g| {
                    let reference = if gated {
                        reference::dual_gemm(&a[g], &w1[g], &w3[g])
                    } else {
                        reference::gemm(&a[g], &w1[g])
                    };
                    (out_base[g], reference.unwrap())
                })
                .collect();
            // Groups of different N: check each against its own width.
            for (start, values) in &expected {
                let g = out_base.iter().position(|b| b == start).unwrap();
                check(
                    &out[*start..start + values.len()],
                    &[(0, values.clone())],
                    shapes[g].1,
                    &what,
                );
            }
            let owned: usize = expected.iter().map(|(_, v)| v.len()).sum();
            assert_eq!(out.iter().filter(|v| v.is_some()).count(), owned, "{what}");
        }
    }
}

#[test]
fn dense_tiles_read_and_write_what_the_reference_needs() {
    // The dual GEMM (gated) and the GEMM, whose tiles take twice the outputs from B: N an odd
    // multiple of 64 (the last plain tile's up half past N, inside the padded scale rows) and
    // M above 256 (the wide tile where N is a multiple of its outputs).
    for (m, n, k) in [
        (130usize, 192usize, 320usize),
        (7, 256, 64),
        (300, 256, 576),
        (300, 192, 320),
        (260, 512, 128),
        (300, 384, 64), // the wide tile for the dual GEMM only
        (1, 64, 192),
    ] {
        for gated in [true, false] {
            let tile = tile_for_shape(m as u32, n as u32, gated);
            let mut rng = Rng::new(3);
            let (a, b1, b2) = (
                matrix(m, k, 1.0, &mut rng),
                matrix(n, k, 0.5, &mut rng),
                matrix(n, k, 2.0, &mut rng),
            );
            // The operands' global scales (the plain GEMM's up half is B's again).
            let desc = GroupDesc {
                k: k as u32,
                ldc: n as u32,
                alpha_gate: 0.5,
                alpha_up: if gated { 2.0 } else { 0.5 },
                ..GroupDesc::default()
            };
            let up_matrix = if gated { &b2 } else { &b1 };
            let mut out = vec![None; m * n];
            for m_tile in 0..(m as u32).div_ceil(TILE_M) {
                for n_tile in 0..(n as u32).div_ceil(tile.outputs(gated)) {
                    let place = TilePlace::dense(m as u32, n as u32, k as u32, tile, m_tile, n_tile, gated);
                    let operand = |x, row, atoms, column| of_matrix(x, row, atoms, column);
                    run_tile(
                        &operand(&a, place.a_row, place.a_atoms, 0),
                        &operand(&b1, place.gate_row, place.gate_atoms, place.gate_column),
                        &operand(up_matrix, place.up_row, place.up_atoms, place.up_column),
                        &place,
                        &desc,
                        tile,
                        gated,
                        &mut out,
                        0,
                    );
                }
            }
            let expected = if gated {
                reference::dual_gemm(&a, &b1, &b2).unwrap()
            } else {
                reference::gemm(&a, &b1).unwrap()
            };
            let what = format!("dense {m} × {n} × {k}, gated {gated}, tile {}", tile.n);
            check(&out, &[(0, expected)], n, &what);
        }
    }
}

#[test]
fn grouped_tile_rule_keeps_every_b_tile_inside_one_scale_atom_and_the_padded_layout() {
    for n in (64..=1024).step_by(64) {
        for gated in [true, false] {
            for concatenated in [false, true] {
                let (weight_rows, offset) = if gated && concatenated { (2 * n, n) } else { (n, 0) };
                for tile in TILES {
                    if !tile.fits_grouped(gated, n, offset) {
                        assert!(tile.n > 64, "the narrow tile fits every shape");
                        continue;
                    }
                    let desc = GroupDesc {
                        rows: 1,
                        n,
                        k: 64,
                        ldc: n,
                        weight_rows,
                        up_row_offset: offset,
                        ..GroupDesc::default()
                    };
                    let n_tiles = n.div_ceil(tile.outputs(gated));
                    let padded_blocks = weight_rows.div_ceil(128);
                    for local in 0..n_tiles {
                        let place = TilePlace::grouped(&desc, 1, local, tile, gated);
                        for (row, column) in [
                            (place.gate_row, place.gate_column),
                            (place.up_row, place.up_column),
                        ] {
                            assert_eq!(row % 128, 32 * column, "n {n} tile {}", tile.n);
                            assert!(
                                32 * column + tile.n <= 128,
                                "straddles an atom: n {n} tile {}",
                                tile.n
                            );
                            assert!(row / 128 < padded_blocks, "past the padded scales: n {n}");
                        }
                    }
                }
            }
        }
    }
}

/// The dense dual GEMM's NVFP4 epilogue (`sm100::roles`, `store_nvfp4_chunk`), emulated: every
/// token lane of every tile stores, per 16-output chunk, 8 data bytes at `nvfp4_data_offset`
/// (tokens that exist, chunks whose outputs exist) and, every fourth chunk, a scale word at
/// `nvfp4_scale_word_offset` (zeros for padding rows). Every data byte of `m × n/2` and every
/// byte of the scale layout (padding included) must be written exactly once; each data store
/// must be its token's block, and each scale word its four blocks' scales in order.
#[test]
fn dense_nvfp4_epilogue_writes_every_data_and_scale_byte_once() {
    use nvfp4_kernel::sm100::config::{
        NVFP4_CHUNK, NVFP4_CHUNKS_PER_SCALE_WORD, nvfp4_data_offset, nvfp4_scale_word_offset,
    };
    for (m, n) in [
        (1u32, 64u32),
        (7, 256),
        (128, 192),
        (129, 128),
        (130, 192),
        (300, 256),
        (513, 64),
    ] {
        for tile in TILES.into_iter().chain([tile_for_shape(m, n, true)]) {
            let layout = BlockedScales::new(m as usize, n as usize);
            let (mut data, mut scales) = (vec![0u32; (m * n / 2) as usize], vec![0u32; layout.len()]);
            for m_tile in 0..m.div_ceil(TILE_M) {
                for n_tile in 0..n.div_ceil(tile.n) {
                    let place = TilePlace::dense(m, n, 64, tile, m_tile, n_tile, true);
                    let (m0, n0) = (place.a_row, place.gate_row);
                    for token in 0..TILE_M {
                        for chunk in 0..tile.n / NVFP4_CHUNK {
                            if NVFP4_CHUNK * chunk >= place.columns {
                                continue;
                            }
                            let (row, column) = (m0 + token, n0 + NVFP4_CHUNK * chunk);
                            if token < place.rows {
                                let at = nvfp4_data_offset(n, m0, n0, token, chunk);
                                assert_eq!(at, (row * n / 2 + column / 2) as usize, "{m}×{n}");
                                for byte in &mut data[at..at + 8] {
                                    *byte += 1;
                                }
                            }
                            if chunk % NVFP4_CHUNKS_PER_SCALE_WORD == NVFP4_CHUNKS_PER_SCALE_WORD - 1 {
                                let word = chunk / NVFP4_CHUNKS_PER_SCALE_WORD;
                                let Some(at) = nvfp4_scale_word_offset(m, n, m0, n0, token, word) else {
                                    continue;
                                };
                                let first_block =
                                    (n0 + NVFP4_CHUNK * NVFP4_CHUNKS_PER_SCALE_WORD * word) / 16;
                                for j in 0..4 {
                                    let block = (first_block + j) as usize;
                                    assert_eq!(
                                        layout.offset(row as usize, block),
                                        at + j as usize,
                                        "{m}×{n}"
                                    );
                                    scales[at + j as usize] += 1;
                                }
                            }
                        }
                    }
                }
            }
            let what = format!("{m} × {n}, tile {}", tile.n);
            assert!(
                data.iter().all(|&c| c == 1),
                "{what}: data bytes written {:?}",
                data.iter().max()
            );
            assert!(
                scales.iter().all(|&c| c == 1),
                "{what}: scale bytes written not once"
            );
        }
    }
}

/// The grouped dual GEMM's NVFP4 epilogue (contiguous convention): each group's tiles, placed
/// by `TilePlace::grouped` and located in their group by `TilePlace::in_group` as the kernel
/// does, write every data byte of the group's rows and every scale byte of its blocked layout
/// (padding rows of its last 128-row block included) exactly once, at the offsets the layout
/// gives, with tiles of every width and groups of 0 to 300 rows.
#[test]
fn grouped_nvfp4_epilogue_writes_every_data_and_scale_byte_of_each_group_once() {
    use nvfp4_kernel::sm100::config::{
        NVFP4_CHUNK, NVFP4_CHUNKS_PER_SCALE_WORD, nvfp4_data_offset, nvfp4_scale_word_offset,
    };
    let (rows, n) = ([5u32, 0, 130, 128, 300, 1], 192u32);
    for tile in TILES {
        let mut token_row = 0;
        for (g, &m) in rows.iter().enumerate() {
            let desc = GroupDesc {
                token_row,
                rows: m,
                n,
                k: 64,
                ldc: n,
                weight_rows: 2 * n,
                up_row_offset: n,
                weight_map_row: g as u32 * 2 * n,
                ..GroupDesc::default()
            };
            token_row += m;
            let layout = BlockedScales::new(m as usize, n as usize);
            let (mut data, mut scales) = (vec![0u32; (m * n / 2) as usize], vec![0u32; layout.len()]);
            let (m_tiles, n_tiles) = (m.div_ceil(TILE_M), n.div_ceil(tile.n));
            for local in 0..m_tiles * n_tiles {
                let place = TilePlace::grouped(&desc, m_tiles, local, tile, true);
                let (m0, n0) = place.in_group(&desc);
                assert_eq!(
                    (m0, n0),
                    (local % m_tiles * TILE_M, local / m_tiles * tile.n),
                    "group {g}, tile {local}"
                );
                for token in 0..TILE_M {
                    for chunk in 0..tile.n / NVFP4_CHUNK {
                        if NVFP4_CHUNK * chunk >= place.columns {
                            continue;
                        }
                        if token < place.rows {
                            let at = nvfp4_data_offset(n, m0, n0, token, chunk);
                            for byte in &mut data[at..at + 8] {
                                *byte += 1;
                            }
                        }
                        if chunk % NVFP4_CHUNKS_PER_SCALE_WORD == NVFP4_CHUNKS_PER_SCALE_WORD - 1 {
                            let word = chunk / NVFP4_CHUNKS_PER_SCALE_WORD;
                            if let Some(at) = nvfp4_scale_word_offset(m, n, m0, n0, token, word) {
                                for byte in &mut scales[at..at + 4] {
                                    *byte += 1;
                                }
                            }
                        }
                    }
                }
            }
            let what = format!("group {g} of {m} rows, tile {}", tile.n);
            assert!(
                data.iter().all(|&c| c == 1),
                "{what}: data bytes not written once"
            );
            assert!(
                scales.iter().all(|&c| c == 1),
                "{what}: scale bytes not written once"
            );
        }
    }
}
