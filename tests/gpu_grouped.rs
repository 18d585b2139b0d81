//! The grouped GEMM, the grouped dual GEMM and the dense plain GEMM on the GPU against the CPU
//! reference (task tolerance), in both input conventions, with outputs poisoned with NaN before
//! every launch (rows no group owns must stay poisoned). Skipped with a printed reason without
//! a GPU. On compute capability 10.x they run the sm_100f kernels, which have never run (no B200
//! here).

mod common;

use std::time::Instant;

use cudarc::driver::{CudaSlice, DevicePtr};
use half::f16;
use nvfp4::gemm::GemmShape;
use nvfp4::gpu::{DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Ref};
use nvfp4::grouped::{
    ContiguousInputs, ContiguousTokens, GroupedLayout, GroupedOp, GroupedPlan, SeparateGroup, UpWeights,
};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{BlockedScales, Distribution, Error, NvFp4Matrix};

/// A supported GPU (both architectures have grouped kernels), or a printed reason.
fn grouped_gpu_or_skip() -> Option<Gpu> {
    common::gpu_or_skip()
}

/// One grouped problem on the host: per group its tokens (`None`: no rows) and weights, each
/// with a global scale that the launch's α carries.
struct Groups {
    a: Vec<Option<NvFp4Matrix>>,
    gate: Vec<NvFp4Matrix>,
    up: Vec<NvFp4Matrix>,
    n: Vec<usize>,
    k: Vec<usize>,
}

/// `rows[g]` tokens, `shapes[g] = (n, k)` per group; with α ≠ 1 on every product (a global
/// scale on each weight matrix, and on the tokens for the full-range inputs).
fn random_groups(
    rows: &[usize],
    shapes: &[(usize, usize)],
    dual: bool,
    distribution: Distribution,
    seed: u64,
) -> Groups {
    let mut rng = Rng::new(seed);
    let with_global = |m: NvFp4Matrix, alpha: f32| {
        let global = m.global_scale().unwrap_or(1.0) * alpha;
        NvFp4Matrix::from_parts(
            m.rows(),
            m.k(),
            m.data().to_vec(),
            m.scales().to_vec(),
            Some(global),
        )
        .unwrap()
    };
    let mut groups = Groups {
        a: Vec::new(),
        gate: Vec::new(),
        up: Vec::new(),
        n: Vec::new(),
        k: Vec::new(),
    };
    for (g, (&m, &(n, k))) in rows.iter().zip(shapes).enumerate() {
        let alpha = 0.5 + 0.25 * (g % 4) as f32;
        groups
            .a
            .push((m > 0).then(|| random_matrix(m, k, distribution, &mut rng).unwrap()));
        groups.gate.push(with_global(
            random_matrix(n, k, distribution, &mut rng).unwrap(),
            alpha,
        ));
        if dual {
            groups.up.push(with_global(
                random_matrix(n, k, distribution, &mut rng).unwrap(),
                1.5 - alpha / 2.0,
            ));
        }
        groups.n.push(n);
        groups.k.push(k);
    }
    groups
}

impl Groups {
    fn dual(&self) -> bool {
        !self.up.is_empty()
    }

    fn op(&self) -> GroupedOp {
        if self.dual() {
            GroupedOp::DualGemm
        } else {
            GroupedOp::Gemm
        }
    }

    /// The CPU reference of group `g` (`None` without rows).
    fn reference(&self, g: usize) -> Option<Vec<f16>> {
        let a = self.a[g].as_ref()?;
        Some(if self.dual() {
            reference::dual_gemm(a, &self.gate[g], &self.up[g]).unwrap()
        } else {
            reference::gemm(a, &self.gate[g]).unwrap()
        })
    }

    fn rows(&self, g: usize) -> usize {
        self.a[g].as_ref().map_or(0, |a| a.rows())
    }
}

fn poisoned(gpu: &Gpu, len: usize) -> CudaSlice<f16> {
    gpu.stream().clone_htod(&vec![f16::NAN; len]).unwrap()
}

/// Device buffers of a contiguous launch (see `ContiguousInputs`).
struct Contiguous {
    a: CudaSlice<u8>,
    a_scales: CudaSlice<u8>,
    row_offsets: CudaSlice<u32>,
    scale_offsets: CudaSlice<u32>,
    gate: nvfp4::grouped::GroupedWeights,
    up: Option<nvfp4::grouped::GroupedWeights>,
    alpha_gate: CudaSlice<f32>,
    alpha_up: CudaSlice<f32>,
    tokens: ContiguousTokens,
    dual: bool,
}

