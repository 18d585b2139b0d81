//! Bandwidth of the NVFP4 → fp16 dequantization kernel against a device-to-device copy, both
//! timed with CUDA events in the same run (`cargo bench --bench dequantize`). Prints why it is
//! skipped when no supported GPU is present.
//!
//! Method: 8 distinct 4096 × 7168 matrices (a B operand of the benchmark shapes), 50 back-to-back
//! launches cycling through them between one event pair (launch cost included), best of 5 such
//! batches. Bytes counted: fp4 data + scales read, fp16 written. Copy: a 1 GiB buffer copied
//! device to device, counted as read + write.

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4::gpu::{DeviceNvFp4Matrix, Gpu};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{Distribution, Result};

const ROWS: usize = 4096;
const K: usize = 7168;
const INPUT_SETS: usize = 8;
const LAUNCHES: usize = 50;
const BATCHES: usize = 5;

fn main() {
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("dequantize bench skipped: {e}");
            return;
        }
    };
    if let Err(e) = run(&gpu) {
        eprintln!("dequantize bench failed: {e}");
        std::process::exit(1);
    }
}

/// Best time in ms of `BATCHES` batches of `LAUNCHES` calls of `work(i)` between two events.
fn time_ms(gpu: &Gpu, mut work: impl FnMut(usize) -> Result<()>) -> Result<f64> {
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    work(0)?; // warm-up
    let mut best = f64::INFINITY;
    for _ in 0..BATCHES {
        let start = gpu.stream().record_event(timing)?;
        for i in 0..LAUNCHES {
            work(i)?;
        }
        let end = gpu.stream().record_event(timing)?;
        end.synchronize()?;
        best = best.min(start.elapsed_ms(&end)? as f64 / LAUNCHES as f64);
    }
    Ok(best)
}

fn run(gpu: &Gpu) -> Result<()> {
    let mut rng = Rng::new(42);
    let inputs: Vec<DeviceNvFp4Matrix> = (0..INPUT_SETS)
        .map(|_| gpu.upload(&random_matrix(ROWS, K, Distribution::Task, &mut rng)?))
        .collect::<Result<_>>()?;
    let mut outputs: Vec<CudaSlice<f16>> = (0..INPUT_SETS)
        .map(|i| gpu.dequantize_f16(&inputs[i]))
        .collect::<Result<_>>()?;
    let dequant_ms = time_ms(gpu, |i| {
        gpu.dequantize_f16_into(&inputs[i % INPUT_SETS], &mut outputs[i % INPUT_SETS])
    })?;
    let bytes = (ROWS * K / 2 + inputs[0].scales_buffer().len() + ROWS * K * 2) as f64;

    let copy_bytes = 1usize << 30;
    let source: CudaSlice<u8> = gpu.stream().alloc_zeros(copy_bytes)?;
    let mut target: CudaSlice<u8> = gpu.stream().alloc_zeros(copy_bytes)?;
    let copy_ms = time_ms(gpu, |_| Ok(gpu.stream().memcpy_dtod(&source, &mut target)?))?;
    let copy_bandwidth = 2.0 * copy_bytes as f64 / copy_ms / 1e6;
    let dequant_bandwidth = bytes / dequant_ms / 1e6;

    println!(
        "device: {} ({:?}, {} SMs)",
        gpu.name(),
        gpu.arch(),
        gpu.multiprocessors()
    );
    println!("| what | time (µs) | GB/s | of copy bandwidth |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| device copy 1 GiB (read + write) | {:.1} | {copy_bandwidth:.0} | 100 % |",
        copy_ms * 1e3
    );
    println!(
        "| dequantize {ROWS}×{K} → fp16 | {:.1} | {dequant_bandwidth:.0} | {:.0} % |",
        dequant_ms * 1e3,
        100.0 * dequant_bandwidth / copy_bandwidth
    );
    Ok(())
}
