//! Benchmark of the plain NVFP4 GEMM `C = α · A·Bᵀ` against cuBLAS and the hardware floor, all
//! measured side by side in one run on one GPU.
//!
//! ```text
//! cargo bench --bench gemm -- [--shapes LIST] [--sets 20] [--max-seconds 2] [--results DIR]
//!   LIST: comma-separated groups or shapes: gpumode (the GPU MODE nvfp4_gemm benchmark shapes),
//!   gemv (the GPU MODE nvfp4_gemv shapes as M = 1 GEMMs), down (MLP down projections, M = 1 …
//!   4096 at N = 4096, K = 7168 and K = 14336), all (default), or MxNxK
//! ```
//!
//! Method (`benches/common`, the reference harness's): per shape `--sets` distinct input sets,
//! the L2 flushed before each timed batch of back-to-back calls (launch cost included); ours and
//! the peers each in two phases of batches back to back, `--max-seconds` long, in the order A B
//! C C B A (`common::time_calls_in_phases`: each at the clocks of its own sustained load), the
//! mean of the batches of each phase's second half. Ours as planned (`Gpu::plan_gemm`).
//! Peers: one cuBLAS fp16 and one bf16 GEMM on operands dequantized beforehand (what a user
//! without this library runs). Floor per shape: max(bytes / copy bandwidth, FLOPs / fp16 tensor
//! rate), both ceilings measured in this run; bytes: A and B as fp4 data with their blocked
//! scales, C as fp16; FLOPs: 2·M·N·K. Output: a markdown table on stdout, JSON and markdown
//! under `--results` (default `results/`). Without a supported GPU it prints why and exits
//! successfully.

mod common;

use std::fmt::Write as _;

use common::{
    BenchResult, Cli, Results, Timing, Variant, gemm_nt, geomean, ratio, time_calls_in_phases, timing,
};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::{CudaSlice, DeviceRepr};
use half::{bf16, f16};
use nvfp4::gemm::GemmShape;
use nvfp4::gpu::{DeviceNvFp4Matrix, Gpu};
use nvfp4::{Distribution, DualGemmShape, Problem};
use rayon::prelude::*;

/// The GPU MODE `nvfp4_gemm` problem's benchmark shapes (M × N × K).
const GPUMODE_SHAPES: [(usize, usize, usize); 3] = [(128, 7168, 16384), (128, 4096, 7168), (128, 7168, 2048)];
/// The GPU MODE `nvfp4_gemv` problem's shapes, as GEMMs of one token.
const GEMV_SHAPES: [(usize, usize, usize); 3] = [(1, 7168, 16384), (1, 4096, 7168), (1, 7168, 2048)];
/// Token counts of the MLP down projections (N = 4096 outputs, K = 7168 and 14336).
const DOWN_TOKENS: [usize; 6] = [1, 16, 64, 256, 1024, 4096];

struct Options {
    shapes: Vec<GemmShape>,
    sets: usize,
    max_seconds: f64,
    results: String,
}

fn parse_options() -> Result<Options, String> {
    let cli = Cli::parse(&["shapes", "sets", "max-seconds", "results"], &[])?;
    let list: String = cli.value("shapes", "all".to_string())?;
    let down = || {
        [7168, 14336]
            .into_iter()
            .flat_map(|k| DOWN_TOKENS.map(|m| (m, 4096, k)))
            .collect::<Vec<_>>()
    };
    let mut shapes = Vec::new();
    for item in list.split(',') {
        let group = match item {
            "gpumode" => GPUMODE_SHAPES.to_vec(),
            "gemv" => GEMV_SHAPES.to_vec(),
            "down" => down(),
            "all" => [&GPUMODE_SHAPES[..], &GEMV_SHAPES, &down()].concat(),
            _ => vec![common::parse_mnk(item, "gpumode, gemv, down, all")?],
        };
        for (m, n, k) in group {
            let shape = GemmShape { m, n, k };
            if !shapes.contains(&shape) {
                shapes.push(shape); // `all` names 1×4096×7168 twice (gemv and down)
            }
        }
    }
    Ok(Options {
        shapes,
        sets: cli.value("sets", 20usize)?.max(1),
        max_seconds: cli.value("max-seconds", 2.0)?,
        results: cli.value("results", "results".to_string())?,
    })
}

