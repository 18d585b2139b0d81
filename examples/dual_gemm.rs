//! Runs the NVFP4 dual GEMM `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` on random inputs with the best available
//! backend, checks it against an independent reference and prints the time and the error.
//!
//! ```text
//! cargo run --release --example dual_gemm -- [--m M] [--n N] [--k K] [--seed S]
//!     [--dist task|full] [--backend auto|gpu|cpu] [--sets S] [--check-only] [--op dual|gemm]
//! ```
//!
//! `--op gemm` runs the plain GEMM `C = A·B1ᵀ` (the down projection) the same way instead, on
//! the GPU only (for example under compute-sanitizer with `--check-only`).
//!
//! * `gpu` (the default on a compute capability 9.0 or 10.x device; the 10.x kernel has never
//!   run): the fused kernel, checked
//!   against the CPU reference, then (unless `--check-only`) timed with CUDA events around
//!   `--sets` (default 50) back-to-back calls on distinct input sets (launch cost included),
//!   median of 5 batches. `cargo bench --bench dual_gemm` measures with L2 flushes and baselines.
//! * `cpu` (the default elsewhere, with the reason printed): the multi-threaded f32 reference,
//!   checked against the f64 oracle, on a smaller default shape (M=128, N=2048, K=7168) than the
//!   GPU's (M=256, N=4096, K=7168, the first benchmark shape).

use std::process::ExitCode;
use std::time::Instant;

use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4::dual_gemm::DualGemmPlan;
use nvfp4::gemm::{GemmPlan, GemmShape};
use nvfp4::gpu::{DeviceNvFp4Matrix, Gpu};
use nvfp4::progress::Reporter;
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{Distribution, DualGemmShape, Problem};
use rayon::prelude::*;

const GPU_DEFAULT_SHAPE: DualGemmShape = DualGemmShape {
    m: 256,
    n: 4096,
    k: 7168,
};
const CPU_DEFAULT_SHAPE: DualGemmShape = DualGemmShape {
    m: 128,
    n: 2048,
    k: 7168,
};
const USAGE: &str = "usage: dual_gemm [--m M] [--n N] [--k K] [--seed S] [--dist task|full] \
                     [--backend auto|gpu|cpu] [--sets S] [--check-only] [--op dual|gemm]";

