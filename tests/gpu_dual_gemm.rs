//! The fused dual-GEMM kernel of the GPU present (sm_90a on 9.0, sm_100f on 10.x) against the
//! CPU reference (task tolerance), on the benchmark, correctness and decode shapes, for the reference harness's
//! inputs and the full e2m1/e4m3 range; and the plain GEMM, which runs the same dense plan and
//! kernels on sm_90a, on every tile and decode size; and the MLP op over both. Outputs are poisoned with NaN before every launch.
//! Skipped with a printed reason without a supported GPU. (Only sm_90a has run: no B200 here.)

mod common;

use std::time::Instant;

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use nvfp4::gemm::GemmShape;
use nvfp4::gpu::Gpu;
use nvfp4::mlp::{MlpShape, TokenHandOn};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{BlockedScales, Distribution, DualGemmShape, Error, GlobalScale, NvFp4Matrix, Problem};

/// A GPU with a dual-GEMM kernel (9.0 or 10.x), or a printed reason.
fn dual_gemm_gpu_or_skip() -> Option<Gpu> {
    common::gpu_or_skip()
}

/// Runs the kernel on a NaN-poisoned C and returns it.
fn run(gpu: &Gpu, problem: &Problem) -> Vec<f16> {
    let shape = problem.shape();
    let plan = gpu.plan_dual_gemm(shape).unwrap();
    let (a, b1, b2) = (
        gpu.upload(&problem.a).unwrap(),
        gpu.upload(&problem.b1).unwrap(),
        gpu.upload(&problem.b2).unwrap(),
    );
    let mut c: CudaSlice<f16> = gpu
        .stream()
        .clone_htod(&vec![f16::NAN; shape.m * shape.n])
        .unwrap();
    plan.launch(gpu, &a, &b1, &b2, &mut c).unwrap();
    gpu.stream().clone_dtoh(&c).unwrap()
}

