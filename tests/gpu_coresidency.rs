//! The stream-K kernels finish on however few multiprocessors they get: a reducer only waits
//! for CTAs that started before it (`nvfp4_kernel::schedule::StreamK`). Here another kernel, on
//! another stream, holds all but a few SMs (one block per SM with all of its shared memory,
//! spinning until released) while the dual GEMM runs: with waits on CTAs that never got an SM,
//! the GEMM would hang until the other kernel ends, and this test releases that kernel only
//! after the GEMM has finished or a time limit has passed. Skipped without a supported GPU.

mod common;

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, result};
use half::f16;
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{Distribution, DualGemmShape, Problem};

/// How long the GEMM may take on a few SMs before it counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(20);

fn read_word(buffer: &CudaSlice<u32>, stream: &cudarc::driver::CudaStream) -> u32 {
    let (address, _guard) = buffer.device_ptr(stream);
    let mut word = [0u32];
    // SAFETY: a one-word device allocation; a synchronous copy on the legacy stream, which does
    // not wait for the non-blocking stream the spinning kernel runs on.
    unsafe { result::memcpy_dtoh_sync(&mut word, address) }.unwrap();
    word[0]
}

fn stream_k_gemms_finish_on_a_few_multiprocessors_beside_a_kernel_that_holds_the_rest() {
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let context = gpu.stream().context().clone();
    // Stream-K splits (every tile shared by CTAs that wait for each other) and one whole-tile case.
    let shapes = [
        (1, 4096, 7168),
        (16, 3072, 7168),
        (64, 4096, 2880),
        (256, 3072, 4096),
        (256, 4096, 7168),
    ];
    for free in [1u32, 8] {
        for (m, n, k) in shapes {
            let shape = DualGemmShape { m, n, k };
            let problem = Problem::random(shape, Distribution::Task, (m + n + k) as u64).unwrap();
            let plan = gpu.plan_dual_gemm(shape).unwrap();
            let (a, b1, b2) = (
                gpu.upload(&problem.a).unwrap(),
                gpu.upload(&problem.b1).unwrap(),
                gpu.upload(&problem.b2).unwrap(),
            );
            let mut c: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::NAN; m * n]).unwrap();
            let release = gpu.stream().alloc_zeros::<u32>(1).unwrap();
            let started = gpu.stream().alloc_zeros::<u32>(1).unwrap();
            gpu.stream().synchronize().unwrap();

            let holder = context.new_stream().unwrap();
            let releaser = context.new_stream().unwrap();
            let blocks = gpu.multiprocessors() - free;
            // SAFETY: both words live until the end of this iteration, after the holder's
            // stream is synchronized; `release` is written below on every path.
            unsafe { gpu.occupy_multiprocessors(&holder, blocks, &release, &started) }.unwrap();
            let since = Instant::now();
            while read_word(&started, gpu.stream()) < blocks && since.elapsed() < HANG_LIMIT {
                std::thread::sleep(Duration::from_millis(1));
            }
            let holding = read_word(&started, gpu.stream());

            let start = Instant::now();
            plan.launch(&gpu, &a, &b1, &b2, &mut c).unwrap();
            let done = gpu.stream().record_event(None).unwrap();
            while !done.try_is_complete().unwrap() && start.elapsed() < HANG_LIMIT {
                std::thread::sleep(Duration::from_millis(1));
            }
            let finished = done.try_is_complete().unwrap();
            let took = start.elapsed();
            {
                let (address, _guard) = release.device_ptr(&releaser);
                // SAFETY: one device word; the holder spins until it reads non-zero.
                unsafe { result::memset_d8_async(address, 1, 4, releaser.cu_stream()) }.unwrap();
            }
            releaser.synchronize().unwrap();
            holder.synchronize().unwrap();
            gpu.stream().synchronize().unwrap();
            assert_eq!(holding, blocks, "the holding kernel did not occupy {blocks} SMs");
            assert!(
                finished,
                "{m}×{n}×{k} on {free} free SMs: not finished after {HANG_LIMIT:?} (hang)"
            );
            let got = gpu.stream().clone_dtoh(&c).unwrap();
            let want = reference::dual_gemm(&problem.a, &problem.b1, &problem.b2).unwrap();
            let report = reference::check(&got, &want, n, TASK_TOLERANCE).unwrap();
            println!(
                "{m:>4} × {n:>4} × {k:>4}, grid {:>3}, {free} free SMs: finished in {:.1} ms, {report}",
                plan.tile_and_grid().1,
                took.as_secs_f64() * 1e3
            );
            assert!(report.passed(), "{m}×{n}×{k}: {report}");
        }
    }
}

test_main!(stream_k_gemms_finish_on_a_few_multiprocessors_beside_a_kernel_that_holds_the_rest,);