struct Args {
    m: Option<usize>,
    n: Option<usize>,
    k: Option<usize>,
    seed: u64,
    distribution: Distribution,
    backend: String,
    sets: usize,
    check_only: bool,
    /// The plain GEMM (`--op gemm`) instead of the dual GEMM.
    plain: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        m: None,
        n: None,
        k: None,
        seed: 1,
        distribution: Distribution::Task,
        backend: "auto".into(),
        sets: 50,
        check_only: false,
        plain: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        if flag == "--check-only" {
            args.check_only = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--m" => args.m = Some(number(&value)?),
            "--n" => args.n = Some(number(&value)?),
            "--k" => args.k = Some(number(&value)?),
            "--sets" => args.sets = number(&value)?.max(1),
            "--seed" => args.seed = value.parse().map_err(|e| format!("--seed {value}: {e}"))?,
            "--dist" => args.distribution = value.parse().map_err(|e: nvfp4::Error| e.to_string())?,
            "--backend" if ["auto", "gpu", "cpu"].contains(&value.as_str()) => args.backend = value,
            "--backend" => return Err(format!("--backend {value}: must be auto, gpu or cpu")),
            "--op" if ["dual", "gemm"].contains(&value.as_str()) => args.plain = value == "gemm",
            "--op" => return Err(format!("--op {value}: must be dual or gemm")),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match select_gpu(&args.backend) {
        Ok(Some(gpu)) => run_gpu(&args, &gpu),
        Ok(None) if args.plain => {
            eprintln!("--op gemm runs on the GPU only\n{USAGE}");
            return ExitCode::from(2);
        }
        Ok(None) => run_cpu(&args),
        Err(e) => Err(e),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The GPU to run on, `None` for the CPU backend (printing why when it was not asked for).
fn select_gpu(backend: &str) -> nvfp4::Result<Option<Gpu>> {
    if backend == "cpu" {
        return Ok(None);
    }
    match Gpu::open(0) {
        Ok(gpu) => Ok(Some(gpu)),
        Err(e) if backend == "auto" => {
            println!("backend: cpu ({e})");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn shape(args: &Args, default: DualGemmShape) -> DualGemmShape {
    DualGemmShape {
        m: args.m.unwrap_or(default.m),
        n: args.n.unwrap_or(default.n),
        k: args.k.unwrap_or(default.k),
    }
}

/// The planned operation of a GPU run: the dual GEMM, or (`--op gemm`) the plain GEMM of A and B1.
enum Plan {
    Dual(DualGemmPlan),
    Plain(GemmPlan),
}

impl Plan {
    fn tile_and_grid(&self) -> ((u32, u32), u32) {
        match self {
            Plan::Dual(plan) => plan.tile_and_grid(),
            Plan::Plain(plan) => plan.tile_and_grid(),
        }
    }

    fn launch(
        &self,
        gpu: &Gpu,
        [a, b1, b2]: &[DeviceNvFp4Matrix; 3],
        c: &mut CudaSlice<f16>,
    ) -> nvfp4::Result<()> {
        match self {
            Plan::Dual(plan) => plan.launch(gpu, a, b1, b2, c),
            Plan::Plain(plan) => plan.launch(gpu, a, b1, c),
        }
    }
}

fn run_gpu(args: &Args, gpu: &Gpu) -> nvfp4::Result<bool> {
    let shape = shape(args, GPU_DEFAULT_SHAPE);
    let DualGemmShape { m, n, k } = shape;
    let plan = if args.plain {
        Plan::Plain(gpu.plan_gemm(GemmShape { m, n, k })?)
    } else {
        Plan::Dual(gpu.plan_dual_gemm(shape)?)
    };
    println!(
        "backend: gpu, {} ({:?}), {}, tile {} tokens × {} outputs, {} CTAs",
        gpu.name(),
        gpu.arch(),
        if args.plain { "plain GEMM" } else { "dual GEMM" },
        plan.tile_and_grid().0.0,
        plan.tile_and_grid().0.1,
        plan.tile_and_grid().1
    );
    println!(
        "problem: M={} N={} K={}, {:?} inputs, seed {}, {} input sets",
        shape.m, shape.n, shape.k, args.distribution, args.seed, args.sets
    );

    let t = Instant::now();
    let problems: Vec<Problem> = (0..args.sets as u64)
        .into_par_iter()
        .map(|i| Problem::random(shape, args.distribution, args.seed + i))
        .collect::<nvfp4::Result<_>>()?;
    let inputs: Vec<[DeviceNvFp4Matrix; 3]> = problems
        .iter()
        .map(|p| Ok([gpu.upload(&p.a)?, gpu.upload(&p.b1)?, gpu.upload(&p.b2)?]))
        .collect::<nvfp4::Result<_>>()?;
    println!(
        "generated and uploaded {} input sets in {:.1} s",
        args.sets,
        t.elapsed().as_secs_f64()
    );

    let mut c: CudaSlice<f16> = gpu.stream().clone_htod(&vec![f16::NAN; shape.m * shape.n])?;
    plan.launch(gpu, &inputs[0], &mut c)?;
    let got = gpu.stream().clone_dtoh(&c)?;
    let reporter = Reporter::new("cpu reference");
    let p = &problems[0];
    let want = if args.plain {
        reference::gemm(&p.a, &p.b1)?
    } else {
        reference::dual_gemm_with_progress(&p.a, &p.b1, &p.b2, &|d, n| reporter.update(d, n))?
    };
    let report = reference::check(&got, &want, shape.n, TASK_TOLERANCE)?;
    println!("check against the CPU reference (rtol = atol = 1e-3): {report}");
    if args.check_only {
        return Ok(report.passed());
    }

    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut batches = Vec::new();
    for batch in 0..6 {
        let start = gpu.stream().record_event(timing)?;
        for input in &inputs {
            plan.launch(gpu, input, &mut c)?;
        }
        let end = gpu.stream().record_event(timing)?;
        end.synchronize()?;
        if batch > 0 {
            batches.push(start.elapsed_ms(&end)? as f64 * 1e3 / inputs.len() as f64);
        }
    }
    batches.sort_by(f64::total_cmp);
    let median = batches[batches.len() / 2];
    let (flops, bytes) = if args.plain {
        let shape = GemmShape { m, n, k };
        (shape.flops(), shape.bytes())
    } else {
        (shape.flops(), shape.bytes())
    };
    println!(
        "gpu: {median:.1} µs per call (median of {} batches of {}; best {:.1}), {:.0} TFLOP/s, {:.0} GB/s",
        batches.len(),
        inputs.len(),
        batches[0],
        flops / median / 1e6,
        bytes as f64 / median / 1e3
    );
    Ok(report.passed())
}

fn run_cpu(args: &Args) -> nvfp4::Result<bool> {
    let shape = shape(args, CPU_DEFAULT_SHAPE);
    println!(
        "backend: cpu; default shape on CPU is M={} N={} K={} (GPU: M={} N={} K={})",
        CPU_DEFAULT_SHAPE.m,
        CPU_DEFAULT_SHAPE.n,
        CPU_DEFAULT_SHAPE.k,
        GPU_DEFAULT_SHAPE.m,
        GPU_DEFAULT_SHAPE.n,
        GPU_DEFAULT_SHAPE.k
    );
    println!(
        "problem: M={} N={} K={}, {:?} inputs, seed {}",
        shape.m, shape.n, shape.k, args.distribution, args.seed
    );
    let problem = Problem::random(shape, args.distribution, args.seed)?;
    let reporter = Reporter::new("cpu dual gemm");
    let t = Instant::now();
    let c = reference::dual_gemm_with_progress(&problem.a, &problem.b1, &problem.b2, &|d, n| {
        reporter.update(d, n)
    })?;
    let seconds = t.elapsed().as_secs_f64();
    println!(
        "cpu (f32, {} threads): {:.1} ms, {:.1} GFLOP/s",
        rayon::current_num_threads(),
        seconds * 1e3,
        shape.flops() / seconds / 1e9
    );
    let t = Instant::now();
    let oracle = reference::dual_gemm_f64(&problem.a, &problem.b1, &problem.b2)?;
    println!("f64 oracle: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let report = reference::check(&c, &oracle, shape.n, TASK_TOLERANCE)?;
    println!("check against the f64 oracle (rtol = atol = 1e-3): {report}");
    Ok(report.passed())
}