impl Contiguous {
    fn upload(gpu: &Gpu, groups: &Groups, capacity: usize, up: UpWeights) -> Self {
        let k = groups.k[0];
        let a_refs: Vec<Option<&NvFp4Matrix>> = groups.a.iter().map(|a| a.as_ref()).collect();
        let tokens = ContiguousTokens::new(&a_refs, k, capacity).unwrap();
        let global = |m: &NvFp4Matrix| m.global_scale().unwrap_or(1.0);
        let token_global = |g: usize| groups.a[g].as_ref().map_or(1.0, global);
        let alpha_gate: Vec<f32> = (0..groups.gate.len())
            .map(|g| token_global(g) * global(&groups.gate[g]))
            .collect();
        let alpha_up: Vec<f32> = (0..groups.gate.len())
            .map(|g| groups.up.get(g).map_or(1.0, |up| token_global(g) * global(up)))
            .collect();
        let (gate, up) = match (groups.dual(), up) {
            (true, UpWeights::Concatenated) => {
                // w13: the gate rows, then the up rows, in one matrix of 2N rows per group.
                let w13: Vec<NvFp4Matrix> = groups
                    .gate
                    .iter()
                    .zip(&groups.up)
                    .map(|(g, u)| {
                        let data = [g.data(), u.data()].concat();
                        let plain = [g.plain_scales(), u.plain_scales()].concat();
                        NvFp4Matrix::from_plain_scales(2 * g.rows(), k, data, &plain, None).unwrap()
                    })
                    .collect();
                (gpu.upload_grouped_weights(&w13).unwrap(), None)
            }
            (true, UpWeights::Separate) => (
                gpu.upload_grouped_weights(&groups.gate).unwrap(),
                Some(gpu.upload_grouped_weights(&groups.up).unwrap()),
            ),
            (false, _) => (gpu.upload_grouped_weights(&groups.gate).unwrap(), None),
        };
        let stream = gpu.stream();
        Self {
            a: stream.clone_htod(&tokens.data).unwrap(),
            a_scales: stream.clone_htod(&tokens.scales).unwrap(),
            row_offsets: stream.clone_htod(&tokens.row_offsets).unwrap(),
            scale_offsets: stream.clone_htod(&tokens.scale_offsets).unwrap(),
            gate,
            up,
            alpha_gate: stream.clone_htod(&alpha_gate).unwrap(),
            alpha_up: stream.clone_htod(&alpha_up).unwrap(),
            tokens,
            dual: groups.dual(),
        }
    }

    fn inputs(&self) -> ContiguousInputs<'_> {
        ContiguousInputs {
            a: &self.a,
            a_scales: &self.a_scales,
            row_offsets: &self.row_offsets,
            scale_offsets: &self.scale_offsets,
            gate: self.gate.view(),
            up: self.up.as_ref().map(|u| u.view()),
            alpha_gate: Some(&self.alpha_gate),
            alpha_up: self.dual.then_some(&self.alpha_up),
            scale: 1.0,
        }
    }

    fn layout(&self, groups: &Groups, up: UpWeights) -> GroupedLayout {
        GroupedLayout::Contiguous {
            groups: groups.gate.len(),
            rows: self.tokens.rows,
            scale_rows: self.tokens.scale_rows,
            n: groups.n[0],
            k: groups.k[0],
            up,
        }
    }
}

/// Checks the contiguous output `c` (`rows × n`) against the reference, group by group, and
/// that rows past the last group are untouched (NaN). Returns failure descriptions.
fn check_contiguous(name: &str, groups: &Groups, tokens: &ContiguousTokens, c: &[f16]) -> Vec<String> {
    let n = groups.n[0];
    let mut failures = Vec::new();
    for g in 0..groups.gate.len() {
        let Some(want) = groups.reference(g) else { continue };
        let row0 = tokens.row_offsets[g] as usize;
        let got = &c[row0 * n..(row0 + groups.rows(g)) * n];
        let report = reference::check(got, &want, n, TASK_TOLERANCE).unwrap();
        if !report.passed() {
            failures.push(format!("{name}, group {g} ({} rows): {report}", groups.rows(g)));
        }
    }
    let end = *tokens.row_offsets.last().unwrap() as usize;
    if let Some(i) = c[end * n..].iter().position(|v| !v.is_nan()) {
        failures.push(format!(
            "{name}: row {} past the last group was written",
            end + i / n
        ));
    }
    failures
}

/// Runs `groups` in the contiguous convention (capacity `capacity` rows) and checks it.
fn run_contiguous(gpu: &Gpu, name: &str, groups: &Groups, capacity: usize, up: UpWeights) -> Vec<String> {
    run_contiguous_planned(gpu, name, groups, capacity, up, None)
}

/// [`run_contiguous`] with a plan for groups of about `tokens_per_group` rows.
fn run_contiguous_planned(
    gpu: &Gpu,
    name: &str,
    groups: &Groups,
    capacity: usize,
    up: UpWeights,
    tokens_per_group: Option<usize>,
) -> Vec<String> {
    let start = Instant::now();
    let inputs = Contiguous::upload(gpu, groups, capacity, up);
    let plan = gpu
        .plan_grouped(groups.op(), inputs.layout(groups, up), tokens_per_group)
        .unwrap();
    let mut c = poisoned(gpu, capacity * groups.n[0]);
    plan.launch(gpu, &inputs.inputs(), &mut c).unwrap();
    plan.device_status(gpu).unwrap();
    let c = gpu.stream().clone_dtoh(&c).unwrap();
    let failures = check_contiguous(name, groups, &inputs.tokens, &c);
    println!(
        "{name}: contiguous, {} {:?}, {} ({:.1} s)",
        if plan.uses_decode_kernel() {
            "decode-size kernel"
        } else {
            "tile"
        },
        plan.tile_and_grid(),
        if failures.is_empty() { "pass" } else { "FAIL" },
        start.elapsed().as_secs_f64()
    );
    failures
}

