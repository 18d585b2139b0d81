//! Runs one random NVFP4 dual GEMM `C = silu(A·B1ᵀ) ⊙ (A·B2ᵀ)` on the best available backend,
//! checks it against an independent reference and prints the time and the error.
//!
//! ```text
//! cargo run --release --example dual_gemm -- [--m M] [--n N] [--k K] [--seed S]
//!                                            [--dist task|full] [--backend auto|cpu]
//! ```
//!
//! Backends: `cpu` is the multi-threaded f32 reference, checked here against the f64 oracle.
//! The GPU dual-GEMM kernels are not implemented yet, so `auto` runs the CPU backend, on a
//! smaller default shape (M=128, N=2048, K=7168) than the benchmark's (M=256, N=4096, K=7168).

use std::process::ExitCode;
use std::time::Instant;

use nvfp4::progress::Reporter;
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{Distribution, DualGemmShape, Problem};

/// Default shape of the CPU backend (the GPU default, 256×4096×7168, takes minutes on 2 cores).
const CPU_DEFAULT_SHAPE: DualGemmShape = DualGemmShape {
    m: 128,
    n: 2048,
    k: 7168,
};

struct Args {
    m: Option<usize>,
    n: Option<usize>,
    k: Option<usize>,
    seed: u64,
    distribution: Distribution,
    backend: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        m: None,
        n: None,
        k: None,
        seed: 1,
        distribution: Distribution::Task,
        backend: "auto".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--m" => args.m = Some(number(&value)?),
            "--n" => args.n = Some(number(&value)?),
            "--k" => args.k = Some(number(&value)?),
            "--seed" => args.seed = value.parse().map_err(|e| format!("--seed {value}: {e}"))?,
            "--dist" => args.distribution = value.parse().map_err(|e: nvfp4::Error| e.to_string())?,
            "--backend" => args.backend = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.backend != "auto" && args.backend != "cpu" {
        return Err(format!(
            "--backend {}: must be `auto` or `cpu` (no GPU dual-GEMM kernel yet)",
            args.backend
        ));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!(
                "{message}\nusage: dual_gemm [--m M] [--n N] [--k K] [--seed S] [--dist task|full] [--backend auto|cpu]"
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> nvfp4::Result<bool> {
    let shape = DualGemmShape {
        m: args.m.unwrap_or(CPU_DEFAULT_SHAPE.m),
        n: args.n.unwrap_or(CPU_DEFAULT_SHAPE.n),
        k: args.k.unwrap_or(CPU_DEFAULT_SHAPE.k),
    };
    println!(
        "backend: cpu (the GPU dual-GEMM kernels are not implemented yet); default shape on CPU is \
         M={} N={} K={}",
        CPU_DEFAULT_SHAPE.m, CPU_DEFAULT_SHAPE.n, CPU_DEFAULT_SHAPE.k
    );
    println!(
        "problem: M={} N={} K={}, {:?} inputs, seed {}",
        shape.m, shape.n, shape.k, args.distribution, args.seed
    );

    let t = Instant::now();
    let problem = Problem::random(shape, args.distribution, args.seed)?;
    println!("generated inputs in {:.2} s", t.elapsed().as_secs_f64());

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
