//! What the benches share: the measuring method (the reference harness's, docs/format.md: timed
//! batches of back-to-back calls after an L2 flush, until the mean is known to 0.5 %), the
//! ceilings of the floor model measured in the same run, the command line, the Python baseline
//! subprocesses, and the results files (JSON with the run's metadata, markdown, SVG).

#![allow(dead_code)] // each bench uses a subset

use std::fmt::Write as _;
use std::time::Instant;

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};
use half::{bf16, f16};
use nvfp4::gpu::Gpu;

/// Opens GPU 0 and runs `run` on it. Prints why the bench `name` is skipped (and returns) when
/// there is no supported GPU or `unsupported` gives a reason for this one; exits with status 1
/// when `run` fails.
pub fn run_on_gpu(
    name: &str,
    unsupported: impl Fn(&Gpu) -> Option<String>,
    run: impl FnOnce(&Gpu) -> BenchResult<()>,
) {
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("{name} bench skipped: {e}");
            return;
        }
    };
    if let Some(why) = unsupported(&gpu) {
        println!("{name} bench skipped: {why}");
        return;
    }
    if let Err(e) = run(&gpu) {
        eprintln!("{name} bench failed: {e}");
        std::process::exit(1);
    }
}

/// What every GEMM bench sets up first: cuBLAS, the L2-flush buffer and the ceilings of the
/// floor model, measured now; the device and the ceilings are printed.
pub struct Setup {
    /// cuBLAS on the GPU's stream (the peers and the fp16 ceiling).
    pub blas: CudaBlas,
    /// Zeroed before each timed batch ([`FLUSH_BYTES`]).
    pub flush: CudaSlice<u8>,
    /// The ceilings measured in this run.
    pub ceilings: Ceilings,
}

/// Sets up a GEMM bench of `sets` input sets per `unit` (shape, case), described in `source`.
pub fn setup(gpu: &Gpu, unit: &str, sets: usize, source: &str, max_seconds: f64) -> BenchResult<Setup> {
    let blas = CudaBlas::new(gpu.stream().clone())?;
    let mut flush: CudaSlice<u8> = gpu.stream().alloc_zeros(FLUSH_BYTES)?;
    println!(
        "device: {} ({} SMs); {sets} input sets per {unit}; method: see {source}",
        gpu.name(),
        gpu.multiprocessors(),
    );
    let ceilings = measure_ceilings(gpu, &blas, &mut flush, max_seconds)?;
    println!(
        "ceilings measured now: copy {:.0} GB/s (read + write), cuBLAS 8192³ fp16 {:.0} TFLOP/s, bf16 {:.0} TFLOP/s",
        ceilings.copy_gbs, ceilings.fp16_tflops, ceilings.bf16_tflops
    );
    Ok(Setup {
        blas,
        flush,
        ceilings,
    })
}

/// [`run_on_gpu`] after the bench's command line: prints a bad command line's error and exits
/// with status 2, else runs `run` with the options.
pub fn run_with_options<O>(
    name: &str,
    options: Result<O, String>,
    unsupported: impl Fn(&Gpu) -> Option<String>,
    run: impl FnOnce(&Gpu, &O) -> BenchResult<()>,
) {
    match options {
        Ok(options) => run_on_gpu(name, unsupported, |gpu| run(gpu, &options)),
        Err(e) => {
            eprintln!("{name} bench: {e}");
            std::process::exit(2);
        }
    }
}

/// Errors of a bench run.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Bytes zeroed before each timed batch: more than any L2.
pub const FLUSH_BYTES: usize = 256 << 20;
/// Batches stop once the mean's relative standard error is below this.
pub const TARGET_RELATIVE_ERROR: f64 = 0.005;
/// Batches at least.
pub const MIN_BATCHES: usize = 5;

/// Mean time per call and its relative standard error.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Mean µs per call over the batches (the harness's statistic).
    pub us: f64,
    /// Median µs per call over the batches.
    pub median_us: f64,
    /// Relative standard error of the mean.
    pub relative_error: f64,
    /// Batches timed.
    pub batches: usize,
}