/// Runs `groups` in the separate convention and checks every group's output.
fn run_separate(gpu: &Gpu, name: &str, groups: &Groups) -> Vec<String> {
    let start = Instant::now();
    let upload = |m: &NvFp4Matrix| gpu.upload(m).unwrap();
    let a: Vec<Option<DeviceNvFp4Matrix>> = groups.a.iter().map(|a| a.as_ref().map(upload)).collect();
    let gate: Vec<DeviceNvFp4Matrix> = groups.gate.iter().map(upload).collect();
    let up: Vec<DeviceNvFp4Matrix> = groups.up.iter().map(upload).collect();
    let mut c: Vec<Option<CudaSlice<f16>>> = (0..gate.len())
        .map(|g| (groups.rows(g) > 0).then(|| poisoned(gpu, groups.rows(g) * groups.n[g])))
        .collect();
    let rows: usize = (0..gate.len()).map(|g| groups.rows(g)).sum();
    let layout = GroupedLayout::Separate {
        groups: gate.len(),
        rows: rows.max(1),
        max_k: *groups.k.iter().max().unwrap(),
    };
    let plan = gpu.plan_grouped(groups.op(), layout, None).unwrap();
    let stream = gpu.stream();
    let list: Vec<SeparateGroup> = c
        .iter_mut()
        .enumerate()
        .map(|(g, c)| SeparateGroup {
            a: a[g].as_ref().map(|a| a.view(stream)),
            gate: gate[g].view(stream),
            up: up.get(g).map(|u| u.view(stream)),
            c: c.as_mut().map(|c| F16Mut::of(c, stream)),
        })
        .collect();
    plan.launch_separate(gpu, &list).unwrap();
    drop(list);
    let mut failures = Vec::new();
    for (g, c) in c.iter().enumerate() {
        let (Some(c), Some(want)) = (c, groups.reference(g)) else {
            continue;
        };
        let got = gpu.stream().clone_dtoh(c).unwrap();
        let report = reference::check(&got, &want, groups.n[g], TASK_TOLERANCE).unwrap();
        if !report.passed() {
            failures.push(format!("{name}, group {g} ({} rows): {report}", groups.rows(g)));
        }
    }
    println!(
        "{name}: separate, tile {:?}, {} ({:.1} s)",
        plan.tile_and_grid(),
        if failures.is_empty() { "pass" } else { "FAIL" },
        start.elapsed().as_secs_f64()
    );
    failures
}

fn assert_no_failures(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The four benchmark cases of the public grouped-GEMM problem (gpu-mode/reference-kernels,
/// nvfp4_group_gemm): (rows per group, N, K).
const BENCHMARK_CASES: [(&[usize], usize, usize); 4] = [
    (&[80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168),
    (&[40, 76, 168, 72, 164, 148, 196, 160], 7168, 2048),
    (&[192, 320], 3072, 4096),
    (&[128, 384], 4096, 1536),
];

fn grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let mut failures = Vec::new();
    for (case, &(rows, n, k)) in BENCHMARK_CASES.iter().enumerate() {
        let shapes = vec![(n, k); rows.len()];
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let groups = random_groups(rows, &shapes, false, distribution, 11 + case as u64);
            let name = format!("case {} {distribution:?}", case + 1);
            let capacity = rows.iter().sum::<usize>() + 17;
            failures.extend(run_contiguous(
                &gpu,
                &name,
                &groups,
                capacity,
                UpWeights::Separate,
            ));
            failures.extend(run_separate(&gpu, &name, &groups));
        }
    }
    assert_no_failures(failures);
}

fn separate_convention_takes_n_and_k_that_differ_between_groups() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let rows = [7, 129, 1, 64, 33];
    let shapes = [(512, 2880), (192, 256), (1024, 64), (64, 7168), (4096, 576)];
    let mut failures = Vec::new();
    for dual in [false, true] {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let groups = random_groups(&rows, &shapes, dual, distribution, 5);
            failures.extend(run_separate(
                &gpu,
                &format!("mixed N and K, dual {dual}, {distribution:?}"),
                &groups,
            ));
        }
    }
    assert_no_failures(failures);
}

fn grouped_dual_gemm_matches_the_reference_on_moe_layers_with_separate_and_concatenated_up_weights() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    // Qwen3-30B-A3B-like (K = 2048, I = 768) and gpt-oss-like (K = 2880, I = 2880 cut to 1536)
    // layers with 16 experts and skewed routings.
    let layers: [(&[usize], usize, usize); 2] = [
        (&[3, 0, 17, 1, 0, 64, 5, 2, 0, 9, 130, 4, 0, 1, 7, 2], 768, 2048),
        (&[40, 0, 2, 7, 1, 0, 0, 21, 3, 129, 0, 5, 2, 0, 11, 1], 1536, 2880),
    ];
    let mut failures = Vec::new();
    for (layer, &(rows, n, k)) in layers.iter().enumerate() {
        let shapes = vec![(n, k); rows.len()];
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let groups = random_groups(rows, &shapes, true, distribution, 40 + layer as u64);
            let capacity = rows.iter().sum::<usize>() + 3;
            for up in [UpWeights::Separate, UpWeights::Concatenated] {
                let name = format!("layer {layer} {distribution:?} {up:?}");
                failures.extend(run_contiguous(&gpu, &name, &groups, capacity, up));
            }
            failures.extend(run_separate(
                &gpu,
                &format!("layer {layer} {distribution:?}"),
                &groups,
            ));
        }
    }
    assert_no_failures(failures);
}

