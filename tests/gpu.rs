//! The GPU runtime: architecture selection, typed errors without a driver, the NVFP4 →
//! fp16/bf16 dequantization kernel against the CPU decoder and the GPU quantizer against the CPU
//! quantizer, bit for bit. GPU tests are skipped
//! with a printed reason when no supported GPU is present (`NVFP4_REQUIRE_GPU=1` makes that fail).

mod common;

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use nvfp4::codec::e4m3_to_f32;
use nvfp4::gpu::{Arch, Gpu, driver_available};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::quantize::DeviceQuantizeInput;
use nvfp4::{BlockedScales, Distribution, Error, GlobalScale, NvFp4Matrix};

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
        common::skip_because("a CUDA driver is installed here");
        return;
    }
    assert!(matches!(Gpu::open(0), Err(Error::NoDriver)));
}

fn matrices_round_trip_through_device_memory() {
    let Some(gpu) = common::gpu_or_skip() else {
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
    let Some(gpu) = common::gpu_or_skip() else {
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
    let Some(gpu) = common::gpu_or_skip() else {
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

/// Values over the whole f32 range, block by block: zero blocks, blocks far below and far above
/// what e4m3 scales cover without a global scale (they underflow or saturate with `None`),
/// blocks of mixed magnitudes (random exponents from 2^-e to 2^e, e = `max_exponent`: f16
/// needs 15 to stay finite), values on e2m1 midpoints and a few ulp around them, and signed
/// zeros.
fn full_range_values(len: usize, max_exponent: f32, rng: &mut Rng) -> Vec<f32> {
    let mut values = Vec::with_capacity(len);
    while values.len() < len {
        let kind = rng.next_u64() % 8;
        // Kind 7: a block whose amax is 6 × an e4m3 midpoint (normal or subnormal), so that
        // amax / 6 (global scale 1) is an exact tie for the scale's rounding.
        let tie = {
            let code = (rng.next_u64() % 0x7D) as u8; // below 0x7E: a next code exists
            (e4m3_to_f32(code) + e4m3_to_f32(code + 1)) / 2.0 * 6.0
        };
        for i in 0..16 {
            let sign = if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
            let magnitude = match kind {
                0 => 0.0,
                1 => 1e-6 * (1.0 + rng.next_f32()),
                2 => 3e3 * (1.0 + rng.next_f32()),
                3 => (rng.next_f32() * 2.0 * max_exponent - max_exponent).exp2(),
                // e2m1 midpoints times a power of two: ties for the encoder.
                4 => {
                    [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0][i % 8]
                        * 2f32.powi((rng.next_u64() % 9) as i32 - 4)
                }
                // A few ulp around midpoints: where a quotient computed another way could
                // round to the other side.
                5 => {
                    let m = [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0][i % 8];
                    let ulps = (rng.next_u64() % 7) as i32 - 3;
                    f32::from_bits((m.to_bits() as i32 + ulps) as u32)
                        * 2f32.powi((rng.next_u64() % 5) as i32 - 2)
                }
                7 if i == 0 => tie,
                7 => tie * rng.next_f32(),
                _ => rng.next_f32() * 4.0,
            };
            values.push(if i % 7 == 3 && kind == 0 {
                -0.0
            } else {
                sign * magnitude
            });
        }
    }
    values.truncate(len);
    values
}

/// The GPU quantizer of `values` (as `T`) against the host quantizer, bit for bit; true when
/// both gave a matrix (false: both gave the same error).
fn check_quantizer<T: DeviceQuantizeInput + std::fmt::Debug + Default>(
    gpu: &Gpu,
    what: &str,
    rows: usize,
    k: usize,
    values: &[T],
    global: GlobalScale,
) -> bool {
    let device_values = gpu.stream().clone_htod(values).unwrap();
    let cpu = NvFp4Matrix::quantize(rows, k, values, global);
    // The enqueue-only form into a reused matrix (not for `Auto`), then the waiting one.
    let mut checks = gpu.quantize_checks().unwrap();
    // Every output byte poisoned first, scale padding included (the kernel writes its zeros).
    let mut out = gpu
        .upload(&all_codes_matrix(rows, k, &mut Rng::new((rows * k) as u64)))
        .unwrap();
    let enqueued = gpu.quantize_into(&device_values, &mut out, global, &mut checks);
    if global == GlobalScale::Auto {
        assert!(
            matches!(enqueued, Err(Error::InvalidArgument { arg: "global", .. })),
            "{what}"
        );
    } else {
        enqueued.unwrap();
        match (&cpu, checks.result(gpu, &device_values)) {
            (Ok(cpu), Ok(())) => {
                let got = gpu.download(&out).unwrap();
                assert!(
                    got.data() == cpu.data() && got.scales() == cpu.scales(),
                    "{what}: quantize_into differs"
                );
                assert_eq!(
                    got.global_scale(),
                    cpu.global_scale(),
                    "{what}: quantize_into scale"
                );
            }
            (Err(cpu), Err(got)) => assert_eq!(format!("{got:?}"), format!("{cpu:?}"), "{what}"),
            (cpu, got) => panic!("{what}: CPU {cpu:?}, quantize_into {got:?}"),
        }
        // The check words need no clearing between launches: zeros after a finite input,
        // whatever the launch before found.
        let zeros = gpu.stream().clone_htod(&vec![T::default(); rows * k]).unwrap();
        gpu.quantize_into(&zeros, &mut out, global, &mut checks).unwrap();
        assert_eq!(
            checks.first_non_finite(gpu).unwrap(),
            None,
            "{what}: after a finite launch"
        );
    }
    let got = gpu.quantize(rows, k, &device_values, global);
    match (cpu, got) {
        (Ok(cpu), Ok(got)) => {
            let got = gpu.download(&got).unwrap();
            assert_eq!(
                got.global_scale().map(f32::to_bits),
                cpu.global_scale().map(f32::to_bits),
                "{what}: global scale"
            );
            assert!(got.scales() == cpu.scales(), "{what}: scales differ");
            if let Some(i) = (0..cpu.data().len()).find(|&i| got.data()[i] != cpu.data()[i]) {
                panic!(
                    "{what}: data byte {i} (row {}, column {}): GPU {:#04x}, CPU {:#04x}",
                    i / (k / 2),
                    2 * (i % (k / 2)),
                    got.data()[i],
                    cpu.data()[i]
                );
            }
            true
        }
        (Err(cpu), Err(got)) => {
            assert_eq!(format!("{got:?}"), format!("{cpu:?}"), "{what}: errors");
            false
        }
        (cpu, got) => panic!("{what}: CPU {cpu:?}, GPU {:?}", got.map(|_| "a matrix")),
    }
}

fn gpu_quantizer_is_bit_identical_to_the_cpu_quantizer() {
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = Rng::new(77);
    let shapes = [(1, 16), (7, 48), (129, 64), (300, 2880), (64, 7168)];
    let globals = [GlobalScale::None, GlobalScale::Auto, GlobalScale::Fixed(0.37)];
    for (rows, k) in shapes {
        let values = full_range_values(rows * k, 30.0, &mut rng);
        let halves: Vec<f16> = full_range_values(rows * k, 15.0, &mut rng)
            .iter()
            .map(|&v| f16::from_f32(v))
            .collect();
        let brains: Vec<bf16> = values.iter().map(|&v| bf16::from_f32(v)).collect();
        for global in globals {
            let what = |t: &str| format!("{rows}×{k} {t} {global:?}");
            assert!(check_quantizer(&gpu, &what("f32"), rows, k, &values, global));
            assert!(check_quantizer(&gpu, &what("f16"), rows, k, &halves, global));
            assert!(check_quantizer(&gpu, &what("bf16"), rows, k, &brains, global));
        }
    }
    // Non-finite inputs: the same error, naming the first such element.
    let (rows, k) = (9, 64);
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut values = full_range_values(rows * k, 30.0, &mut rng);
        values[300] = bad;
        values[451] = f32::NAN;
        for global in globals {
            check_quantizer(
                &gpu,
                &format!("{bad} at 300, {global:?}"),
                rows,
                k,
                &values,
                global,
            );
        }
    }
    // Reports from several CTAs of one launch (300 × 2880: many CTAs), and from the one CTA
    // of a decode step's row (1 × 4096): the smallest index wins, and the next launch's check
    // is clean again.
    for (rows, k, bad_at) in [
        (300, 2880, [7000, 100_000, 300 * 2880 - 5]),
        (1, 4096, [17, 2000, 4095]),
    ] {
        let mut values = full_range_values(rows * k, 30.0, &mut rng);
        for (at, bad) in bad_at
            .into_iter()
            .zip([f32::NEG_INFINITY, f32::NAN, f32::INFINITY])
        {
            values[at] = bad;
        }
        for global in [GlobalScale::None, GlobalScale::Fixed(0.37)] {
            check_quantizer(
                &gpu,
                &format!("{rows}×{k}, three CTAs' reports, {global:?}"),
                rows,
                k,
                &values,
                global,
            );
        }
    }
    // Global scales so extreme that the kernel divides instead of multiplying by a reciprocal
    // (divisors outside [2⁻⁹⁶, 2⁹⁶]) or saturates the scale (amax / 6 / g overflows to ∞), and
    // blocks on both sides of that switch (f32 only: the values need the f32 range).
    let (rows, k) = (33, 256);
    let base = full_range_values(rows * k, 20.0, &mut rng);
    for (multiplier, g) in [(1e32f32, 1e30f32), (1e-30, 1e-32), (1e30, 1e-30), (1e-20, 1e-27)] {
        let values: Vec<f32> = base.iter().map(|v| v * multiplier).collect();
        assert!(check_quantizer(
            &gpu,
            &format!("values × {multiplier:e}, global {g:e}"),
            rows,
            k,
            &values,
            GlobalScale::Fixed(g)
        ));
    }
    // An `Auto` global scale whose quotient underflows falls back to 1 on both sides.
    let mut tiny = vec![0f32; 2 * 32];
    tiny[5] = 1e-44;
    assert!(check_quantizer(
        &gpu,
        "tiny amax, Auto",
        2,
        32,
        &tiny,
        GlobalScale::Auto
    ));
    // Shapes and lengths are refused before launch.
    let values = gpu.stream().clone_htod(&[0f32; 64]).unwrap();
    assert!(matches!(
        gpu.quantize(2, 16, &values, GlobalScale::Auto),
        Err(Error::BufferLength { arg: "values", .. })
    ));
    assert!(matches!(
        gpu.quantize(1, 64, &values, GlobalScale::Fixed(-1.0)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        gpu.quantize(4, 15, &values, GlobalScale::None),
        Err(Error::InvalidArgument { .. })
    ));
    println!(
        "quantizer: bit-identical to the CPU on {} shapes × 3 types × 3 global scales",
        shapes.len()
    );
}

/// Every op on caller-owned memory (raw device addresses, as from PyTorch's `data_ptr()`) and a
/// borrowed stream: quantize → dual GEMM and plain GEMM, against the CPU quantizer (bit for bit)
/// and the reference (task tolerance); then the same chain captured once in a CUDA graph and
/// replayed on new activations.
fn caller_owned_memory_on_a_borrowed_stream_runs_every_op_and_captures_in_a_graph() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use nvfp4::gemm::GemmShape;
    use nvfp4::gpu::{F16Mut, HalfFormat, NvFp4Ref};
    use nvfp4::quantize::Element;
    use nvfp4::reference::{self, TASK_TOLERANCE};
    let Some(mut gpu) = common::gpu_or_skip() else {
        return;
    };
    // "Other code's" stream, lent to the library.
    let owner = gpu.stream().context().new_stream().unwrap();
    // SAFETY: `owner` is a stream of this context and outlives every launch below.
    unsafe { gpu.set_borrowed_stream(owner.cu_stream() as u64) }.unwrap();
    let stream = owner.clone();
    let (m, n, k) = (40usize, 256usize, 576usize);
    let mut rng = Rng::new(5);
    let (global_a, global_b1, global_b2) = (0.02f32, 0.5f32, 0.25f32);
    let with_global = |x: NvFp4Matrix, g: f32| {
        NvFp4Matrix::from_parts(x.rows(), x.k(), x.data().to_vec(), x.scales().to_vec(), Some(g)).unwrap()
    };
    let b1 = with_global(
        random_matrix(n, k, Distribution::Task, &mut rng).unwrap(),
        global_b1,
    );
    let b2 = with_global(
        random_matrix(n, k, Distribution::Task, &mut rng).unwrap(),
        global_b2,
    );
    // The caller's buffers.
    let mut x = stream.alloc_zeros::<f32>(m * k).unwrap();
    let mut a_data = stream.alloc_zeros::<u8>(m * k / 2).unwrap();
    let mut a_scales = stream.alloc_zeros::<u8>(BlockedScales::new(m, k).len()).unwrap();
    let b1_data = stream.clone_htod(b1.data()).unwrap();
    let b1_scales = stream.clone_htod(b1.scales()).unwrap();
    let b2_data = stream.clone_htod(b2.data()).unwrap();
    let b2_scales = stream.clone_htod(b2.scales()).unwrap();
    let mut c = stream.alloc_zeros::<f16>(m * n).unwrap();
    let mut c_plain = stream.alloc_zeros::<f16>(m * n).unwrap();
    let mut a_f16 = stream.alloc_zeros::<f16>(m * k).unwrap();
    let address = |b: &CudaSlice<u8>| b.device_ptr(&stream).0;
    let (x_ptr, a_data_ptr, a_scales_ptr) = (
        x.device_ptr_mut(&stream).0,
        a_data.device_ptr_mut(&stream).0,
        a_scales.device_ptr_mut(&stream).0,
    );
    let (c_ptr, c_plain_ptr, a_f16_ptr) = (
        c.device_ptr_mut(&stream).0,
        c_plain.device_ptr_mut(&stream).0,
        a_f16.device_ptr_mut(&stream).0,
    );
    // SAFETY (all views): the buffers above, sized for their shapes, outlive every launch.
    let a_ref = unsafe { NvFp4Ref::from_raw(a_data_ptr, a_scales_ptr, m, k, Some(global_a)) }.unwrap();
    let b1_ref =
        unsafe { NvFp4Ref::from_raw(address(&b1_data), address(&b1_scales), n, k, Some(global_b1)) }.unwrap();
    let b2_ref =
        unsafe { NvFp4Ref::from_raw(address(&b2_data), address(&b2_scales), n, k, Some(global_b2)) }.unwrap();
    let dual = gpu.plan_dual_gemm(nvfp4::DualGemmShape { m, n, k }).unwrap();
    let plain = gpu.plan_gemm(GemmShape { m, n, k }).unwrap();
    let mut checks = gpu.quantize_checks().unwrap();
    let run = |gpu: &Gpu, checks: &mut nvfp4::quantize::QuantizeChecks| {
        // SAFETY: as above.
        unsafe {
            gpu.quantize_raw(
                Element::F32,
                x_ptr,
                m,
                k,
                a_data_ptr,
                a_scales_ptr,
                GlobalScale::Fixed(global_a),
                checks,
            )
        }
        .unwrap();
        let out = |ptr| unsafe { F16Mut::from_raw(ptr, m * n) }.unwrap();
        dual.launch_views(gpu, a_ref, b1_ref, b2_ref, out(c_ptr)).unwrap();
        plain.launch_views(gpu, a_ref, b1_ref, out(c_plain_ptr)).unwrap();
        // SAFETY: `a_f16` holds m × k fp16.
        unsafe { gpu.dequantize_raw(a_ref, HalfFormat::F16, a_f16_ptr) }.unwrap();
    };
    let check = |values: &[f32], what: &str, c: &CudaSlice<f16>, c_plain: &CudaSlice<f16>| {
        let a = NvFp4Matrix::quantize(m, k, values, GlobalScale::Fixed(global_a)).unwrap();
        assert_eq!(
            stream.clone_dtoh(&a_data).unwrap(),
            a.data(),
            "{what}: quantized data"
        );
        assert_eq!(
            stream.clone_dtoh(&a_scales).unwrap(),
            a.scales(),
            "{what}: quantized scales"
        );
        let decoded = stream.clone_dtoh(&a_f16).unwrap();
        assert_eq!(decoded, a.dequantize_f16(), "{what}: dequantized");
        for (name, got, expected) in [
            ("dual GEMM", c, reference::dual_gemm(&a, &b1, &b2).unwrap()),
            ("GEMM", c_plain, reference::gemm(&a, &b1).unwrap()),
        ] {
            let got = stream.clone_dtoh(got).unwrap();
            let report = reference::check(&got, &expected, n, TASK_TOLERANCE).unwrap();
            assert!(report.passed(), "{what}: {name}: {report}");
        }
    };
    let draw = |rng: &mut Rng| {
        (0..m * k)
            .map(|_| 4.0 * rng.next_f32() - 2.0)
            .collect::<Vec<f32>>()
    };
    let first = draw(&mut rng);
    stream.memcpy_htod(&first, &mut x).unwrap();
    run(&gpu, &mut checks);
    assert_eq!(checks.first_non_finite(&gpu).unwrap(), None);
    check(&first, "direct", &c, &c_plain);
    // Captured once, replayed on new activations.
    stream
        .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    run(&gpu, &mut checks);
    let graph = stream
        .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    for replay in 0..3 {
        let values = draw(&mut rng);
        stream.memcpy_htod(&values, &mut x).unwrap();
        stream.memcpy_htod(&vec![f16::NAN; m * n], &mut c).unwrap();
        stream.memcpy_htod(&vec![f16::NAN; m * n], &mut c_plain).unwrap();
        graph.launch().unwrap();
        check(&values, &format!("replay {replay}"), &c, &c_plain);
    }
    // Views check what they can: alignment, shape, global scale; plans check shapes.
    assert!(unsafe { NvFp4Ref::from_raw(a_data_ptr + 8, a_scales_ptr, m, k, None) }.is_err());
    assert!(unsafe { NvFp4Ref::from_raw(a_data_ptr, a_scales_ptr, m, 40, None) }.is_err());
    assert!(unsafe { NvFp4Ref::from_raw(a_data_ptr, a_scales_ptr, m, k, Some(f32::NAN)) }.is_err());
    assert!(matches!(
        dual.launch_views(
            &gpu,
            b1_ref,
            b1_ref,
            b2_ref,
            unsafe { F16Mut::from_raw(c_ptr, m * n) }.unwrap()
        ),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        dual.launch_views(
            &gpu,
            a_ref,
            b1_ref,
            b2_ref,
            unsafe { F16Mut::from_raw(c_ptr, m * n - 1) }.unwrap()
        ),
        Err(Error::BufferLength { arg: "c", .. })
    ));
    println!(
        "caller-owned memory, borrowed stream: quantize, dual GEMM, GEMM, dequantize direct and in 3 graph replays"
    );
}

/// A random matrix of the reference harness's distribution, uploaded.
fn upload_task(gpu: &Gpu, rows: usize, k: usize, rng: &mut Rng) -> nvfp4::gpu::DeviceNvFp4Matrix {
    gpu.upload(&random_matrix(rows, k, Distribution::Task, rng).unwrap())
        .unwrap()
}

/// A global scale in device memory (`NvFp4Ref::with_device_global_scale`) gives the dense ops
/// bit for bit what the same scale on the host gives (the kernels multiply the same factors),
/// at the decode-size and tiled kernels, fp16 and NVFP4 output, dual and plain; ops that do not
/// read device scales refuse the view.
fn device_global_scales_give_the_host_global_scales_results_bit_for_bit() {
    use cudarc::driver::DevicePtr;
    use nvfp4::gemm::GemmShape;
    use nvfp4::gpu::{F16Mut, HalfFormat, NvFp4Mut, NvFp4Ref};
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut rng = Rng::new(17);
    let (global_a, global_b1, global_b2) = (0.03125f32, 1.7f32, 0.37f32);
    let scales = stream.clone_htod(&[global_a, global_b1, global_b2]).unwrap();
    let scale_at = |i: u64| scales.device_ptr(&stream).0 + 4 * i;
    let mut cases = 0;
    // 1 × 4096 × 7168: whole-K decode-size CTAs (dual and plain GEMM); the others the split
    // decode-size and the tiled kernels.
    for (m, n, k) in [
        (1usize, 256usize, 1024usize),
        (13, 256, 1024),
        (200, 256, 1024),
        (1, 4096, 7168),
    ] {
        let b1 = upload_task(&gpu, n, k, &mut rng);
        let b2 = upload_task(&gpu, n, k, &mut rng);
        let a = upload_task(&gpu, m, k, &mut rng);
        let host = |x: &nvfp4::gpu::DeviceNvFp4Matrix, g: f32| {
            // SAFETY: the library's own buffers, alive for the whole test.
            unsafe {
                NvFp4Ref::from_raw(
                    x.view(&stream).data_address(),
                    x.view(&stream).scales_address(),
                    x.rows(),
                    k,
                    Some(g),
                )
            }
            .unwrap()
        };
        // The same matrices with no host global scale and the scale in device memory.
        let device = |x: &nvfp4::gpu::DeviceNvFp4Matrix, i: u64| {
            // SAFETY: as above; `scales` outlives every launch.
            unsafe {
                NvFp4Ref::from_raw(
                    x.view(&stream).data_address(),
                    x.view(&stream).scales_address(),
                    x.rows(),
                    k,
                    None,
                )
                .unwrap()
                .with_device_global_scale(scale_at(i))
            }
            .unwrap()
        };
        let dual = gpu.plan_dual_gemm(nvfp4::DualGemmShape { m, n, k }).unwrap();
        let plain = gpu.plan_gemm(GemmShape { m, n, k }).unwrap();
        let mut outputs = Vec::new();
        for on_device in [false, true] {
            let (a_ref, b1_ref, b2_ref) = if on_device {
                (device(&a, 0), device(&b1, 1), device(&b2, 2))
            } else {
                (host(&a, global_a), host(&b1, global_b1), host(&b2, global_b2))
            };
            let mut c = stream.alloc_zeros::<f16>(m * n).unwrap();
            let mut c_plain = stream.alloc_zeros::<f16>(m * n).unwrap();
            let mut h = gpu.alloc_nvfp4(m, n).unwrap();
            dual.launch_views(&gpu, a_ref, b1_ref, b2_ref, F16Mut::of(&mut c, &stream))
                .unwrap();
            plain
                .launch_views(&gpu, a_ref, b1_ref, F16Mut::of(&mut c_plain, &stream))
                .unwrap();
            dual.launch_nvfp4_views(
                &gpu,
                a_ref,
                b1_ref,
                b2_ref,
                NvFp4Mut::of(&mut h, &stream, 0.75).unwrap(),
            )
            .unwrap();
            let h = gpu.download(&h).unwrap();
            outputs.push((
                stream.clone_dtoh(&c).unwrap(),
                stream.clone_dtoh(&c_plain).unwrap(),
                h.data().to_vec(),
                h.scales().to_vec(),
            ));
        }
        let (host_out, device_out) = (&outputs[0], &outputs[1]);
        let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&host_out.0).iter().any(|&b| b != 0),
            "{m}×{n}×{k}: a zero result proves nothing"
        );
        assert_eq!(bits(&host_out.0), bits(&device_out.0), "{m}×{n}×{k}: dual GEMM");
        assert_eq!(bits(&host_out.1), bits(&device_out.1), "{m}×{n}×{k}: GEMM");
        assert_eq!(host_out.2, device_out.2, "{m}×{n}×{k}: NVFP4 output data");
        assert_eq!(host_out.3, device_out.3, "{m}×{n}×{k}: NVFP4 output scales");
        // Ops that read no device scale refuse the view.
        let mut out = stream.alloc_zeros::<f16>(m * k).unwrap();
        let out_ptr = {
            use cudarc::driver::DevicePtrMut;
            out.device_ptr_mut(&stream).0
        };
        // SAFETY: `out` holds m × k fp16.
        let err = unsafe { gpu.dequantize_raw(device(&a, 0), HalfFormat::F16, out_ptr) }.unwrap_err();
        assert!(err.to_string().contains("host global scales only"), "{err}");
        cases += 1;
    }
    println!(
        "device global scales: {cases} shapes, dual / plain / NVFP4 output bit-identical to host scales"
    );
}

/// The dense dual GEMM and GEMM write bf16 into a bf16 view (`F16Mut::of_bf16`): the same f32
/// result rounded to bf16 instead of fp16, so each value is within half a bf16 and half an
/// fp16 step of the fp16 output; at the decode-size and tiled kernels.
fn bf16_output_is_the_fp16_output_rounded_to_bf16() {
    use half::bf16;
    use nvfp4::gemm::GemmShape;
    use nvfp4::gpu::F16Mut;
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut rng = Rng::new(23);
    let mut worst = 0f32;
    // 1 × 14336 × 4096: whole-K decode-size CTAs of 4 warps; 8 × 14336 × 4096: the dual GEMM's
    // paired decode-size entry (splits of 16 steps); 1 × 18432 × 1024: the dual GEMM's
    // small-CTA whole-K entry.
    for (m, n, k) in [
        (1usize, 256usize, 1024usize),
        (13, 256, 1024),
        (200, 256, 1024),
        (1, 14336, 4096),
        (8, 14336, 4096),
        (1, 18432, 1024),
    ] {
        let b1 = upload_task(&gpu, n, k, &mut rng);
        let b2 = upload_task(&gpu, n, k, &mut rng);
        let a = upload_task(&gpu, m, k, &mut rng);
        let dual = gpu.plan_dual_gemm(nvfp4::DualGemmShape { m, n, k }).unwrap();
        let plain = gpu.plan_gemm(GemmShape { m, n, k }).unwrap();
        for gated in [true, false] {
            let mut c16 = stream.alloc_zeros::<f16>(m * n).unwrap();
            let mut c_bf = stream.alloc_zeros::<bf16>(m * n).unwrap();
            let (view_a, view_b1, view_b2) = (a.view(&stream), b1.view(&stream), b2.view(&stream));
            if gated {
                dual.launch_views(&gpu, view_a, view_b1, view_b2, F16Mut::of(&mut c16, &stream))
                    .unwrap();
                dual.launch_views(
                    &gpu,
                    view_a,
                    view_b1,
                    view_b2,
                    F16Mut::of_bf16(&mut c_bf, &stream),
                )
                .unwrap();
            } else {
                plain
                    .launch_views(&gpu, view_a, view_b1, F16Mut::of(&mut c16, &stream))
                    .unwrap();
                plain
                    .launch_views(&gpu, view_a, view_b1, F16Mut::of_bf16(&mut c_bf, &stream))
                    .unwrap();
            }
            let (c16, c_bf) = (
                stream.clone_dtoh(&c16).unwrap(),
                stream.clone_dtoh(&c_bf).unwrap(),
            );
            assert!(
                c16.iter().any(|x| x.to_f32() != 0.0),
                "{m}×{n}×{k}: a zero result proves nothing"
            );
            for (i, (h, b)) in c16.iter().zip(&c_bf).enumerate() {
                let (h, b) = (h.to_f32(), b.to_f32());
                // Half a bf16 step (2^-8 relative) and half an fp16 step (2^-11) apart at most.
                let allowed = h.abs() * (1.0 / 256.0 + 1.0 / 1024.0) + 1e-7;
                assert!(
                    (h - b).abs() <= allowed,
                    "m = {m}, gated {gated}, element {i}: fp16 {h}, bf16 {b}"
                );
                if h != 0.0 {
                    worst = worst.max((h - b).abs() / h.abs());
                }
            }
        }
        // The NVFP4-output entries ignore the format (their input is the fp16 rounding).
    }
    println!(
        "bf16 output: dual GEMM and GEMM at 1, 13, 200 tokens, worst relative distance to fp16 {worst:.2e}"
    );
}

/// `count` random finite fp16 values over the whole exponent range, both signs, some zeros.
fn full_range_f16(count: usize, rng: &mut Rng) -> Vec<f16> {
    (0..count)
        .map(|_| {
            let bits = rng.next_u64() as u16;
            let v = f16::from_bits(bits);
            if v.is_finite() && !bits.is_multiple_of(17) {
                v
            } else {
                f16::ZERO
            }
        })
        .collect()
}

fn moe_combine_matches_the_cpu_reference_bit_for_bit() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use nvfp4::elementwise::{CombineShape, WeightFormat, combine_reference};
    use nvfp4::gpu::HalfFormat;
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut rng = Rng::new(41);
    // (expert rows, tokens, top_k, width): slots in one and in two rounds of loads, odd sizes.
    for (row_count, tokens, top_k, width) in [
        (37usize, 11usize, 3usize, 72usize),
        (50, 9, 6, 8),
        (700, 130, 8, 520),
    ] {
        let shape = CombineShape {
            rows: row_count,
            tokens,
            top_k,
            width,
        };
        let rows = full_range_f16(row_count * width, &mut rng);
        // Mostly valid sources; −1 (an expert elsewhere) and past-the-end ones add nothing.
        let sources: Vec<i32> = (0..tokens * top_k)
            .map(|i| match i % 13 {
                5 => -1,
                9 => (row_count + i) as i32,
                _ => (rng.next_u64() % row_count as u64) as i32,
            })
            .collect();
        let weights: Vec<f32> = (0..tokens * top_k)
            .map(|i| {
                if i % 11 == 3 {
                    0.0
                } else {
                    rng.next_f32() * 4.0 - 2.0
                }
            })
            .collect();
        let reference = combine_reference(shape, &rows, &sources, &weights);
        assert!(
            reference.iter().any(|x| x.abs() > 1.0),
            "a zero result proves nothing"
        );
        let (rows_d, sources_d, weights_d) = (
            stream.clone_htod(&rows).unwrap(),
            stream.clone_htod(&sources).unwrap(),
            stream.clone_htod(&weights).unwrap(),
        );
        let mut out16 = stream
            .clone_htod(&vec![f16::from_bits(0x7e01); tokens * width])
            .unwrap();
        gpu.moe_combine_f16(&rows_d, &sources_d, &weights_d, top_k, &mut out16)
            .unwrap();
        let mut out_bf = stream
            .clone_htod(&vec![bf16::from_bits(0x7fc1); tokens * width])
            .unwrap();
        gpu.moe_combine_bf16(&rows_d, &sources_d, &weights_d, top_k, &mut out_bf)
            .unwrap();
        let want16: Vec<u16> = reference.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
        let want_bf: Vec<u16> = reference.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
        let got16: Vec<u16> = stream
            .clone_dtoh(&out16)
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let got_bf: Vec<u16> = stream
            .clone_dtoh(&out_bf)
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let what = format!("combine {shape:?}");
        assert_same_bits(&format!("{what} fp16"), &got16, &want16, f16_is_nan);
        assert_same_bits(&format!("{what} bf16"), &got_bf, &want_bf, bf16_is_nan);
        // Half-precision weights, read as they are: the reference on their f32 values.
        for format in [WeightFormat::F16, WeightFormat::Bf16] {
            let (bits, values): (Vec<u16>, Vec<f32>) = weights
                .iter()
                .map(|&w| match format {
                    WeightFormat::F16 => (f16::from_f32(w).to_bits(), f16::from_f32(w).to_f32()),
                    _ => (bf16::from_f32(w).to_bits(), bf16::from_f32(w).to_f32()),
                })
                .unzip();
            let want: Vec<u16> = combine_reference(shape, &rows, &sources, &values)
                .iter()
                .map(|&x| f16::from_f32(x).to_bits())
                .collect();
            let half_weights = stream.clone_htod(&bits).unwrap();
            let mut out = stream
                .clone_htod(&vec![f16::from_bits(0x7e01); tokens * width])
                .unwrap();
            {
                let (r, _r) = rows_d.device_ptr(&stream);
                let (s, _s) = sources_d.device_ptr(&stream);
                let (w, _w) = half_weights.device_ptr(&stream);
                let (o, _o) = out.device_ptr_mut(&stream);
                // SAFETY: each buffer holds the shape's sizes and outlives the copy below.
                unsafe { gpu.moe_combine_raw(shape, r, s, w, format, HalfFormat::F16, o) }.unwrap();
            }
            let got: Vec<u16> = stream
                .clone_dtoh(&out)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_same_bits(&format!("{what} {format:?} weights"), &got, &want, f16_is_nan);
        }
    }
    // Typed errors, nothing launched.
    let rows = stream.clone_htod(&vec![f16::ONE; 16 * 8]).unwrap();
    let sources = stream.clone_htod(&vec![0i32; 6]).unwrap();
    let weights = stream.clone_htod(&vec![1f32; 6]).unwrap();
    let mut out = stream.clone_htod(&vec![f16::ZERO; 3 * 8]).unwrap();
    let short = stream.clone_htod(&vec![1f32; 5]).unwrap();
    let mut odd = stream.clone_htod(&vec![f16::ZERO; 3 * 12]).unwrap();
    for (case, err) in [
        (
            "top_k 0",
            gpu.moe_combine_f16(&rows, &sources, &weights, 0, &mut out),
        ),
        (
            "top_k 4 of 6 sources",
            gpu.moe_combine_f16(&rows, &sources, &weights, 4, &mut out),
        ),
        (
            "5 weights",
            gpu.moe_combine_f16(&rows, &sources, &short, 2, &mut out),
        ),
        (
            "width 12",
            gpu.moe_combine_f16(&rows, &sources, &weights, 2, &mut odd),
        ),
    ] {
        assert!(
            matches!(
                err,
                Err(Error::InvalidArgument { .. } | Error::BufferLength { .. })
            ),
            "{case}: {err:?}"
        );
    }
    println!("MoE combine: 3 shapes, fp16 and bf16 output, bit-identical to the CPU reference");
}