/// Times `calls` back-to-back calls `call(0..calls)` per batch with the method of the module doc.
pub fn time_calls(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    calls: usize,
    max_seconds: f64,
    mut call: impl FnMut(usize) -> BenchResult<()>,
) -> BenchResult<Timing> {
    let events = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    for i in 0..calls {
        call(i)?; // warm-up: module load, cuBLAS heuristics, first touch
    }
    let start_time = Instant::now();
    let mut samples: Vec<f64> = Vec::new();
    loop {
        gpu.stream().memset_zeros(flush)?;
        let start = gpu.stream().record_event(events)?;
        for i in 0..calls {
            call(i)?;
        }
        let end = gpu.stream().record_event(events)?;
        end.synchronize()?;
        samples.push(start.elapsed_ms(&end)? as f64 * 1e3 / calls as f64);
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let relative_error = (variance / n).sqrt() / mean;
        let done = samples.len() >= MIN_BATCHES
            && (relative_error < TARGET_RELATIVE_ERROR || start_time.elapsed().as_secs_f64() > max_seconds);
        if done || samples.len() >= 1000 {
            let mut sorted = samples.clone();
            sorted.sort_by(f64::total_cmp);
            return Ok(Timing {
                us: mean,
                median_us: sorted[sorted.len() / 2],
                relative_error,
                batches: samples.len(),
            });
        }
    }
}

/// `call(0..calls)` run once as a warm-up, then captured as one CUDA graph on `gpu`'s stream.
pub fn capture_graph(
    gpu: &Gpu,
    calls: usize,
    mut call: impl FnMut(usize) -> BenchResult<()>,
) -> BenchResult<cudarc::driver::CudaGraph> {
    use cudarc::driver::sys;
    for i in 0..calls {
        call(i)?; // warm-up outside the capture
    }
    let stream = gpu.stream();
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    let captured = (0..calls).try_for_each(&mut call);
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0))?;
    captured?;
    Ok(graph.ok_or("the capture gave no graph")?)
}

/// A variant timed by [`time_calls_in_phases`] or [`time_calls_interleaved`]: `call(i)` enqueues
/// call `i` of a batch.
pub type Variant<'a> = Box<dyn FnMut(usize) -> BenchResult<()> + 'a>;

/// A marked batch of [`time_calls_in_phases`] and [`time_calls_interleaved`]: the L2 flushed,
/// then `calls` calls of `variant` between two events, enqueued on `stream` without waiting.
fn enqueue_batch(
    stream: &std::sync::Arc<CudaStream>,
    flush: &mut CudaSlice<u8>,
    calls: usize,
    variant: &mut Variant,
) -> BenchResult<(CudaEvent, CudaEvent)> {
    let events = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    stream.memset_zeros(flush)?;
    let start = stream.record_event(events)?;
    (0..calls).try_for_each(&mut *variant)?;
    Ok((start, stream.record_event(events)?))
}

/// µs per call of each marked batch of `marks` (`calls` calls a batch), after they ran.
fn batch_us(marks: &[(CudaEvent, CudaEvent)], calls: usize) -> BenchResult<Vec<f64>> {
    marks
        .iter()
        .map(|(start, end)| Ok(start.elapsed_ms(end)? as f64 * 1e3 / calls as f64))
        .collect()
}

/// Times variants against each other, each under its own sustained load: phases of about
/// `phase_seconds` of one variant's batches back to back (`calls` calls `call(0..calls)` a batch,
/// the L2 flushed before it, between two events), in the order A B … Z, then Z … B A. Only the
/// second half of each phase is kept: by then the GPU runs at the clocks of that workload alone.
/// Under its power limit an H200's clocks differ between workloads (an NVFP4 MLP layer at 1800
/// MHz, the same layer in bf16 at 1500), so variants replayed in turn would all run at their
/// mix's clocks; and variants timed once one after another drift with the GPU's temperature,
/// which the mirrored second pass cancels. One batch of each variant timed alone (after a
/// warm-up) sets a phase's batch count: at least twice [`MIN_BATCHES`] (the kept half at least
/// that many), at most 1000. Returns each
/// variant's kept batch times in µs per call ([`timing`] sums them up).
pub fn time_calls_in_phases(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    calls: usize,
    phase_seconds: f64,
    variants: &mut [Variant],
) -> BenchResult<Vec<Vec<f64>>> {
    let stream = gpu.stream().clone();
    let mut batches = Vec::with_capacity(variants.len());
    for variant in variants.iter_mut() {
        (0..calls).try_for_each(&mut *variant)?; // warm-up: module load, heuristics, first touch
        let began = Instant::now();
        enqueue_batch(&stream, flush, calls, variant)?.1.synchronize()?;
        let seconds = began.elapsed().as_secs_f64();
        batches.push(((phase_seconds / seconds) as usize).clamp(2 * MIN_BATCHES, 1000));
    }
    let order: Vec<usize> = (0..variants.len()).chain((0..variants.len()).rev()).collect();
    let mut samples = vec![Vec::new(); variants.len()];
    for v in order {
        let marks = (0..batches[v])
            .map(|_| enqueue_batch(&stream, flush, calls, &mut variants[v]))
            .collect::<BenchResult<Vec<_>>>()?;
        stream.synchronize()?;
        samples[v].extend(batch_us(&marks[marks.len() / 2..], calls)?);
    }
    Ok(samples)
}