fn groups_without_rows_first_middle_and_last_and_odd_sizes() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    // The last routing has more groups than a separate launch carries in its preparation
    // pass's parameters (`PARAMETER_GROUPS`): its table is uploaded.
    let routings: [&[usize]; 5] = [
        &[0, 1, 7, 129],
        &[1, 0, 0, 7, 0, 129],
        &[129, 7, 1, 0],
        &[0, 0, 5, 0, 0],
        &[0, 3, 0, 1, 17, 0, 2, 9, 0, 1, 33],
    ];
    assert!(routings[4].len() > nvfp4_kernel::grouped::PARAMETER_GROUPS);
    let mut failures = Vec::new();
    for (r, rows) in routings.iter().enumerate() {
        let shapes = vec![(320, 576); rows.len()];
        for dual in [false, true] {
            let groups = random_groups(rows, &shapes, dual, Distribution::FullRange, 70 + r as u64);
            let name = format!("routing {rows:?}, dual {dual}");
            let capacity = rows.iter().sum::<usize>() + 64;
            failures.extend(run_contiguous(
                &gpu,
                &name,
                &groups,
                capacity,
                UpWeights::Separate,
            ));
            failures.extend(run_separate(&gpu, &name, &groups));
        }
    }
    assert_no_failures(failures);
}

/// The grouped decode-size kernel (Hopper, planned for groups of up to 16 tokens) on any
/// routing: groups of 0 to 130 rows (one and two token tiles, several 16-token passes), K with a
/// partial last step and K in several windows, N ending half-way through a plain CTA's 128
/// outputs, both up-weight forms, full-range inputs.
fn grouped_decode_kernel_matches_the_reference_on_groups_of_any_size() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let routings: [(&[usize], usize, usize); 4] = [
        (&[1, 0, 8, 9, 16, 17, 3, 0], 768, 2048),
        (&[40, 2, 0, 130, 5, 1], 320, 2880),
        (&[7, 1, 0, 2, 15], 1024, 7168),
        (&[3, 33, 1], 192, 64),
    ];
    let mut failures = Vec::new();
    for (r, &(rows, n, k)) in routings.iter().enumerate() {
        let shapes = vec![(n, k); rows.len()];
        for dual in [false, true] {
            let groups = random_groups(rows, &shapes, dual, Distribution::FullRange, 90 + r as u64);
            let capacity = rows.iter().sum::<usize>() + 9;
            let ups: &[UpWeights] = if dual {
                &[UpWeights::Separate, UpWeights::Concatenated]
            } else {
                &[UpWeights::Separate]
            };
            for &up in ups {
                let name = format!("decode routing {rows:?}, {n} × {k}, dual {dual}, {up:?}");
                failures.extend(run_contiguous_planned(
                    &gpu,
                    &name,
                    &groups,
                    capacity,
                    up,
                    Some(4),
                ));
            }
        }
    }
    assert_no_failures(failures);
}

fn moe_decode_with_256_groups_of_0_to_5_rows_and_skewed_prefill_sizes() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let mut rng = Rng::new(256);
    let decode: Vec<usize> = (0..256).map(|_| (rng.next_u64() % 6) as usize).collect();
    let skewed = [300, 2, 2, 2, 2, 2, 2, 2];
    let mut failures = Vec::new();
    for (name, rows, (n, k)) in [
        ("256 groups of 0–5 rows", &decode[..], (256, 512)),
        ("one of 300, seven of 2", &skewed[..], (1024, 2048)),
    ] {
        let shapes = vec![(n, k); rows.len()];
        for dual in [false, true] {
            let groups = random_groups(rows, &shapes, dual, Distribution::Task, 9);
            let capacity = rows.iter().sum::<usize>();
            failures.extend(run_contiguous(
                &gpu,
                &format!("{name}, dual {dual}"),
                &groups,
                capacity,
                UpWeights::Separate,
            ));
        }
    }
    assert_no_failures(failures);
}

fn one_group_and_the_dense_gemm_match_the_reference() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let mut failures = Vec::new();
    for (m, n, k) in [
        (1, 2880, 2880),
        (16, 7168, 2048),
        (256, 4096, 1536),
        (129, 192, 64),
        (512, 2944, 7168),
    ] {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let mut rng = Rng::new((m + n + k) as u64);
            let a = random_matrix(m, k, distribution, &mut rng).unwrap();
            let b = random_matrix(n, k, distribution, &mut rng).unwrap();
            let plan = gpu.plan_gemm(GemmShape { m, n, k }).unwrap();
            let mut c = poisoned(&gpu, m * n);
            plan.launch(&gpu, &gpu.upload(&a).unwrap(), &gpu.upload(&b).unwrap(), &mut c)
                .unwrap();
            let got = gpu.stream().clone_dtoh(&c).unwrap();
            let report =
                reference::check(&got, &reference::gemm(&a, &b).unwrap(), n, TASK_TOLERANCE).unwrap();
            println!("GEMM {m} × {n} × {k} {distribution:?}: {report}");
            if !report.passed() {
                failures.push(format!("GEMM {m}×{n}×{k} {distribution:?}: {report}"));
            }
            let groups = Groups {
                a: vec![Some(a)],
                gate: vec![b],
                up: Vec::new(),
                n: vec![n],
                k: vec![k],
            };
            failures.extend(run_contiguous(
                &gpu,
                &format!("one group {m}×{n}×{k}"),
                &groups,
                m,
                UpWeights::Separate,
            ));
        }
    }
    assert_no_failures(failures);
}

fn same_inputs_give_bitwise_identical_outputs() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let rows = [80, 176, 0, 72, 3];
    let groups = random_groups(&rows, &[(1024, 2048); 5], true, Distribution::FullRange, 3);
    let capacity = rows.iter().sum();
    let inputs = Contiguous::upload(&gpu, &groups, capacity, UpWeights::Separate);
    let plan = gpu
        .plan_grouped(
            GroupedOp::DualGemm,
            inputs.layout(&groups, UpWeights::Separate),
            None,
        )
        .unwrap();
    let run = || {
        let mut c = poisoned(&gpu, capacity * 1024);
        plan.launch(&gpu, &inputs.inputs(), &mut c).unwrap();
        gpu.stream().clone_dtoh(&c).unwrap()
    };
    let (first, second) = (run(), run());
    assert!(
        first.iter().zip(&second).all(|(x, y)| x.to_bits() == y.to_bits()),
        "two runs differ"
    );
}