/// The grouped-layout gather against a host placement of the same bytes: each output row is its
/// source row's packed bytes (zeros for a source past the matrix), each group's scale rows start
/// at its scale offset, every other scale byte is zero; groups empty, partial and past the
/// rows; the output poisoned first.
fn gather_grouped_places_rows_and_scale_rows_bit_for_bit() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use nvfp4::grouped::GatherShape;
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut rng = Rng::new(57);
    let (count, k) = (45usize, 320usize);
    let m = random_matrix(count, k, Distribution::FullRange, &mut rng).unwrap();
    let device = gpu.upload(&m).unwrap();
    // Groups of 3, 0, 130 and 1 rows, two rows in no group; sources with repeats, one past the end.
    let row_offsets: Vec<u32> = vec![0, 3, 3, 133, 134];
    let scale_offsets: Vec<u32> = vec![0, 128, 128, 384, 512];
    let rows = 136usize;
    let scale_rows = 640usize;
    let mut sources: Vec<u32> = (0..rows as u32).map(|i| (7 * i + 3) % count as u32).collect();
    sources[5] = count as u32 + 2;
    let (out_layout, in_layout) = (BlockedScales::new(scale_rows, k), BlockedScales::new(count, k));
    let mut want_data = vec![0u8; rows * k / 2];
    let mut want_scales = vec![0u8; out_layout.len()];
    for (i, &s) in sources.iter().enumerate() {
        if (s as usize) < count {
            want_data[i * k / 2..(i + 1) * k / 2]
                .copy_from_slice(&m.data()[s as usize * k / 2..(s as usize + 1) * k / 2]);
        }
    }
    for g in 0..4 {
        for local in 0..(row_offsets[g + 1] - row_offsets[g]) as usize {
            let s = sources[row_offsets[g] as usize + local] as usize;
            if s >= count {
                continue;
            }
            for col in 0..k / 16 {
                want_scales[out_layout.offset(scale_offsets[g] as usize + local, col)] =
                    m.scales()[in_layout.offset(s, col)];
            }
        }
    }
    let sources_d = stream.clone_htod(&sources).unwrap();
    let (row_offsets_d, scale_offsets_d) = (
        stream.clone_htod(&row_offsets).unwrap(),
        stream.clone_htod(&scale_offsets).unwrap(),
    );
    let mut out_data = stream.clone_htod(&vec![0xA5u8; rows * k / 2]).unwrap();
    let mut out_scales = stream.clone_htod(&vec![0xA5u8; out_layout.len()]).unwrap();
    let shape = GatherShape {
        source_rows: count,
        rows,
        groups: 4,
        scale_rows,
        k,
    };
    {
        let view = device.view(&stream);
        let (s, _s) = sources_d.device_ptr(&stream);
        let (r, _r) = row_offsets_d.device_ptr(&stream);
        let (o, _o) = scale_offsets_d.device_ptr(&stream);
        let (d, _d) = out_data.device_ptr_mut(&stream);
        let (c, _c) = out_scales.device_ptr_mut(&stream);
        // SAFETY: every buffer holds the shape's sizes and lives past the synchronizing copies below.
        unsafe { gpu.gather_grouped_raw(shape, view.data_address(), view.scales_address(), s, r, o, d, c) }
            .unwrap();
    }
    assert_eq!(stream.clone_dtoh(&out_data).unwrap(), want_data, "packed rows");
    assert_eq!(stream.clone_dtoh(&out_scales).unwrap(), want_scales, "scale rows");
    for bad in [
        GatherShape { k: 40, ..shape },
        GatherShape {
            scale_rows: 600,
            ..shape
        },
        GatherShape { groups: 0, ..shape },
    ] {
        assert!(
            matches!(bad.validate(), Err(Error::InvalidArgument { .. })),
            "{bad:?}"
        );
    }
    println!("grouped-layout gather: {rows} rows from {count} in 4 groups, bit for bit the host placement");
}