/// Times variants of one workload against each other at the same clocks: cycles that time one
/// batch of each variant in turn (`calls` back-to-back calls `call(0..calls)`, the L2 flushed
/// before it, between two events), enqueued back to back without waiting between them — a heavy
/// shape's clocks drift by 10–25 % within a second on an H200, more than the variants differ,
/// and timed one after another the first variant ran on a GPU that had not yet slowed down. For
/// variants that draw about the same power (the same kernels handing operands on differently):
/// the mix's clocks are then each one's own, and the medians agree to 0.5 % where
/// [`time_calls_in_phases`] spreads by several percent. Backends of different power (ours
/// against cuBLAS or PyTorch) belong in [`time_calls_in_phases`]. After one warm-up batch of
/// each, one cycle timed alone sets how many follow: `max_seconds` per variant, at least
/// [`MIN_BATCHES`] and at most 1000. Returns each variant's batch times in µs per call, in cycle
/// order ([`timing`] sums them up).
pub fn time_calls_interleaved(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    calls: usize,
    max_seconds: f64,
    variants: &mut [Variant],
) -> BenchResult<Vec<Vec<f64>>> {
    let stream = gpu.stream().clone();
    for variant in variants.iter_mut() {
        (0..calls).try_for_each(&mut *variant)?; // warm-up: module load, heuristics, first touch
    }
    let cycle = |flush: &mut CudaSlice<u8>, variants: &mut [Variant]| -> BenchResult<Vec<_>> {
        variants
            .iter_mut()
            .map(|variant| enqueue_batch(&stream, flush, calls, variant))
            .collect()
    };
    let first = Instant::now();
    cycle(flush, variants)?
        .last()
        .ok_or("no variants")?
        .1
        .synchronize()?;
    let cycle_seconds = first.elapsed().as_secs_f64();
    let cycles = ((max_seconds * variants.len() as f64 / cycle_seconds) as usize).clamp(MIN_BATCHES, 1000);
    let mut marks = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        marks.push(cycle(flush, variants)?);
    }
    stream.synchronize()?;
    let mut samples = vec![Vec::with_capacity(cycles); variants.len()];
    for cycle in &marks {
        for (us, samples) in batch_us(cycle, calls)?.into_iter().zip(&mut samples) {
            samples.push(us);
        }
    }
    Ok(samples)
}

/// [`time_calls_interleaved`] for CUDA graphs of `calls` calls each ([`capture_graph`]): each
/// graph's replay times in µs per call.
pub fn time_graphs_interleaved(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    graphs: &[cudarc::driver::CudaGraph],
    calls: usize,
    max_seconds: f64,
) -> BenchResult<Vec<Vec<f64>>> {
    per_graph_call(graphs, calls, |variants| {
        time_calls_interleaved(gpu, flush, 1, max_seconds, variants)
    })
}

/// [`time_calls_in_phases`] for CUDA graphs of `calls` calls each ([`capture_graph`]): each
/// graph's kept replay times in µs per call.
pub fn time_graphs_in_phases(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    graphs: &[cudarc::driver::CudaGraph],
    calls: usize,
    phase_seconds: f64,
) -> BenchResult<Vec<Vec<f64>>> {
    per_graph_call(graphs, calls, |variants| {
        time_calls_in_phases(gpu, flush, 1, phase_seconds, variants)
    })
}

