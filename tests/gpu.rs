//! The GPU runtime: architecture selection, typed errors without a driver, and the NVFP4 →
//! fp16/bf16 dequantization kernel against the CPU decoder, bit for bit. GPU tests are skipped
//! with a printed reason when no supported GPU is present (`NVFP4_REQUIRE_GPU=1` makes that fail).

mod common;

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use nvfp4::gpu::{Arch, Gpu, driver_available};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{BlockedScales, Distribution, Error, NvFp4Matrix};

fn compute_capability_selects_the_kernel_architecture() {
    assert_eq!(Arch::from_compute_capability("H100", 9, 0).unwrap(), Arch::Sm90a);
    assert_eq!(
        Arch::from_compute_capability("B200", 10, 0).unwrap(),
        Arch::Sm100f
    );
    assert_eq!(
        Arch::from_compute_capability("B300", 10, 3).unwrap(),
        Arch::Sm100f
    );
    for (major, minor) in [(8, 0), (8, 9), (12, 0), (7, 5)] {
        let err = Arch::from_compute_capability("other", major, minor).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedGpu { .. }),
            "{major}.{minor}: {err:?}"
        );
        assert!(
            err.to_string().contains("CPU reference"),
            "the error must name the CPU fallback: {err}"
        );
    }
}

fn opening_a_gpu_without_a_driver_is_a_typed_error() {
    if driver_available() {
        common::skip_because(
            "opening_a_gpu_without_a_driver_is_a_typed_error",
            "a CUDA driver is installed here",
        );
        return;
    }
    assert!(matches!(Gpu::open(0), Err(Error::NoDriver)));
}

fn matrices_round_trip_through_device_memory() {
    let Some(gpu) = common::gpu_or_skip("matrices_round_trip_through_device_memory") else {
        return;
    };
    let m = random_matrix(130, 272, Distribution::FullRange, &mut Rng::new(1)).unwrap();
    let back = gpu.download(&gpu.upload(&m).unwrap()).unwrap();
    assert_eq!(back, m);
}

/// Random data bytes and *every* scale byte (negative, NaN and padding included), with a global
/// scale: the dequantizer is element-wise, so it must reproduce the CPU for all of them.
fn all_codes_matrix(rows: usize, k: usize, rng: &mut Rng) -> NvFp4Matrix {
    let mut data = vec![0u8; rows * k / 2];
    let mut scales = vec![0u8; BlockedScales::new(rows, k).len()];
    rng.fill(&mut data);
    rng.fill(&mut scales);
    NvFp4Matrix::from_parts(rows, k, data, scales, Some(0.3)).unwrap()
}

fn f16_is_nan(bits: u16) -> bool {
    bits & 0x7C00 == 0x7C00 && bits & 0x3FF != 0
}

fn bf16_is_nan(bits: u16) -> bool {
    bits & 0x7F80 == 0x7F80 && bits & 0x7F != 0
}

/// Identical bits everywhere, except that NaN only has to meet NaN (payloads differ by design).
fn assert_same_bits(what: &str, gpu: &[u16], cpu: &[u16], is_nan: fn(u16) -> bool) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: length");
    let bad: Vec<usize> = (0..cpu.len())
        .filter(|&i| !(gpu[i] == cpu[i] || (is_nan(gpu[i]) && is_nan(cpu[i]))))
        .collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{what}: {} of {} elements differ; first at {i}: gpu {:#06x}, cpu {:#06x}",
            bad.len(),
            cpu.len(),
            gpu[i],
            cpu[i]
        );
    }
}

fn dequantization_matches_the_cpu_decoder_bit_for_bit() {
    let Some(gpu) = common::gpu_or_skip("dequantization_matches_the_cpu_decoder_bit_for_bit") else {
        return;
    };
    let mut rng = Rng::new(2026);
    let shapes = [(1, 16), (7, 64), (129, 272), (300, 7168), (4096, 7168)];
    let mut checked = 0;
    for (rows, k) in shapes {
        let matrices = [
            (
                "task",
                random_matrix(rows, k, Distribution::Task, &mut rng).unwrap(),
            ),
            (
                "full range",
                random_matrix(rows, k, Distribution::FullRange, &mut rng).unwrap(),
            ),
            ("all codes", all_codes_matrix(rows, k, &mut rng)),
        ];
        for (name, m) in &matrices {
            let what = format!("{rows}×{k} {name}");
            let device = gpu.upload(m).unwrap();
            let cpu_f16: Vec<u16> = m.dequantize_f16().iter().map(|v| v.to_bits()).collect();
            let cpu_bf16: Vec<u16> = m.dequantize_bf16().iter().map(|v| v.to_bits()).collect();
            // Two poisons: a NaN (catches unwritten finite outputs) and a finite value (catches
            // unwritten NaN outputs).
            for poison in [0xFFFFu16, 0x3C01] {
                let mut out: CudaSlice<f16> = gpu
                    .stream()
                    .clone_htod(&vec![f16::from_bits(poison); rows * k])
                    .unwrap();
                gpu.dequantize_f16_into(&device, &mut out).unwrap();
                let got: Vec<u16> = gpu
                    .stream()
                    .clone_dtoh(&out)
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                assert_same_bits(
                    &format!("{what} fp16, poison {poison:#06x}"),
                    &got,
                    &cpu_f16,
                    f16_is_nan,
                );

                let mut out: CudaSlice<bf16> = gpu
                    .stream()
                    .clone_htod(&vec![bf16::from_bits(poison); rows * k])
                    .unwrap();
                gpu.dequantize_bf16_into(&device, &mut out).unwrap();
                let got: Vec<u16> = gpu
                    .stream()
                    .clone_dtoh(&out)
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                assert_same_bits(
                    &format!("{what} bf16, poison {poison:#06x}"),
                    &got,
                    &cpu_bf16,
                    bf16_is_nan,
                );
            }
            checked += 2 * rows * k;
        }
    }
    println!(
        "dequantization: {checked} elements identical to the CPU decoder on {}",
        gpu.name()
    );
}

fn dequantization_rejects_an_output_of_the_wrong_length() {
    let Some(gpu) = common::gpu_or_skip("dequantization_rejects_an_output_of_the_wrong_length") else {
        return;
    };
    let m = gpu
        .upload(&random_matrix(4, 32, Distribution::Task, &mut Rng::new(3)).unwrap())
        .unwrap();
    let mut out: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::ZERO; 4 * 32 - 1]).unwrap();
    assert!(matches!(
        gpu.dequantize_f16_into(&m, &mut out),
        Err(Error::BufferLength { arg: "out", .. })
    ));
}

test_main!(
    compute_capability_selects_the_kernel_architecture,
    opening_a_gpu_without_a_driver_is_a_typed_error,
    matrices_round_trip_through_device_memory,
    dequantization_matches_the_cpu_decoder_bit_for_bit,
    dequantization_rejects_an_output_of_the_wrong_length,
);