fn main() {
    common::run_with_options("gemm", parse_options(), |_| None, run);
}

/// One shape's results.
struct Row {
    shape: GemmShape,
    ours: Option<Timing>,
    cublas_f16: Timing,
    cublas_bf16: Timing,
    floor_us: f64,
    floor_bound: &'static str,
}

/// One cuBLAS GEMM per call in element type `T` on operands dequantized beforehand, as a timed
/// variant writing `out`.
fn cublas<'a, T: DeviceRepr + Copy + cudarc::driver::ValidAsZeroBits>(
    blas: &'a CudaBlas,
    shape: GemmShape,
    dense: &'a [[CudaSlice<T>; 2]],
    out: &'a mut CudaSlice<T>,
    one: T,
    zero: T,
) -> Variant<'a>
where
    CudaBlas: Gemm<T>,
{
    Box::new(move |i| {
        let [a, b] = &dense[i];
        gemm_nt(blas, (shape.m, shape.n, shape.k), a, b, out, one, zero)
    })
}

fn bench_shape(
    gpu: &Gpu,
    setup: &mut common::Setup,
    shape: GemmShape,
    options: &Options,
) -> BenchResult<Row> {
    let sets = options.sets;
    let GemmShape { m, n, k } = shape;
    // A and B1 of a random dual-GEMM problem are a GEMM's A and B (the reference harness's
    // value distribution).
    let inputs: Vec<[DeviceNvFp4Matrix; 2]> = (0..sets as u64)
        .into_par_iter()
        .map(|seed| Problem::random(DualGemmShape { m, n, k }, Distribution::Task, 2000 + seed))
        .collect::<nvfp4::Result<Vec<_>>>()?
        .iter()
        .map(|p| Ok([gpu.upload(&p.a)?, gpu.upload(&p.b1)?]))
        .collect::<nvfp4::Result<_>>()?;

    // Ours and the two peers in alternating phases (`common::time_calls_in_phases`), all
    // operands resident.
    let dense_f16 = inputs
        .iter()
        .map(|[a, b]| Ok([gpu.dequantize_f16(a)?, gpu.dequantize_f16(b)?]))
        .collect::<nvfp4::Result<Vec<_>>>()?;
    let dense_bf16 = inputs
        .iter()
        .map(|[a, b]| Ok([gpu.dequantize_bf16(a)?, gpu.dequantize_bf16(b)?]))
        .collect::<nvfp4::Result<Vec<_>>>()?;
    let mut c: CudaSlice<f16> = gpu.stream().alloc_zeros(m * n)?;
    let mut c_f16: CudaSlice<f16> = gpu.stream().alloc_zeros(m * n)?;
    let mut c_bf16: CudaSlice<bf16> = gpu.stream().alloc_zeros(m * n)?;
    let plan = match gpu.plan_gemm(shape) {
        Ok(plan) => Some(plan),
        Err(nvfp4::Error::KernelUnavailable { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let common::Setup {
        blas,
        flush,
        ceilings,
    } = setup;
    let mut variants = vec![
        cublas(blas, shape, &dense_f16, &mut c_f16, f16::ONE, f16::ZERO),
        cublas(blas, shape, &dense_bf16, &mut c_bf16, bf16::ONE, bf16::ZERO),
    ];
    if let Some(plan) = &plan {
        let (inputs, c) = (&inputs, &mut c);
        variants.push(Box::new(move |i| {
            let [a, b] = &inputs[i];
            Ok(plan.launch(gpu, a, b, c)?)
        }));
    }
    let samples = time_calls_in_phases(gpu, flush, sets, options.max_seconds, &mut variants)?;
    let [cublas_f16, cublas_bf16] = [timing(&samples[0]), timing(&samples[1])];
    let ours = samples.get(2).map(|s| timing(s));

    let memory_us = shape.bytes() as f64 / ceilings.copy_gbs / 1e3;
    let compute_us = shape.flops() / ceilings.fp16_tflops / 1e6;
    let (floor_us, floor_bound) = if memory_us > compute_us {
        (memory_us, "memory")
    } else {
        (compute_us, "fp16 tensor")
    };
    Ok(Row {
        shape,
        ours,
        cublas_f16,
        cublas_bf16,
        floor_us,
        floor_bound,
    })
}

fn run(gpu: &Gpu, options: &Options) -> BenchResult<()> {
    let mut setup = common::setup(gpu, "shape", options.sets, "benches/gemm.rs", options.max_seconds)?;
    let mut rows = Vec::new();
    for &shape in &options.shapes {
        eprintln!("  {}×{}×{} …", shape.m, shape.n, shape.k);
        rows.push(bench_shape(gpu, &mut setup, shape, options)?);
    }
    let table = markdown_table(&rows);
    common::write_results(
        gpu,
        "peers: cuBLAS on operands dequantized beforehand",
        Results {
            dir: &options.results,
            prefix: "gemm",
            sets: options.sets,
            ceilings: Some(setup.ceilings),
            settings: serde_json::Value::Null,
            rows_key: "shapes",
            rows: rows.iter().map(row_json).collect(),
            table: &table,
            svg: None,
        },
    )
}

/// A shape's JSON record.
fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "m": r.shape.m,
        "n": r.shape.n,
        "k": r.shape.k,
        "ours_us": r.ours.map(|o| o.us),
        "ours_median_us": r.ours.map(|o| o.median_us),
        "ours_relative_error": r.ours.map(|o| o.relative_error),
        "cublas_fp16_us": r.cublas_f16.us,
        "cublas_bf16_us": r.cublas_bf16.us,
        "floor_us": r.floor_us,
        "floor_bound": r.floor_bound,
    })
}