/// The routing kernel against its CPU reference (a stable sort): small and large slot counts,
/// 1 to 256 experts, slots of no expert (−1 and past the experts), outputs poisoned first.
fn moe_route_matches_the_cpu_reference() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use nvfp4::elementwise::{RouteShape, route_reference};
    let Some(gpu) = common::gpu_or_skip() else {
        return;
    };
    let stream = gpu.stream().clone();
    let mut rng = Rng::new(77);
    for (tokens, top_k, experts) in [
        (64usize, 8usize, 128usize),
        (4099, 8, 256),
        (5, 1, 1),
        (1500, 4, 37),
        (1024, 4, 8),
        (2048, 4, 3),
    ] {
        let shape = RouteShape {
            slots: tokens * top_k,
            top_k,
            experts,
        };
        let expert_of: Vec<i64> = (0..shape.slots)
            .map(|i| match i % 101 {
                7 => -1,
                50 => experts as i64 + 3,
                _ => (rng.next_u64() % experts as u64) as i64,
            })
            .collect();
        let want = route_reference(shape, &expert_of);
        let input = stream.clone_htod(&expert_of).unwrap();
        let poison = |n: usize| stream.clone_htod(&vec![0xDEAD_BEEFu32; n]).unwrap();
        let (mut rows, mut sources, mut row_offsets, mut scale_offsets, mut counts) = (
            poison(shape.slots),
            poison(shape.slots),
            poison(experts + 1),
            poison(experts + 1),
            poison(shape.count_words().max(1)),
        );
        {
            let (e, _e) = input.device_ptr(&stream);
            let (r, _r) = rows.device_ptr_mut(&stream);
            let (s, _s) = sources.device_ptr_mut(&stream);
            let (o, _o) = row_offsets.device_ptr_mut(&stream);
            let (c, _c) = scale_offsets.device_ptr_mut(&stream);
            let (n, _n) = counts.device_ptr_mut(&stream);
            // SAFETY: each buffer holds the shape's sizes and outlives the copies below.
            unsafe { gpu.moe_route_raw(shape, e, r, s, o, c, n) }.unwrap();
        }
        let name = format!("{shape:?}");
        let valid = want.2[experts] as usize;
        // Rows of no expert are written too (after the experts'), in slot order.
        assert_eq!(stream.clone_dtoh(&rows).unwrap(), want.0, "{name}: token rows");
        assert_eq!(stream.clone_dtoh(&sources).unwrap(), want.1, "{name}: sources");
        assert_eq!(
            stream.clone_dtoh(&row_offsets).unwrap(),
            want.2,
            "{name}: row offsets"
        );
        assert_eq!(
            stream.clone_dtoh(&scale_offsets).unwrap(),
            want.3,
            "{name}: scale offsets"
        );
        assert!(
            valid < shape.slots || shape.slots < 101,
            "{name}: some slots have no expert"
        );
    }
    for bad in [
        RouteShape {
            slots: 16,
            top_k: 0,
            experts: 4,
        },
        RouteShape {
            slots: 16,
            top_k: 3,
            experts: 4,
        },
        RouteShape {
            slots: 16,
            top_k: 2,
            experts: 257,
        },
        RouteShape {
            slots: 16,
            top_k: 2,
            experts: 0,
        },
    ] {
        assert!(
            matches!(bad.validate(), Err(Error::InvalidArgument { .. })),
            "{bad:?}"
        );
    }
    println!(
        "MoE routing: 6 shapes up to 32792 slots (1 to 9 CTAs) and 256 experts, equal to the stable CPU sort"
    );
}

test_main!(
    compute_capability_selects_the_kernel_architecture,
    opening_a_gpu_without_a_driver_is_a_typed_error,
    matrices_round_trip_through_device_memory,
    dequantization_matches_the_cpu_decoder_bit_for_bit,
    dequantization_rejects_an_output_of_the_wrong_length,
    gpu_quantizer_is_bit_identical_to_the_cpu_quantizer,
    caller_owned_memory_on_a_borrowed_stream_runs_every_op_and_captures_in_a_graph,
    device_global_scales_give_the_host_global_scales_results_bit_for_bit,
    bf16_output_is_the_fp16_output_rounded_to_bf16,
    moe_combine_matches_the_cpu_reference_bit_for_bit,
    gather_grouped_places_rows_and_scale_rows_bit_for_bit,
    moe_route_matches_the_cpu_reference,
);
