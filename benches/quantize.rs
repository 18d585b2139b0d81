//! Bandwidth of the GPU quantizer (f32 / f16 / bf16 → NVFP4) against a device-to-device copy,
//! both measured in the same run (`cargo bench --bench quantize`); prints why it is skipped
//! without a supported GPU.
//!
//! Method (`benches/common`): a 4096 × 7168 input (an activation of the benchmark shapes), 8
//! distinct input sets, `Gpu::quantize_into` (fixed global scale: one pass, no waiting) back to
//! back, the L2 flushed before each batch, batches until the mean is known to 0.5 %. Bytes
//! counted: the input read, packed data and scales written. The `Auto` global scale adds an amax
//! pass (a second read) and one wait per call (`Gpu::quantize`): timed too, per call.

mod common;

use common::{BenchResult, time_calls};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use nvfp4::gpu::{DeviceQuantizeInput, Gpu};
use nvfp4::problem::Rng;
use nvfp4::{BlockedScales, GlobalScale};

const ROWS: usize = 4096;
const K: usize = 7168;
const SETS: usize = 8;
const MAX_SECONDS: f64 = 2.0;

fn main() {
    common::run_on_gpu("quantize", |_| None, run);
}

/// µs per call of the enqueue-only quantizer and of the waiting one with `Auto`, for `T`.
fn time_type<T: DeviceQuantizeInput>(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    convert: impl Fn(f32) -> T,
) -> BenchResult<(f64, f64)> {
    let mut rng = Rng::new(5);
    let inputs: Vec<CudaSlice<T>> = (0..SETS)
        .map(|_| {
            let values: Vec<T> = (0..ROWS * K)
                .map(|_| convert(rng.next_f32() * 8.0 - 4.0))
                .collect();
            gpu.stream().clone_htod(&values)
        })
        .collect::<Result<_, _>>()?;
    let mut outputs = (0..SETS)
        .map(|_| gpu.alloc_nvfp4(ROWS, K))
        .collect::<nvfp4::Result<Vec<_>>>()?;
    let mut checks = gpu.quantize_checks()?;
    let fixed = time_calls(gpu, flush, SETS, MAX_SECONDS, |i| {
        Ok(gpu.quantize_into(&inputs[i], &mut outputs[i], GlobalScale::Fixed(0.01), &mut checks)?)
    })?;
    checks.result(gpu, &inputs[SETS - 1])?;
    let auto = time_calls(gpu, flush, SETS, MAX_SECONDS, |i| {
        gpu.quantize(ROWS, K, &inputs[i], GlobalScale::Auto)?;
        Ok(())
    })?;
    Ok((fixed.us, auto.us))
}

fn run(gpu: &Gpu) -> BenchResult<()> {
    let mut flush: CudaSlice<u8> = gpu.stream().alloc_zeros(common::FLUSH_BYTES)?;
    let bytes = 1usize << 30;
    let source: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let mut target: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let copy = time_calls(gpu, &mut flush, 3, MAX_SECONDS, |_| {
        Ok(gpu.stream().memcpy_dtod(&source, &mut target)?)
    })?;
    drop((source, target));
    let copy_gbs = 2.0 * bytes as f64 / copy.us / 1e3;
    println!(
        "device: {}; copy {copy_gbs:.0} GB/s (read + write), measured now; {ROWS} × {K}, {SETS} input sets",
        gpu.name()
    );
    println!(
        "\n| input | quantize_into µs | GB/s | of copy | quantize (Auto, waits) µs |\n| --- | --- | --- | --- | --- |"
    );
    let written = ROWS * K / 2 + BlockedScales::new(ROWS, K).len();
    for (name, element_bytes, (fixed, auto)) in [
        ("f32", 4, time_type(gpu, &mut flush, |x| x)?),
        ("f16", 2, time_type(gpu, &mut flush, f16::from_f32)?),
        ("bf16", 2, time_type(gpu, &mut flush, bf16::from_f32)?),
    ] {
        let gbs = (ROWS * K * element_bytes + written) as f64 / fixed / 1e3;
        println!(
            "| {name} | {fixed:.1} | {gbs:.0} | {:.0} % | {auto:.1} |",
            100.0 * gbs / copy_gbs
        );
    }
    Ok(())
}