fn check_shapes(gpu: &Gpu, shapes: &[(usize, usize, usize)]) {
    let mut failures = Vec::new();
    for &(m, n, k) in shapes {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let shape = DualGemmShape { m, n, k };
            let seed = (m * 31 + n * 7 + k) as u64 ^ distribution as u64;
            let problem = Problem::random(shape, distribution, seed).unwrap();
            let start = Instant::now();
            let got = run(gpu, &problem);
            let want = reference::dual_gemm(&problem.a, &problem.b1, &problem.b2).unwrap();
            let report = reference::check(&got, &want, n, TASK_TOLERANCE).unwrap();
            println!(
                "{m:>5} × {n:>5} × {k:>5} {distribution:?}: {report} ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            if !report.passed() {
                failures.push(format!("{m}×{n}×{k} {distribution:?}: {report}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn the_plain_gemm_matches_the_reference_on_every_tile_and_decode_size() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let mut failures = Vec::new();
    // Decode sizes (M ≤ 16), each tile width, K with a partial last stage, and N an odd
    // multiple of 64 (a plain tile holds 128 outputs: the last one half empty).
    for (m, n, k) in [
        (1, 4096, 7168),  // whole-K CTAs of 16 warps
        (6, 4096, 7232),  // the same, six token rows, a partial last step
        (8, 4096, 14336), // the same, eight token rows
        (2, 2880, 2880),
        (7, 2944, 320),
        (3, 512, 64),   // decode-size, K of one slice: lanes whose blocks lie past K load nothing
        (12, 512, 192), // the same at two token tiles, a partial second step
        (16, 7168, 2048), // two token tiles staged through a copy of their packed rows
        (13, 2112, 24576), // the same straight from global memory (the copy would cost the wave; N no multiple of 128: no wide entries)
        (13, 2048, 24576), // the wide entries (128 outputs a CTA): 12-step splits through the copy
        (16, 4096, 24576), // the same straight from global memory (24-step splits: no room for the copy)
        (16, 4096, 14336), // the wide entries: only theirs fit one wave
        (11, 4096, 14400), // the same, odd M, a partial last step
        (5, 40960, 256),   // the decode-size kernel in several waves (640 row groups)
        (17, 576, 1024),
        (33, 4096, 7232),
        (100, 2880, 2880),
        (129, 192, 64),
        (256, 7168, 2048),
        (300, 768, 2880),
        (1000, 4096, 2880),
        (2048, 1088, 1024),
    ] {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let seed = (m * 31 + n * 7 + k) as u64 ^ distribution as u64;
            let problem = Problem::random(DualGemmShape { m, n, k }, distribution, seed).unwrap();
            let plan = gpu.plan_gemm(GemmShape { m, n, k }).unwrap();
            let (a, b) = (gpu.upload(&problem.a).unwrap(), gpu.upload(&problem.b1).unwrap());
            let mut c: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::NAN; m * n]).unwrap();
            plan.launch(&gpu, &a, &b, &mut c).unwrap();
            let got = gpu.stream().clone_dtoh(&c).unwrap();
            let want = reference::gemm(&problem.a, &problem.b1).unwrap();
            let report = reference::check(&got, &want, n, TASK_TOLERANCE).unwrap();
            println!(
                "GEMM {m:>5} × {n:>5} × {k:>5} {distribution:?} {:?}: {report}",
                plan.tile_and_grid()
            );
            if !report.passed() {
                failures.push(format!("GEMM {m}×{n}×{k} {distribution:?}: {report}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The dual GEMM with NVFP4 output against the GPU quantizer run on its fp16 output: every
/// data and scale byte (padding included) equal, on decode sizes, every tile width, stream-K
/// splits, odd M, both input distributions, and global scales that leave the block scales in
/// range, saturate them and push them into e4m3's subnormals. Outputs are poisoned first.
fn the_nvfp4_output_is_the_quantized_fp16_output_bit_for_bit() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let mut failures = Vec::new();
    for (m, n, k) in [
        (1, 4096, 7168),  // whole-K CTAs of 16 warps
        (5, 4096, 7232),  // the same, odd M, a partial last step
        (1, 14336, 4096), // whole-K CTAs of 4 warps
        (1, 18432, 2048), // the small-CTA whole-K entries (1152 CTAs: nine an SM)
        (7, 2944, 320),
        (8, 14336, 4096), // the paired decode-size entry: splits of 16 steps
        (16, 7168, 2048),
        (13, 14336, 4096), // the wide entries: two 64-output tiles a CTA
        (17, 576, 1024),
        (33, 4096, 7232),
        (100, 2880, 2880),
        (129, 192, 64),
        (256, 7168, 2048),
        (300, 768, 2880),
        (1000, 4096, 2880),
        (2048, 1088, 1024),
    ] {
        for distribution in [Distribution::Task, Distribution::FullRange] {
            let seed = (m * 37 + n * 5 + k) as u64 ^ distribution as u64;
            let problem = Problem::random(DualGemmShape { m, n, k }, distribution, seed).unwrap();
            let plan = gpu.plan_dual_gemm(problem.shape()).unwrap();
            let (a, b1, b2) = (
                gpu.upload(&problem.a).unwrap(),
                gpu.upload(&problem.b1).unwrap(),
                gpu.upload(&problem.b2).unwrap(),
            );
            let mut c: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::NAN; m * n]).unwrap();
            plan.launch(&gpu, &a, &b1, &b2, &mut c).unwrap();
            let amax = gpu
                .stream()
                .clone_dtoh(&c)
                .unwrap()
                .iter()
                .fold(0f32, |m, v| m.max(v.to_f32().abs()));
            let fitted = nvfp4::codec::auto_global_scale(amax);
            for (what, g) in [
                ("fitted", fitted),
                ("saturating", fitted / 64.0),
                ("subnormal", fitted * 512.0),
            ] {
                let want = gpu
                    .download(&gpu.quantize(m, n, &c, GlobalScale::Fixed(g)).unwrap())
                    .unwrap();
                let poison = NvFp4Matrix::from_parts(
                    m,
                    n,
                    vec![0xA5; m * n / 2],
                    vec![0x5A; BlockedScales::new(m, n).len()],
                    None,
                )
                .unwrap();
                let mut h = gpu.upload(&poison).unwrap();
                plan.launch_nvfp4(&gpu, &a, &b1, &b2, &mut h, g).unwrap();
                let got = gpu.download(&h).unwrap();
                let differing = |x: &[u8], y: &[u8]| x.iter().zip(y).filter(|(x, y)| x != y).count();
                let (data, scales) = (
                    differing(got.data(), want.data()),
                    differing(got.scales(), want.scales()),
                );
                println!(
                    "dual GEMM → NVFP4 {m:>5} × {n:>5} × {k:>5} {distribution:?} {what} (g = {g:e}) {:?}: \
                     {data} data and {scales} scale bytes differ",
                    plan.tile_and_grid()
                );
                if data + scales > 0 || got.global_scale() != Some(g) {
                    failures.push(format!(
                        "{m}×{n}×{k} {distribution:?} {what}: {data} data, {scales} scale bytes differ"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn matches_the_reference_on_the_benchmark_shapes() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    check_shapes(
        &gpu,
        &[
            (256, 4096, 7168),
            (512, 4096, 7168),
            (256, 3072, 4096),
            (512, 3072, 7168),
        ],
    );
}

fn matches_the_reference_on_the_reference_correctness_shapes() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    check_shapes(
        &gpu,
        &[
            (1536, 512, 7168),
            (256, 512, 256),
            (3072, 1024, 1536),
            (7168, 1024, 256),
            (7168, 2304, 2048),
            (4608, 384, 7168),
            (7168, 384, 2304),
            (512, 768, 7168),
            (4096, 768, 512),
        ],
    );
}

fn matches_the_reference_for_decode_and_odd_token_counts() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let shapes: Vec<_> = [1, 2, 7, 16, 33, 64, 100, 128, 200, 1000]
        .iter()
        .map(|&m| (m, 4096, 7168))
        .collect();
    check_shapes(&gpu, &shapes);
}

fn matches_the_reference_on_small_token_tiles_whole_and_split() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    // M ≤ 16 on Hopper: the decode-size kernels (whole-K CTAs, or K splits of 1 to 7 steps);
    // M = 30, 32: token tiles of 32 (tokens decoded in the kernel), whole tiles per CTA and
    // stream-K splits.
    check_shapes(
        &gpu,
        &[
            (32, 4096, 4096), // 64 tiles of 16 stages: half a tile per CTA
            (16, 3072, 7168), // 48 tiles of 28 stages over 132 CTAs
            (3, 512, 1024),   // 8 tiles of 4 stages: one stage per CTA
            (5, 4096, 7424),  // 29 stages
            (12, 1024, 768),  // 16 tiles of 3 stages
            (30, 2048, 2304), // 32 tiles of 9 stages
            // Whole-K CTAs of 4 and 8 warps and small ones; then splits of 16 steps: the paired decode-size
            // entry at one token tile, the other at two.
            (1, 14336, 4096),
            (1, 8192, 2048),
            (3, 18432, 1024), // the small-CTA entry: nine CTAs an SM
            (7, 14336, 4096),
            (16, 12480, 4096), // two token tiles straight from global memory (no room for the copy; N no multiple of 128)
            (16, 14336, 4096), // the wide entries: only theirs fit one wave
            (12, 4096, 24576), // the same straight from global memory (24-step splits: no room for the copy)
            (9, 14336, 4160),  // the same, odd M, a partial last step
            // M ≤ 16 whose decode-size split needs several waves (640 row groups): the tiled
            // kernel.
            (1, 40960, 256),
            (8, 40960, 256),
            (13, 40960, 256),
        ],
    );
}

fn matches_the_reference_for_k_multiples_of_64_with_a_partial_last_stage() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    // K = 2880 (gpt-oss: 11 stages + 64), 64 (one slice), 320 and 576 (a stage + 1 and + 2
    // slices), 7232 (28 stages + 64); token tiles of 8 to 256 (in-kernel and pre-decoded tokens),
    // whole tiles and stream-K splits.
    check_shapes(
        &gpu,
        &[
            (16, 2880, 2880),
            (1, 512, 64),
            (7, 512, 320),
            (12, 512, 192),
            (64, 1024, 576),
            (128, 2880, 2880),
            (300, 768, 2880),
            (33, 4096, 7232),
            (1000, 4096, 2880), // 256-token tiles, the last one partial
        ],
    );
}

/// Blackwell: both ways of reading A in the gate/up MMA pair (A kept in the MMA's collector, or
/// read twice) match the reference and each other bit for bit. Hopper has no collector: the
/// switch is refused there with a typed error.
fn a_collector_reuse_and_discard_both_match_the_reference() {
    use nvfp4::gpu::Arch;
    use nvfp4_kernel::sm100::config::ACollectorUse;
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let shape = DualGemmShape {
        m: 300,
        n: 512,
        k: 2880,
    };
    let mut plan = gpu.plan_dual_gemm(shape).unwrap();
    if gpu.arch() != Arch::Sm100f {
        assert!(matches!(
            plan.set_a_collector_use(ACollectorUse::Discard),
            Err(Error::InvalidArgument { .. })
        ));
        plan.set_a_collector_use(ACollectorUse::Reuse).unwrap();
        println!("{}: no MMA collector; the switch is refused", gpu.arch().name());
        return;
    }
    let problem = Problem::random(shape, Distribution::FullRange, 17).unwrap();
    let want = reference::dual_gemm(&problem.a, &problem.b1, &problem.b2).unwrap();
    let (a, b1, b2) = (
        gpu.upload(&problem.a).unwrap(),
        gpu.upload(&problem.b1).unwrap(),
        gpu.upload(&problem.b2).unwrap(),
    );
    let mut outputs = Vec::new();
    for collector in [ACollectorUse::Reuse, ACollectorUse::Discard] {
        plan.set_a_collector_use(collector).unwrap();
        let mut c: CudaSlice<f16> = gpu
            .stream()
            .clone_htod(&vec![f16::NAN; shape.m * shape.n])
            .unwrap();
        plan.launch(&gpu, &a, &b1, &b2, &mut c).unwrap();
        let got = gpu.stream().clone_dtoh(&c).unwrap();
        let report = reference::check(&got, &want, shape.n, TASK_TOLERANCE).unwrap();
        println!("{collector:?}: {report}");
        assert!(report.passed(), "{collector:?}: {report}");
        outputs.push(got);
    }
    assert!(
        outputs[0]
            .iter()
            .zip(&outputs[1])
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "reuse and discard differ"
    );
}

fn same_inputs_give_bitwise_identical_outputs() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    for (m, n, k) in [(256, 4096, 7168), (7, 512, 1024)] {
        let problem = Problem::random(DualGemmShape { m, n, k }, Distribution::FullRange, 99).unwrap();
        let (first, second) = (run(&gpu, &problem), run(&gpu, &problem));
        let same = first.iter().zip(&second).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{m}×{n}×{k}: two runs differ");
    }
}

fn back_to_back_programmatic_launches_match_the_reference_and_plain_launches() {
    // Launch i + 1 may start while launch i runs; both share the plan's stream-K counters and
    // workspace and, for 64-token tiles, the pre-decoded token buffer. Alternating inputs catch
    // a launch that touches any of those before the previous one has finished.
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    for (m, n, k) in [(1, 4096, 7168), (64, 4096, 7168), (256, 3072, 4096)] {
        let shape = DualGemmShape { m, n, k };
        let mut plan = gpu.plan_dual_gemm(shape).unwrap();
        assert!(
            plan.programmatic_launch(),
            "Hopper plans launch programmatically by default"
        );
        let problems: Vec<Problem> = (0..3)
            .map(|seed| Problem::random(shape, Distribution::Task, 500 + seed).unwrap())
            .collect();
        let inputs: Vec<_> = problems
            .iter()
            .map(|p| {
                [
                    gpu.upload(&p.a).unwrap(),
                    gpu.upload(&p.b1).unwrap(),
                    gpu.upload(&p.b2).unwrap(),
                ]
            })
            .collect();
        let poisoned = || -> CudaSlice<f16> { gpu.stream().clone_htod(&vec![f16::NAN; m * n]).unwrap() };
        let mut outputs: Vec<CudaSlice<f16>> = (0..3).map(|_| poisoned()).collect();
        for _round in 0..4 {
            for (j, [a, b1, b2]) in inputs.iter().enumerate() {
                plan.launch(&gpu, a, b1, b2, &mut outputs[j]).unwrap();
            }
        }
        plan.set_programmatic_launch(false).unwrap();
        for (j, (problem, [a, b1, b2])) in problems.iter().zip(&inputs).enumerate() {
            let got = gpu.stream().clone_dtoh(&outputs[j]).unwrap();
            let want = reference::dual_gemm(&problem.a, &problem.b1, &problem.b2).unwrap();
            let report = reference::check(&got, &want, n, TASK_TOLERANCE).unwrap();
            println!("{m} × {n} × {k} input set {j}, back to back: {report}");
            assert!(report.passed(), "{m}×{n}×{k} input set {j}: {report}");
            let mut plain = poisoned();
            plan.launch(&gpu, a, b1, b2, &mut plain).unwrap();
            let plain = gpu.stream().clone_dtoh(&plain).unwrap();
            let same = got.iter().zip(&plain).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "{m}×{n}×{k} input set {j}: plain and programmatic launches differ"
            );
        }
    }
}

fn launch_rejects_operands_that_do_not_match_the_plan() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let problem = Problem::random(DualGemmShape { m: 8, n: 64, k: 256 }, Distribution::Task, 1).unwrap();
    let (a, b1, b2) = (
        gpu.upload(&problem.a).unwrap(),
        gpu.upload(&problem.b1).unwrap(),
        gpu.upload(&problem.b2).unwrap(),
    );
    let plan = gpu
        .plan_dual_gemm(DualGemmShape { m: 8, n: 128, k: 256 })
        .unwrap();
    let mut c: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::ZERO; 8 * 128]).unwrap();
    assert!(matches!(
        plan.launch(&gpu, &a, &b1, &b2, &mut c),
        Err(Error::ShapeMismatch(_))
    ));
    let plan = gpu.plan_dual_gemm(problem.shape()).unwrap();
    assert!(matches!(
        plan.launch(&gpu, &a, &b1, &b2, &mut c),
        Err(Error::BufferLength { arg: "c", .. })
    ));
    assert!(matches!(
        gpu.plan_dual_gemm(DualGemmShape { m: 8, n: 100, k: 256 }),
        Err(Error::InvalidArgument { arg: "n", .. })
    ));
}

/// Launches stopped mid-way on purpose (the plan's test hook: every CTA takes its ticket, the
/// first `stop` compute and publish partial sums, the rest leave, no reducer waits) leave
/// partial sums and flags of their epoch behind; the launches after them on the same plan must
/// be right, direct and replayed from a CUDA graph captured before the stop. Stream-K shapes
/// (tiles split over all SMs; M above the decode-size path, which takes no tickets), several stop
/// points.
fn launches_after_a_launch_stopped_mid_way_are_right() {
    use cudarc::driver::{DevicePtrMut, sys};
    use nvfp4::gpu::{Arch, F16Mut};
    let Some(mut gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    // A stream that can be captured (the context's default stream cannot).
    let owner = gpu.stream().context().new_stream().unwrap();
    // SAFETY: `owner` is a stream of this context and outlives every launch below.
    unsafe { gpu.set_borrowed_stream(owner.cu_stream() as u64) }.unwrap();
    for (m, n, k) in [(32, 4096, 7168), (100, 2048, 2880)] {
        let shape = DualGemmShape { m, n, k };
        let plan = gpu.plan_dual_gemm(shape).unwrap();
        if gpu.arch() != Arch::Sm90a {
            assert!(plan.abort_next_launch(1).is_err());
            println!("{}: no stream-K tickets; the hook is refused", gpu.arch().name());
            return;
        }
        let grid = plan.tile_and_grid().1;
        assert!(plan.abort_next_launch(0).is_err() && plan.abort_next_launch(grid + 1).is_err());
        let problem = Problem::random(shape, Distribution::FullRange, 23).unwrap();
        let want = reference::dual_gemm(&problem.a, &problem.b1, &problem.b2).unwrap();
        let (a, b1, b2) = (
            gpu.upload(&problem.a).unwrap(),
            gpu.upload(&problem.b1).unwrap(),
            gpu.upload(&problem.b2).unwrap(),
        );
        // The stopped launches run on other tokens: partial sums they leave behind that a later
        // launch mistook for its own would change its results.
        let other = gpu
            .upload(&Problem::random(shape, Distribution::FullRange, 24).unwrap().a)
            .unwrap();
        let stream = &owner;
        let mut c: CudaSlice<f16> = stream.alloc_zeros(m * n).unwrap();
        let c_ptr = c.device_ptr_mut(stream).0;
        let poison = |c: &mut CudaSlice<f16>| stream.memcpy_htod(&vec![f16::NAN; m * n], c).unwrap();
        // Views taken once, outside the capture (taking one records a stream event).
        let (a_ref, b1_ref, b2_ref) = (a.view(stream), b1.view(stream), b2.view(stream));
        let other_ref = other.view(stream);
        // SAFETY: `c` holds m × n fp16 and outlives every launch below.
        let launch_on = |a_ref| {
            plan.launch_views(&gpu, a_ref, b1_ref, b2_ref, unsafe {
                F16Mut::from_raw(c_ptr, m * n).unwrap()
            })
        };
        let launch = || launch_on(a_ref);
        let check = |c: &CudaSlice<f16>, what: &str| {
            let got = stream.clone_dtoh(c).unwrap();
            let report = reference::check(&got, &want, n, TASK_TOLERANCE).unwrap();
            println!("{m}×{n}×{k} (grid {grid}), {what}: {report}");
            assert!(report.passed(), "{m}×{n}×{k}, {what}: {report}");
        };
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        launch().unwrap();
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("a captured graph");
        for stop in [1, grid / 3, grid - 1, grid] {
            plan.abort_next_launch(stop).unwrap();
            poison(&mut c);
            launch_on(other_ref).unwrap();
            let stopped = stream.clone_dtoh(&c).unwrap();
            let written = stopped.iter().filter(|v| !v.is_nan()).count();
            assert!(written < m * n, "a stopped launch leaves split tiles unwritten");
            for i in 0..2 {
                poison(&mut c);
                launch().unwrap();
                check(
                    &c,
                    &format!("stopped after {stop} CTAs ({written} outputs written), launch {i} after"),
                );
            }
            plan.abort_next_launch(stop).unwrap();
            launch_on(other_ref).unwrap();
            for i in 0..2 {
                poison(&mut c);
                graph.launch().unwrap();
                check(&c, &format!("stopped after {stop} CTAs, graph replay {i} after"));
            }
        }
    }
}

/// A random `rows × k` NVFP4 weight matrix with global scale `g`.
fn weight(rows: usize, k: usize, g: f32, rng: &mut Rng) -> NvFp4Matrix {
    let m = random_matrix(rows, k, Distribution::Task, rng).unwrap();
    NvFp4Matrix::from_parts(rows, k, m.data().to_vec(), m.scales().to_vec(), Some(g)).unwrap()
}

/// The MLP op against its three calls made one by one (quantize x, the dual GEMM writing h as
/// NVFP4, the GEMM), every output bit equal: on decode sizes, a decode-size dual GEMM before a
/// tiled GEMM, every token tile, K of both GEMMs with a partial last stage, two inputs a plan
/// (each launch rewrites the handed-on token operands; the plan's default hand-on, then every
/// operand handed on), bf16 and f32 activations.
fn the_mlp_op_is_its_three_calls_made_one_by_one_bit_for_bit() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut failures = Vec::new();
    for (tokens, hidden, intermediate) in [
        (1, 512, 1024),
        (13, 576, 2880), // a decode-size dual GEMM before a tiled GEMM
        (64, 320, 1088), // both K with a partial last stage
        (100, 2880, 768),
        (256, 1024, 2880),
        (300, 768, 2880),
        (1000, 2048, 1024),
        (256, 4096, 14336), // 256-token dual tiles, two a CTA
        (256, 2048, 8192),
        (512, 4096, 14336),
    ] {
        let mut rng = Rng::new((tokens * 131 + hidden * 7 + intermediate) as u64);
        let (w1, w3, w2) = (
            weight(intermediate, hidden, 0.75, &mut rng),
            weight(intermediate, hidden, 1.5, &mut rng),
            weight(hidden, intermediate, 0.5, &mut rng),
        );
        let (w1, w3, w2) = (
            gpu.upload(&w1).unwrap(),
            gpu.upload(&w3).unwrap(),
            gpu.upload(&w2).unwrap(),
        );
        let mut plan = gpu
            .plan_mlp(MlpShape {
                tokens,
                hidden,
                intermediate,
            })
            .unwrap();
        let dual = gpu
            .plan_dual_gemm(DualGemmShape {
                m: tokens,
                n: intermediate,
                k: hidden,
            })
            .unwrap();
        let down = gpu
            .plan_gemm(GemmShape {
                m: tokens,
                n: hidden,
                k: intermediate,
            })
            .unwrap();
        for call in 0..2 {
            // The plan's default hand-on first, then every operand the kernels can hand on.
            if call == 1 {
                plan.set_token_hand_on(plan.possible_hand_on()).unwrap();
            }
            // Activations of magnitude up to 4 (bf16), then up to 64 (f32 for the second call).
            let span = if call == 0 { 8.0 } else { 128.0 };
            let values: Vec<f32> = (0..tokens * hidden)
                .map(|_| (rng.next_f32() - 0.5) * span)
                .collect();
            let gx = nvfp4::codec::auto_global_scale(span / 2.0);
            let gh = 2.0 + call as f32;
            let mut want: CudaSlice<f16> = stream.clone_htod(&vec![f16::NAN; tokens * hidden]).unwrap();
            let mut got = want.clone();
            let mut xq = gpu.alloc_nvfp4(tokens, hidden).unwrap();
            let mut h = gpu.alloc_nvfp4(tokens, intermediate).unwrap();
            let mut checks = gpu.quantize_checks().unwrap();
            let x_bf16 = stream
                .clone_htod(&values.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
                .unwrap();
            let x_f32 = stream.clone_htod(&values).unwrap();
            let fixed = GlobalScale::Fixed(gx);
            // The three calls' quantization, and the op, on the call's input.
            let quantize = |xq: &mut _, checks: &mut _| match call {
                0 => gpu.quantize_into(&x_bf16, xq, fixed, checks),
                _ => gpu.quantize_into(&x_f32, xq, fixed, checks),
            };
            let launch = |plan: &mut nvfp4::mlp::MlpPlan, out: &mut CudaSlice<f16>| match call {
                0 => plan.launch(&gpu, &x_bf16, fixed, &w1, &w3, &w2, gh, out),
                _ => plan.launch(&gpu, &x_f32, fixed, &w1, &w3, &w2, gh, out),
            };
            quantize(&mut xq, &mut checks).unwrap();
            launch(&mut plan, &mut got).unwrap();
            dual.launch_nvfp4(&gpu, &xq, &w1, &w3, &mut h, gh).unwrap();
            down.launch(&gpu, &h, &w2, &mut want).unwrap();
            // The op's own x and h against the calls' (where a difference starts).
            let bytes = |m: &nvfp4::gpu::DeviceNvFp4Matrix| {
                let m = gpu.download(m).unwrap();
                [m.data().to_vec(), m.scales().to_vec()].concat()
            };
            let differing_bytes = |x: Vec<u8>, y: Vec<u8>| x.iter().zip(&y).filter(|(x, y)| x != y).count();
            let x_bytes = differing_bytes(bytes(plan.quantized_input()), bytes(&xq));
            let h_bytes = differing_bytes(bytes(plan.hidden_activations()), bytes(&h));
            assert_eq!(plan.first_non_finite(&gpu).unwrap(), None);
            let (got, want) = (
                stream.clone_dtoh(&got).unwrap(),
                stream.clone_dtoh(&want).unwrap(),
            );
            let differing = got
                .iter()
                .zip(&want)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            let nan = want.iter().filter(|v| v.is_nan()).count();
            println!(
                "MLP {tokens:>5} × {hidden:>5} → {intermediate:>5}, call {call}: {:?}, \
                 {differing} of {} outputs differ from the three calls ({nan} NaN); \
                 x {x_bytes}, h {h_bytes} bytes differ",
                plan.token_hand_on(),
                got.len()
            );
            if differing > 0 {
                // Where it fails: the same launch with plain launches.
                plan.set_programmatic_launch(false).unwrap();
                let mut plain: CudaSlice<f16> = stream.clone_htod(&vec![f16::NAN; tokens * hidden]).unwrap();
                launch(&mut plan, &mut plain).unwrap();
                plan.set_programmatic_launch(true).unwrap();
                let plain = stream.clone_dtoh(&plain).unwrap();
                let plain_differing = plain
                    .iter()
                    .zip(&want)
                    .filter(|(x, y)| x.to_bits() != y.to_bits())
                    .count();
                let first = got
                    .iter()
                    .zip(&want)
                    .position(|(x, y)| x.to_bits() != y.to_bits());
                println!("    plain launches: {plain_differing} differ; first difference at {first:?}");
            }
            if differing + nan + x_bytes + h_bytes > 0 {
                failures.push(format!(
                    "{tokens}×{hidden}→{intermediate} call {call}: {differing} differ, {nan} NaN, \
                     x {x_bytes} and h {h_bytes} bytes differ"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The MLP op refuses a shape the GEMMs do not take, weights of the wrong shape, an output of
/// the wrong length and an `Auto` input scale, before it enqueues anything, and a token
/// hand-on its kernels cannot do.
fn the_mlp_op_rejects_bad_operands() {
    let Some(gpu) = dual_gemm_gpu_or_skip() else {
        return;
    };
    let (tokens, hidden, intermediate) = (4, 128, 192);
    assert!(matches!(
        gpu.plan_mlp(MlpShape {
            tokens,
            hidden: 100,
            intermediate
        }),
        Err(Error::InvalidArgument { .. })
    ));
    let mut plan = gpu
        .plan_mlp(MlpShape {
            tokens,
            hidden,
            intermediate,
        })
        .unwrap();
    let mut rng = Rng::new(3);
    let upload = |rows, k, rng: &mut Rng| gpu.upload(&weight(rows, k, 1.0, rng)).unwrap();
    let (w1, w3, w2) = (
        upload(intermediate, hidden, &mut rng),
        upload(intermediate, hidden, &mut rng),
        upload(hidden, intermediate, &mut rng),
    );
    let stream = gpu.stream().clone();
    let x = stream.clone_htod(&vec![f16::ONE; tokens * hidden]).unwrap();
    let mut out: CudaSlice<f16> = stream.clone_htod(&vec![f16::ZERO; tokens * hidden]).unwrap();
    let fixed = GlobalScale::Fixed(1.0);
    assert!(matches!(
        plan.launch(&gpu, &x, fixed, &w2, &w3, &w2, 1.0, &mut out),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        plan.launch(&gpu, &x, GlobalScale::Auto, &w1, &w3, &w2, 1.0, &mut out),
        Err(Error::InvalidArgument { arg: "global", .. })
    ));
    let mut short: CudaSlice<f16> = stream.clone_htod(&vec![f16::ZERO; tokens]).unwrap();
    assert!(matches!(
        plan.launch(&gpu, &x, fixed, &w1, &w3, &w2, 1.0, &mut short),
        Err(Error::BufferLength { arg: "out", .. })
    ));
    let x_short = stream.clone_htod(&vec![f16::ONE; tokens]).unwrap();
    assert!(matches!(
        plan.launch(&gpu, &x_short, fixed, &w1, &w3, &w2, 1.0, &mut out),
        Err(Error::BufferLength { arg: "x", .. })
    ));
    // Four tokens: decode-size kernels, which hand nothing on.
    assert!(matches!(
        plan.set_token_hand_on(TokenHandOn { x: true, h: false }),
        Err(Error::InvalidArgument { .. })
    ));
    plan.launch(&gpu, &x, fixed, &w1, &w3, &w2, 1.0, &mut out)
        .unwrap();
    stream.synchronize().unwrap();
}

test_main!(
    the_mlp_op_is_its_three_calls_made_one_by_one_bit_for_bit,
    the_mlp_op_rejects_bad_operands,
    the_nvfp4_output_is_the_quantized_fp16_output_bit_for_bit,
    the_plain_gemm_matches_the_reference_on_every_tile_and_decode_size,
    launches_after_a_launch_stopped_mid_way_are_right,
    a_collector_reuse_and_discard_both_match_the_reference,
    matches_the_reference_on_the_benchmark_shapes,
    matches_the_reference_on_the_reference_correctness_shapes,
    matches_the_reference_for_decode_and_odd_token_counts,
    matches_the_reference_on_small_token_tiles_whole_and_split,
    matches_the_reference_for_k_multiples_of_64_with_a_partial_last_stage,
    same_inputs_give_bitwise_identical_outputs,
    back_to_back_programmatic_launches_match_the_reference_and_plain_launches,
    launch_rejects_operands_that_do_not_match_the_plan,
);