fn markdown_table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| M × N × K | ours µs | cuBLAS fp16 µs | cuBLAS bf16 µs | floor µs (bound) | ours / floor | vs cuBLAS fp16 | vs cuBLAS bf16 |\n",
    );
    t += &format!("|{}\n", " --- |".repeat(8));
    for r in rows {
        let ours = r.ours.map(|o| o.us);
        let GemmShape { m, n, k } = r.shape;
        let _ = writeln!(
            t,
            "| {m}×{n}×{k} | {} | {:.1} | {:.1} | {:.1} ({}) | {} | {} | {} |",
            common::show(ours),
            r.cublas_f16.us,
            r.cublas_bf16.us,
            r.floor_us,
            r.floor_bound,
            ours.map_or("—".to_string(), |o| format!("{:.2}", o / r.floor_us)),
            ratio(Some(r.cublas_f16.us), ours),
            ratio(Some(r.cublas_bf16.us), ours),
        );
    }
    let gpumode: Vec<&Row> = rows
        .iter()
        .filter(|r| GPUMODE_SHAPES.contains(&(r.shape.m, r.shape.n, r.shape.k)))
        .collect();
    if gpumode.len() == GPUMODE_SHAPES.len() && gpumode.iter().all(|r| r.ours.is_some()) {
        let ours = geomean(gpumode.iter().filter_map(|r| r.ours.map(|o| o.us)));
        let floor = geomean(gpumode.iter().map(|r| r.floor_us));
        let _ = writeln!(
            t,
            "| **geomean, GPU MODE shapes** | **{ours:.1}** | {:.1} | {:.1} | {floor:.1} | **{:.2}** | | |",
            geomean(gpumode.iter().map(|r| r.cublas_f16.us)),
            geomean(gpumode.iter().map(|r| r.cublas_bf16.us)),
            ours / floor
        );
    }
    t
}