fn a_cuda_graph_captured_once_replays_with_new_device_side_offsets() {
    let Some(mut gpu) = grouped_gpu_or_skip() else {
        return;
    };
    // The legacy default stream cannot be captured: work on a stream of our own, with cudarc's
    // cross-stream event tracking off (everything is ordered on that one stream).
    let context = gpu.stream().context().clone();
    let stream = context.new_stream().unwrap();
    // SAFETY: all work of this test is on one stream.
    unsafe { context.disable_event_tracking() };
    gpu.set_stream(stream.clone()).unwrap();
    let (n, k, capacity) = (512, 1024, 96);
    let routings: [&[usize]; 3] = [&[10, 0, 40, 6], &[0, 90, 1, 0], &[24, 24, 24, 24]];
    // The same experts for every routing; new tokens for each.
    let experts = random_groups(routings[0], &[(n, k); 4], true, Distribution::Task, 100);
    let problems: Vec<Groups> = routings
        .iter()
        .enumerate()
        .map(|(i, rows)| {
            let tokens = random_groups(rows, &[(n, k); 4], false, Distribution::Task, 200 + i as u64);
            Groups {
                a: tokens.a,
                gate: experts.gate.clone(),
                up: experts.up.clone(),
                n: experts.n.clone(),
                k: experts.k.clone(),
            }
        })
        .collect();
    // One set of device buffers, captured once; each routing's tokens and offsets are copied
    // into them before a replay.
    let mut buffers = Contiguous::upload(&gpu, &problems[0], capacity, UpWeights::Separate);
    let plan: GroupedPlan = gpu
        .plan_grouped(
            GroupedOp::DualGemm,
            buffers.layout(&problems[0], UpWeights::Separate),
            None,
        )
        .unwrap();
    let mut c = poisoned(&gpu, capacity * n);
    // A first launch outside the capture (Blackwell makes its tensor maps for these buffers).
    plan.launch(&gpu, &buffers.inputs(), &mut c).unwrap();
    stream.synchronize().unwrap();
    stream
        .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    plan.launch(&gpu, &buffers.inputs(), &mut c).unwrap();
    let graph = stream
        .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    let mut failures = Vec::new();
    for (i, groups) in problems.iter().enumerate() {
        let a_refs: Vec<Option<&NvFp4Matrix>> = groups.a.iter().map(|a| a.as_ref()).collect();
        let tokens = ContiguousTokens::new(&a_refs, k, capacity).unwrap();
        stream.memcpy_htod(&tokens.data, &mut buffers.a).unwrap();
        stream.memcpy_htod(&tokens.scales, &mut buffers.a_scales).unwrap();
        stream
            .memcpy_htod(&tokens.row_offsets, &mut buffers.row_offsets)
            .unwrap();
        stream
            .memcpy_htod(&tokens.scale_offsets, &mut buffers.scale_offsets)
            .unwrap();
        stream.memcpy_htod(&vec![f16::NAN; capacity * n], &mut c).unwrap();
        graph.launch().unwrap();
        let out = stream.clone_dtoh(&c).unwrap();
        failures.extend(check_contiguous(
            &format!("replay {i} {:?}", routings[i]),
            groups,
            &tokens,
            &out,
        ));
    }
    assert_no_failures(failures);
}

fn invalid_device_offsets_write_nothing_and_report_the_rule() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let rows = [16, 16, 16];
    let groups = random_groups(&rows, &[(256, 256); 3], false, Distribution::Task, 1);
    let mut inputs = Contiguous::upload(&gpu, &groups, 64, UpWeights::Separate);
    // The preparation pass before the tiled kernel and before the decode-size kernel.
    for tokens_per_group in [None, Some(4)] {
        let plan = gpu
            .plan_grouped(
                GroupedOp::Gemm,
                inputs.layout(&groups, UpWeights::Separate),
                tokens_per_group,
            )
            .unwrap();
        assert_eq!(plan.uses_decode_kernel(), tokens_per_group.is_some());
        let cases: [(&[u32], &[u32], &str, usize); 4] = [
            (&[0, 16, 8, 48], &[0, 128, 256, 384], "decrease", 1),
            (&[0, 16, 32, 65], &[0, 128, 256, 384], "exceed", 2),
            (&[0, 16, 32, 48], &[0, 100, 256, 384], "multiples of 128", 1),
            (&[0, 16, 32, 48], &[0, 128, 256, 900], "scale rows", 2),
        ];
        for (row_offsets, scale_offsets, rule, bad_group) in cases {
            gpu.stream()
                .memcpy_htod(row_offsets, &mut inputs.row_offsets)
                .unwrap();
            gpu.stream()
                .memcpy_htod(scale_offsets, &mut inputs.scale_offsets)
                .unwrap();
            let mut c = poisoned(&gpu, 64 * 256);
            plan.launch(&gpu, &inputs.inputs(), &mut c).unwrap();
            let case = format!("{rule}, tokens per group {tokens_per_group:?}");
            match plan.device_status(&gpu) {
                Err(Error::DeviceOffsets { rule: r, group }) => {
                    assert!(r.contains(rule), "{case}: got {r}");
                    assert_eq!(group, bad_group, "{case}: the first bad group");
                }
                other => panic!("{case}: expected a device-offsets error, got {other:?}"),
            }
            let c = gpu.stream().clone_dtoh(&c).unwrap();
            assert!(c.iter().all(|v| v.is_nan()), "{case}: C was written");
        }
        // Valid offsets again: the verdict is the new launch's.
        gpu.stream()
            .memcpy_htod(&[0u32, 16, 32, 48], &mut inputs.row_offsets)
            .unwrap();
        gpu.stream()
            .memcpy_htod(&[0u32, 128, 256, 384], &mut inputs.scale_offsets)
            .unwrap();
        let mut c = poisoned(&gpu, 64 * 256);
        plan.launch(&gpu, &inputs.inputs(), &mut c).unwrap();
        plan.device_status(&gpu).unwrap();
    }
}