/// `timer` on one variant per graph (a replay a call), its times divided by the graphs' `calls`.
fn per_graph_call(
    graphs: &[cudarc::driver::CudaGraph],
    calls: usize,
    timer: impl FnOnce(&mut [Variant]) -> BenchResult<Vec<Vec<f64>>>,
) -> BenchResult<Vec<Vec<f64>>> {
    let mut variants: Vec<Variant> = graphs
        .iter()
        .map(|graph| Box::new(move |_| Ok(graph.launch()?)) as Variant)
        .collect();
    Ok(timer(&mut variants)?
        .into_iter()
        .map(|s| s.into_iter().map(|us| us / calls as f64).collect())
        .collect())
}

/// The [`Timing`] of batch times `samples` (µs per call; not empty).
pub fn timing(samples: &[f64]) -> Timing {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    Timing {
        us: mean,
        median_us: median(samples),
        relative_error: (variance / n).sqrt() / mean,
        batches: samples.len(),
    }
}

/// The median of `samples` (not empty).
pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// `C[M × N] = A[M × K] · B[N × K]ᵀ` with row-major buffers (column-major `Cᵀ = B · Aᵀ`).
/// The buffers (slices or views) must hold at least M×K, N×K and M×N elements.
pub fn gemm_nt<T: DeviceRepr + Copy>(
    blas: &CudaBlas,
    (m, n, k): (usize, usize, usize),
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    c: &mut impl DevicePtrMut<T>,
    one: T,
    zero: T,
) -> BenchResult<()>
where
    CudaBlas: Gemm<T>,
{
    if a.len() < m * k || b.len() < n * k || c.len() < m * n {
        return Err(format!("gemm_nt: buffers too small for {m}×{n}×{k}").into());
    }
    let (m, n, k) = (m as i32, n as i32, k as i32);
    let config = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n,
        n: m,
        k,
        alpha: one,
        lda: k,
        ldb: k,
        beta: zero,
        ldc: n,
    };
    // SAFETY: the buffers hold N×K, M×K and M×N elements (checked above).
    unsafe { blas.gemm(config, b, a, c) }?;
    Ok(())
}

/// The ceilings of the floor model, measured now.
pub struct Ceilings {
    /// Device-to-device copy, read + write, GB/s.
    pub copy_gbs: f64,
    /// cuBLAS fp16 8192³ TFLOP/s.
    pub fp16_tflops: f64,
    /// cuBLAS bf16 8192³ TFLOP/s.
    pub bf16_tflops: f64,
}

pub fn measure_ceilings(
    gpu: &Gpu,
    blas: &CudaBlas,
    flush: &mut CudaSlice<u8>,
    max_seconds: f64,
) -> BenchResult<Ceilings> {
    let bytes = 1usize << 30;
    let source: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let mut target: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let copy = time_calls(gpu, flush, 3, max_seconds, |_| {
        Ok(gpu.stream().memcpy_dtod(&source, &mut target)?)
    })?;
    drop((source, target));
    let size = 8192;
    let shape = (size, size, size);
    let flops = 2.0 * (size as f64).powi(3);
    let random_f16: Vec<f16> = (0..size * size)
        .map(|i| f16::from_f32(((i * 7919 % 1000) as f32 - 500.0) / 500.0))
        .collect();
    let (a, b) = (
        gpu.stream().clone_htod(&random_f16)?,
        gpu.stream().clone_htod(&random_f16)?,
    );
    let mut c: CudaSlice<f16> = gpu.stream().alloc_zeros(size * size)?;
    let fp16 = time_calls(gpu, flush, 3, max_seconds, |_| {
        gemm_nt(blas, shape, &a, &b, &mut c, f16::ONE, f16::ZERO)
    })?;
    drop((a, b, c));
    let random_bf16: Vec<bf16> = random_f16.iter().map(|v| bf16::from_f32(v.to_f32())).collect();
    let (a, b) = (
        gpu.stream().clone_htod(&random_bf16)?,
        gpu.stream().clone_htod(&random_bf16)?,
    );
    let mut c: CudaSlice<bf16> = gpu.stream().alloc_zeros(size * size)?;
    let bf16_timing = time_calls(gpu, flush, 3, max_seconds, |_| {
        gemm_nt(blas, shape, &a, &b, &mut c, bf16::ONE, bf16::ZERO)
    })?;
    Ok(Ceilings {
        copy_gbs: 2.0 * bytes as f64 / copy.us / 1e3,
        fp16_tflops: flops / fp16.us / 1e6,
        bf16_tflops: flops / bf16_timing.us / 1e6,
    })
}

pub fn geomean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0), |(s, n), v| (s + v.ln(), n + 1));
    (sum / n.max(1) as f64).exp()
}

/// `{value:.1}` or an em dash.
pub fn show(value: Option<f64>) -> String {
    value.map_or("—".to_string(), |v| format!("{v:.1}"))
}

/// `{ratio:.2}×` or an em dash.
pub fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> String {
    match (numerator, denominator) {
        (Some(a), Some(b)) => format!("{:.2}×", a / b),
        _ => "—".to_string(),
    }
}

pub fn command_output(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The revision the bench binary was built from (`nvfp4::BUILT_REVISION`), not the revision of
/// the directory it runs in.
pub fn revision() -> String {
    nvfp4::BUILT_REVISION.to_string()
}

/// The driver version and clocks as nvidia-smi reports them, and the driver's CUDA version
/// (which decides the tensor maps' driver workaround: `nvfp4_kernel::launch::TensorMap`).
pub fn driver_and_clocks() -> String {
    let smi = command_output(
        "nvidia-smi",
        &[
            "--query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem",
            "--format=csv,noheader",
        ],
    );
    match nvfp4::gpu::driver_version() {
        Ok(version) => format!("{smi}; CUDA driver {}.{}", version / 1000, version % 1000 / 10),
        Err(e) => format!("{smi}; CUDA driver version unknown ({e})"),
    }
}

/// Horizontal bars, one group per label and one bar per series (µs, log scale), as SVG;
/// `value(label, series)` gives each bar (`None`: no bar).
pub fn svg_bars(
    title: &str,
    labels: &[String],
    series: &[&str],
    value: impl Fn(usize, usize) -> Option<f64>,
) -> String {
    const COLORS: [&str; 5] = ["#999999", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"];
    let (left, bar, gap, width) = (190.0, 11.0, 14.0, 560.0);
    let max = (0..labels.len())
        .flat_map(|j| (0..series.len()).map(move |i| (j, i)))
        .filter_map(|(j, i)| value(j, i))
        .fold(1.0f64, f64::max);
    let x = |us: f64| left + width * (us.max(1.0).log10() / max.log10().max(1.0));
    let group = series.len() as f64 * bar + gap;
    let height = 60.0 + group * labels.len() as f64 + 30.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"10\" y=\"18\" font-size=\"13\">{title}</text>\n",
        left + width + 80.0
    );
    for (i, name) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"28\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"37\">{name}</text>",
            10.0 + 140.0 * i as f64,
            24.0 + 140.0 * i as f64
        );
    }
    for (j, label) in labels.iter().enumerate() {
        let y0 = 50.0 + group * j as f64;
        let _ = writeln!(
            s,
            "<text x=\"10\" y=\"{}\">{label}</text>",
            y0 + series.len() as f64 * bar / 2.0
        );
        for i in 0..series.len() {
            if let Some(v) = value(j, i) {
                let y = y0 + bar * i as f64;
                let _ = writeln!(
                    s,
                    "<rect x=\"{left}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{}\">{v:.1}</text>",
                    x(v) - left,
                    bar - 1.0,
                    COLORS[i % COLORS.len()],
                    x(v) + 3.0,
                    y + bar - 2.0
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A bench's command line: `--flag value` pairs and bare switches, each among those the bench
/// declares (cargo's own `--bench` is dropped).
pub struct Cli {
    values: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Cli {
    /// Parses the process arguments: `flags` take a value, `switches` none.
    pub fn parse(flags: &[&str], switches: &[&str]) -> Result<Self, String> {
        let mut cli = Cli {
            values: Vec::new(),
            switches: Vec::new(),
        };
        let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
        while let Some(arg) = it.next() {
            let name = arg.strip_prefix("--").unwrap_or(&arg);
            if switches.contains(&name) {
                cli.switches.push(name.to_string());
            } else if flags.contains(&name) {
                let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
                cli.values.push((name.to_string(), value));
            } else {
                let known: Vec<String> = flags.iter().chain(switches).map(|f| format!("--{f}")).collect();
                return Err(format!("unknown flag {arg} (known: {})", known.join(" ")));
            }
        }
        Ok(cli)
    }

    /// The last value given for `--flag`, parsed, or `default`.
    pub fn value<T: std::str::FromStr>(&self, flag: &str, default: T) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        match self.values.iter().rev().find(|(name, _)| name == flag) {
            Some((_, value)) => value.parse().map_err(|e| format!("--{flag} {value}: {e}")),
            None => Ok(default),
        }
    }

    /// Whether the switch `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}

/// Parses a shape written `MxNxK`; `groups` names the other words the bench's list takes.
pub fn parse_mnk(item: &str, groups: &str) -> Result<(usize, usize, usize), String> {
    let dims: Vec<usize> = item
        .split('x')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{item}: expected MxNxK or one of {groups} ({e})"))?;
    match dims[..] {
        [m, n, k] => Ok((m, n, k)),
        _ => Err(format!("{item}: expected MxNxK or one of {groups}")),
    }
}

/// Runs a Python baseline script with `args` and returns its standard output. The script is
/// `$env_var` or `default_path` (relative to the repository root, where the benches run).
pub fn python_baseline(env_var: &str, default_path: &str, args: &[&str]) -> Result<String, String> {
    let script = std::env::var(env_var).unwrap_or_else(|_| default_path.into());
    if !std::path::Path::new(&script).is_file() {
        return Err(format!(
            "{script} not found (run from the repository root or set {env_var})"
        ));
    }
    let output = std::process::Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{script} failed: {}",
            stderr.lines().last().unwrap_or("")
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// What a bench run writes under its results folder.
pub struct Results<'a> {
    /// The folder (`--results`).
    pub dir: &'a str,
    /// The files' name before the time stamp.
    pub prefix: &'a str,
    /// Input sets per row.
    pub sets: usize,
    /// The ceilings measured in the run, if the bench has them.
    pub ceilings: Option<Ceilings>,
    /// The bench's own settings, written after the ceilings (an object, or null).
    pub settings: serde_json::Value,
    /// The key of the rows' list (`shapes`, `cases`, `inputs`).
    pub rows_key: &'a str,
    /// One record per row; every record has `ours_us` (what `scripts/gpu-run.sh ab` compares).
    pub rows: Vec<serde_json::Value>,
    /// The markdown table.
    pub table: &'a str,
    /// An SVG chart, if the bench draws one.
    pub svg: Option<String>,
}

/// Prints `note` and the table, then writes `DIR/PREFIX-STAMP.json` (the run's metadata: device,
/// driver and clocks, the revision the bench was built from, the time, sets, ceilings; then the
/// settings and the rows), `.md` (the table) and, if given, `.svg`, and says where.
pub fn write_results(gpu: &Gpu, note: &str, results: Results) -> BenchResult<()> {
    println!("\n{note}\n\n{}", results.table);
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let mut document = serde_json::Map::new();
    let mut put = |key: &str, value: serde_json::Value| document.insert(key.to_string(), value);
    put("device", gpu.name().into());
    put("nvidia_smi_driver_clocks", driver_and_clocks().into());
    put("revision", revision().into());
    put("unix_time", unix_time.into());
    put("sets", results.sets.into());
    if let Some(c) = results.ceilings {
        put("copy_gbs", c.copy_gbs.into());
        put("fp16_tflops", c.fp16_tflops.into());
        put("bf16_tflops", c.bf16_tflops.into());
    }
    if let serde_json::Value::Object(settings) = results.settings {
        document.extend(settings);
    }
    document.insert(results.rows_key.to_string(), results.rows.into());
    let document = serde_json::Value::Object(document);
    std::fs::create_dir_all(results.dir)?;
    let base = format!("{}/{}-{unix_time}", results.dir, results.prefix);
    std::fs::write(
        format!("{base}.json"),
        serde_json::to_string_pretty(&document)? + "\n",
    )?;
    std::fs::write(format!("{base}.md"), results.table)?;
    let mut written = format!("{base}.json, {base}.md");
    if let Some(svg) = results.svg {
        std::fs::write(format!("{base}.svg"), svg)?;
        written += &format!(", {base}.svg");
    }
    println!("wrote {written}");
    Ok(())
}