fn launches_reject_inputs_that_do_not_match_the_plan() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let groups = random_groups(&[8, 8], &[(256, 256); 2], true, Distribution::Task, 2);
    let inputs = Contiguous::upload(&gpu, &groups, 16, UpWeights::Separate);
    let plan = gpu
        .plan_grouped(
            GroupedOp::DualGemm,
            inputs.layout(&groups, UpWeights::Separate),
            None,
        )
        .unwrap();
    let mut short = poisoned(&gpu, 16 * 256 - 8);
    assert!(matches!(
        plan.launch(&gpu, &inputs.inputs(), &mut short),
        Err(Error::BufferLength { arg: "c", .. })
    ));
    let mut c = poisoned(&gpu, 16 * 256);
    let mut missing_up = inputs.inputs();
    missing_up.up = None;
    assert!(matches!(
        plan.launch(&gpu, &missing_up, &mut c),
        Err(Error::InvalidArgument { arg: "up", .. })
    ));
    // The separate convention's gate and up global scales whose product (times the sm_90a
    // operand rescale) passes the SiLU product's limit of 2^126: refused before the launch, C
    // untouched.
    let huge = |m: &NvFp4Matrix| {
        let m = NvFp4Matrix::from_parts(
            m.rows(),
            m.k(),
            m.data().to_vec(),
            m.scales().to_vec(),
            Some(1e30),
        )
        .unwrap();
        gpu.upload(&m).unwrap()
    };
    let a: Vec<DeviceNvFp4Matrix> = groups
        .a
        .iter()
        .map(|a| gpu.upload(a.as_ref().unwrap()).unwrap())
        .collect();
    let (gate, up): (Vec<_>, Vec<_>) = (
        groups.gate.iter().map(huge).collect(),
        groups.up.iter().map(huge).collect(),
    );
    let mut c: Vec<CudaSlice<f16>> = (0..2).map(|g| poisoned(&gpu, groups.rows(g) * 256)).collect();
    let separate = gpu
        .plan_grouped(
            GroupedOp::DualGemm,
            GroupedLayout::Separate {
                groups: 2,
                rows: 16,
                max_k: 256,
            },
            None,
        )
        .unwrap();
    let stream = gpu.stream();
    let list: Vec<SeparateGroup> = c
        .iter_mut()
        .enumerate()
        .map(|(g, c)| SeparateGroup {
            a: Some(a[g].view(stream)),
            gate: gate[g].view(stream),
            up: Some(up[g].view(stream)),
            c: Some(F16Mut::of(c, stream)),
        })
        .collect();
    let refused = separate.launch_separate(&gpu, &list);
    assert!(
        matches!(
            refused,
            Err(Error::InvalidArgument {
                arg: "global scales",
                ..
            })
        ),
        "{refused:?}"
    );
    drop(list);
    for c in &c {
        assert!(
            stream.clone_dtoh(c).unwrap().iter().all(|v| v.is_nan()),
            "C written"
        );
    }
    for (layout, arg) in [
        (
            GroupedLayout::Separate {
                groups: 0,
                rows: 8,
                max_k: 256,
            },
            "groups",
        ),
        (
            GroupedLayout::Separate {
                groups: 2,
                rows: 8,
                max_k: 96,
            },
            "max_k",
        ),
        (
            GroupedLayout::Contiguous {
                groups: 2,
                rows: 8,
                scale_rows: 128,
                n: 100,
                k: 256,
                up: UpWeights::Separate,
            },
            "n",
        ),
    ] {
        assert!(
            matches!(gpu.plan_grouped(GroupedOp::Gemm, layout, None), Err(Error::InvalidArgument { arg: a, .. }) if a == arg),
            "{layout:?}"
        );
    }
}

/// The grouped dual GEMM's NVFP4 output (contiguous convention) is, group by group, the
/// quantizer's output on that group's fp16 rows with the group's global scale (every data byte
/// of its rows, every byte of its scale region, padding rows included); rows past the last
/// group and scale blocks of no group stay poisoned. Global scales fitted to each group,
/// saturating its block scales, and pushing them into e4m3's subnormals, in turn; groups
/// without rows first, in the middle and last; both up-weight forms. Blackwell: a typed error.
fn grouped_dual_gemm_nvfp4_output_is_each_groups_quantized_fp16_output_bit_for_bit() {
    use nvfp4::GlobalScale;
    use nvfp4::gpu::Arch;
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    const POISON: u8 = 0xA5;
    let layers: [(&[usize], usize, usize); 3] = [
        (&[0, 3, 17, 1, 0, 64, 5, 2, 9, 130, 4, 1, 0], 768, 2048),
        (&[40, 0, 2, 7, 1, 129, 0, 5, 11, 1, 0], 1536, 2880),
        (&[1, 2, 0, 1, 3, 1, 1, 0, 2, 5, 1, 1], 192, 512),
    ];
    let mut failures = Vec::new();
    for (layer, &(rows, n, k)) in layers.iter().enumerate() {
        let shapes = vec![(n, k); rows.len()];
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let groups = random_groups(rows, &shapes, true, distribution, 70 + layer as u64);
            let capacity = rows.iter().sum::<usize>() + 5;
            let up = [UpWeights::Separate, UpWeights::Concatenated][layer % 2];
            // The plan's own tile, the decode-size kernel and the fitted tiles (Hopper).
            for tokens_per_group in [None, Some(4), Some(128)] {
                let name = format!("layer {layer} {distribution:?} {up:?} {tokens_per_group:?}");
                let inputs = Contiguous::upload(&gpu, &groups, capacity, up);
                let plan = gpu
                    .plan_grouped(groups.op(), inputs.layout(&groups, up), tokens_per_group)
                    .unwrap();
                let tokens = &inputs.tokens;
                let layout = BlockedScales::new(tokens.scale_rows, n);
                let stream = gpu.stream();
                let mut h_data = stream.clone_htod(&vec![POISON; capacity * n / 2]).unwrap();
                let mut h_scales = stream.clone_htod(&vec![POISON; layout.len()]).unwrap();
                if gpu.arch() == Arch::Sm100f {
                    let ones = stream.clone_htod(&vec![1f32; rows.len()]).unwrap();
                    let result = plan.launch_nvfp4(&gpu, &inputs.inputs(), &mut h_data, &mut h_scales, &ones);
                    assert!(
                        matches!(result, Err(Error::KernelUnavailable { .. })),
                        "{result:?}"
                    );
                    return;
                }
                // The fp16 result, then each group's global scale from its amax: fitted, saturating
                // (1/64 of it) or subnormal block scales (40 times it), in turn.
                let mut c = poisoned(&gpu, capacity * n);
                plan.launch(&gpu, &inputs.inputs(), &mut c).unwrap();
                let c = stream.clone_dtoh(&c).unwrap();
                let group_rows = |g: usize| {
                    let row0 = tokens.row_offsets[g] as usize;
                    &c[row0 * n..(row0 + groups.rows(g)) * n]
                };
                let global_scales: Vec<f32> = (0..rows.len())
                    .map(|g| {
                        let amax = group_rows(g).iter().fold(0f32, |m, v| m.max(v.to_f32().abs()));
                        let fitted = nvfp4::codec::auto_global_scale(amax);
                        fitted * [1.0, 1.0 / 64.0, 40.0][g % 3]
                    })
                    .collect();
                let scales_device = stream.clone_htod(&global_scales).unwrap();
                plan.launch_nvfp4(&gpu, &inputs.inputs(), &mut h_data, &mut h_scales, &scales_device)
                    .unwrap();
                plan.device_status(&gpu).unwrap();
                let (h_data, h_scales) = (
                    stream.clone_dtoh(&h_data).unwrap(),
                    stream.clone_dtoh(&h_scales).unwrap(),
                );
                let mut owned_scales = vec![false; h_scales.len()];
                for (g, &global) in global_scales.iter().enumerate() {
                    let r = groups.rows(g);
                    if r == 0 {
                        continue;
                    }
                    let want =
                        NvFp4Matrix::quantize(r, n, group_rows(g), GlobalScale::Fixed(global)).unwrap();
                    let row0 = tokens.row_offsets[g] as usize;
                    let data = &h_data[row0 * n / 2..(row0 + r) * n / 2];
                    let scale0 = layout.atom_offset(tokens.scale_offsets[g] as usize / 128, 0);
                    let scales = &h_scales[scale0..scale0 + want.scales().len()];
                    owned_scales[scale0..scale0 + want.scales().len()].fill(true);
                    let differ =
                        |got: &[u8], want: &[u8]| got.iter().zip(want).filter(|(a, b)| a != b).count();
                    let (bad_data, bad_scales) = (differ(data, want.data()), differ(scales, want.scales()));
                    if bad_data + bad_scales > 0 {
                        failures.push(format!(
                        "{name}, group {g} ({r} rows, g = {global:e}): {bad_data} data and {bad_scales} scale bytes differ"
                    ));
                    }
                }
                let end = *tokens.row_offsets.last().unwrap() as usize;
                if h_data[end * n / 2..].iter().any(|&b| b != POISON) {
                    failures.push(format!("{name}: data past the last group was written"));
                }
                if h_scales
                    .iter()
                    .zip(&owned_scales)
                    .any(|(&b, &owned)| !owned && b != POISON)
                {
                    failures.push(format!("{name}: scale bytes of no group were written"));
                }
                println!(
                    "{name}: grouped NVFP4 output, tile {:?}, {}",
                    plan.tile_and_grid(),
                    if failures.is_empty() { "identical" } else { "FAIL" }
                );
            }
        }
    }
    assert_no_failures(failures);
}

/// A batch of `L` products of one shape held the way PyTorch holds a batched tensor (each
/// operand's batches back to back in one allocation, the output too), launched as `L`
/// separate-convention groups on `from_raw` views of those allocations: one launch, no copy.
fn a_batch_in_single_allocations_runs_as_one_separate_launch_on_raw_views() {
    let Some(gpu) = grouped_gpu_or_skip() else { return };
    let stream = gpu.stream();
    for (m, n, k, batch, dual) in [
        (1, 4096, 7168, 4, false),
        (128, 256, 1536, 3, false),
        (40, 384, 512, 2, true),
    ] {
        let shapes = vec![(n, k); batch];
        let groups = random_groups(&vec![m; batch], &shapes, dual, Distribution::Task, 31 + m as u64);
        // One buffer per operand: batch i at i × (its bytes), as a contiguous batched tensor.
        let stacked = |matrices: Vec<&NvFp4Matrix>| {
            let data: Vec<u8> = matrices.iter().flat_map(|x| x.data().iter().copied()).collect();
            let scales: Vec<u8> = matrices.iter().flat_map(|x| x.scales().iter().copied()).collect();
            (
                stream.clone_htod(&data).unwrap(),
                stream.clone_htod(&scales).unwrap(),
            )
        };
        let a = stacked(groups.a.iter().map(|a| a.as_ref().unwrap()).collect());
        let gate = stacked(groups.gate.iter().collect());
        let up = stacked(groups.up.iter().collect());
        let c = poisoned(&gpu, batch * m * n);
        let address = |buffer: &CudaSlice<u8>| buffer.device_ptr(stream).0;
        let view = |(data, scales): &(CudaSlice<u8>, CudaSlice<u8>), matrix: &NvFp4Matrix, i: usize| {
            let (data_bytes, scale_bytes) = (matrix.data().len(), matrix.scales().len());
            // SAFETY: batch `i` lies inside both buffers, which outlive the launch (synchronized below).
            unsafe {
                NvFp4Ref::from_raw(
                    address(data) + (i * data_bytes) as u64,
                    address(scales) + (i * scale_bytes) as u64,
                    matrix.rows(),
                    matrix.k(),
                    matrix.global_scale(),
                )
            }
            .unwrap()
        };
        let c_address = c.device_ptr(stream).0;
        let list: Vec<SeparateGroup> = (0..batch)
            .map(|i| SeparateGroup {
                a: Some(view(&a, groups.a[i].as_ref().unwrap(), i)),
                gate: view(&gate, &groups.gate[i], i),
                up: dual.then(|| view(&up, &groups.up[i], i)),
                // SAFETY: batch `i`'s rows of `c`, which outlives the launch.
                c: Some(unsafe { F16Mut::from_raw(c_address + (2 * i * m * n) as u64, m * n) }.unwrap()),
            })
            .collect();
        let layout = GroupedLayout::Separate {
            groups: batch,
            rows: batch * m,
            max_k: k,
        };
        let plan = gpu.plan_grouped(groups.op(), layout, Some(m)).unwrap();
        plan.launch_separate(&gpu, &list).unwrap();
        let got = stream.clone_dtoh(&c).unwrap();
        let mut failures = Vec::new();
        for i in 0..batch {
            let want = groups.reference(i).unwrap();
            let report =
                reference::check(&got[i * m * n..(i + 1) * m * n], &want, n, TASK_TOLERANCE).unwrap();
            println!("batch of {batch} × {m} × {n} × {k}, dual {dual}: batch {i} {report}");
            if !report.passed() {
                failures.push(format!("{m} × {n} × {k} batch {i}: {report}"));
            }
        }
        assert_no_failures(failures);
    }
}

/// Every tiled token tile of the grouped kernels, chosen through the plan's `tokens_per_group`,
/// on groups smaller than, equal to and a little or a lot larger than the tile (partial last
/// tiles, empty groups); from 65 tokens per group the fitted tile, at each of its widths.
fn every_token_tile_matches_the_reference_on_groups_around_its_size() {
    let Some(gpu) = grouped_gpu_or_skip() else {
        return;
    };
    let rows = [300, 0, 256, 1, 513, 17, 129, 64, 280];
    let shapes = vec![(320, 576); rows.len()];
    let mut failures = Vec::new();
    for dual in [false, true] {
        let groups = random_groups(&rows, &shapes, dual, Distribution::FullRange, 90);
        let capacity = rows.iter().sum::<usize>() + 9;
        for tokens_per_group in [32, 64, 128] {
            failures.extend(run_contiguous_planned(
                &gpu,
                &format!("dual {dual}, tokens per group {tokens_per_group}"),
                &groups,
                capacity,
                if dual {
                    UpWeights::Concatenated
                } else {
                    UpWeights::Separate
                },
                Some(tokens_per_group),
            ));
        }
    }
    assert_no_failures(failures);
}

test_main!(
    grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions,
    separate_convention_takes_n_and_k_that_differ_between_groups,
    grouped_dual_gemm_matches_the_reference_on_moe_layers_with_separate_and_concatenated_up_weights,
    groups_without_rows_first_middle_and_last_and_odd_sizes,
    every_token_tile_matches_the_reference_on_groups_around_its_size,
    moe_decode_with_256_groups_of_0_to_5_rows_and_skewed_prefill_sizes,
    grouped_decode_kernel_matches_the_reference_on_groups_of_any_size,
    one_group_and_the_dense_gemm_match_the_reference,
    same_inputs_give_bitwise_identical_outputs,
    a_cuda_graph_captured_once_replays_with_new_device_side_offsets,
    invalid_device_offsets_write_nothing_and_report_the_rule,
    launches_reject_inputs_that_do_not_match_the_plan,
    grouped_dual_gemm_nvfp4_output_is_each_groups_quantized_fp16_output_bit_for_bit,
    a_batch_in_single_allocations_runs_as_one_separate_launch_on_raw_views,
);
