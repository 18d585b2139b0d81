//! Benchmark of the fused NVFP4 dual GEMM against the unfused alternatives and the hardware floor,
//! all measured side by side in one run on one GPU.
//!
//! ```text
//! cargo bench --bench dual_gemm -- [--shapes LIST] [--sets 50] [--max-seconds 3] [--results DIR]
//!   LIST: comma-separated groups or shapes: bench (the four task shapes), decode (M = 1, 16, 64,
//!   128 at N=4096, K=7168, and 1×14336×4096), prefill (M = 4096), all (default), or MxNxK
//! ```
//!
//! Method (the reference harness's, docs/format.md): per shape and backend, `--sets` distinct input sets;
//! before each timed batch the L2 is flushed (a 256 MiB memset); one event pair around a batch of
//! back-to-back calls, one per input set, launch cost included (µs per call = batch time / calls);
//! each backend in two phases of batches back to back, `--max-seconds` long, in the order A B …
//! … B A (`common::time_calls_in_phases`: each at the clocks of its own sustained load), the
//! mean of the batches of each phase's second half. Ours is timed as planned (on Hopper: programmatic dependent
//! launches, so one call's launch overlaps the previous call's tail) and again with plain launches.
//!
//! Backends: ours (the fused kernel on NVFP4); cuBLAS fp16 and bf16 (two GEMMs on weights and
//! activations dequantized beforehand, then `silu·mul`: what a user without this library runs);
//! through `benches/torch_baseline.py` when `python3` can import torch (same shapes and method,
//! its own random inputs): PyTorch bf16 `silu(a@b1.T)*(a@b2.T)`, and on compute capability 10.x
//! two `torch._scaled_mm` NVFP4 calls + SiLU·mul and, with `NVFP4_CUTE_DSL_DIR` pointing at the
//! hackathon's `submission.py` (with its `task.py`, `utils.py`), the CuTe DSL baseline. The 10.x
//! columns have never been run (no B200 here).
//!
//! Floor per shape: max(bytes / copy bandwidth, FLOPs / fp16 tensor rate), with both ceilings
//! measured in this run (a 1 GiB device-to-device copy counted as read + write; a cuBLAS fp16
//! 8192³ GEMM) and bytes/FLOPs counted as in docs/format.md. Output: a markdown table on stdout, JSON and
//! an SVG chart under `--results` (default `results/`). Without a supported GPU it prints why and
//! exits successfully.

mod common;

use std::fmt::Write as _;

use common::{
    BenchResult, Cli, Results, Timing, Variant, gemm_nt, geomean, ratio, show, time_calls_in_phases, timing,
};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::{CudaSlice, DeviceRepr};
use half::{bf16, f16};
use nvfp4::gpu::{DeviceNvFp4Matrix, Gpu};
use nvfp4::{Distribution, DualGemmShape, Problem};
use rayon::prelude::*;

const BENCH_SHAPES: [(usize, usize, usize); 4] = [
    (256, 4096, 7168),
    (512, 4096, 7168),
    (256, 3072, 4096),
    (512, 3072, 7168),
];
const DECODE_SHAPES: [(usize, usize, usize); 5] = [
    (1, 4096, 7168),
    (16, 4096, 7168),
    (64, 4096, 7168),
    (128, 4096, 7168),
    // Llama-3-8B's gate/up at one token: 16-step splits, the paired decode-size entries.
    (1, 14336, 4096),
];
const PREFILL_SHAPES: [(usize, usize, usize); 1] = [(4096, 4096, 7168)];

struct Options {
    shapes: Vec<DualGemmShape>,
    sets: usize,
    max_seconds: f64,
    results: String,
}

fn parse_options() -> Result<Options, String> {
    let cli = Cli::parse(&["shapes", "sets", "max-seconds", "results"], &[])?;
    let mut options = Options {
        shapes: Vec::new(),
        sets: cli.value("sets", 50)?,
        max_seconds: cli.value("max-seconds", 3.0)?,
        results: cli.value("results", "results".to_string())?,
    };
    let list: String = cli.value("shapes", "all".to_string())?;
    for item in list.split(',') {
        let group: &[(usize, usize, usize)] = match item {
            "bench" => &BENCH_SHAPES,
            "decode" => &DECODE_SHAPES,
            "prefill" => &PREFILL_SHAPES,
            "all" => &[],
            _ => {
                let (m, n, k) = common::parse_mnk(item, "bench, decode, prefill, all")?;
                options.shapes.push(DualGemmShape { m, n, k });
                continue;
            }
        };
        let group = if item == "all" {
            [&BENCH_SHAPES[..], &DECODE_SHAPES, &PREFILL_SHAPES].concat()
        } else {
            group.to_vec()
        };
        options
            .shapes
            .extend(group.into_iter().map(|(m, n, k)| DualGemmShape { m, n, k }));
    }
    options.sets = options.sets.max(1);
    Ok(options)
}

fn main() {
    // Every supported GPU: both modules have a dual-GEMM kernel (the 10.x one has never run),
    // and a shape without one still times the baselines (`KernelUnavailable` → no "ours").
    common::run_with_options("dual_gemm", parse_options(), |_| None, run);
}

/// One shape's results.
struct Row {
    shape: DualGemmShape,
    /// `None` on a GPU without a fused kernel yet (baselines only).
    ours: Option<Timing>,
    /// Ours with plain launches, where the plan uses programmatic dependent launches.
    ours_plain: Option<Timing>,
    /// Ours writing NVFP4 (`launch_nvfp4`) instead of fp16, where the GPU has that epilogue.
    ours_nvfp4: Option<Timing>,
    cublas_f16: Timing,
    cublas_bf16: Timing,
    torch_bf16: Option<f64>,
    torch_scaled_mm: Option<f64>,
    cute_dsl: Option<f64>,
    floor_us: f64,
    floor_bound: &'static str,
}

/// Element types of the unfused baseline: dequantization and SiLU·mul kernels for each.
trait DenseElement: DeviceRepr + Copy + cudarc::driver::ValidAsZeroBits
where
    CudaBlas: Gemm<Self>,
{
    const ONE: Self;
    const ZERO: Self;
    fn dequantize(gpu: &Gpu, m: &DeviceNvFp4Matrix) -> nvfp4::Result<CudaSlice<Self>>;
    fn silu_mul(
        gpu: &Gpu,
        gate: &CudaSlice<Self>,
        up: &CudaSlice<Self>,
        out: &mut CudaSlice<Self>,
    ) -> nvfp4::Result<()>;
}

impl DenseElement for f16 {
    const ONE: Self = f16::ONE;
    const ZERO: Self = f16::ZERO;
    fn dequantize(gpu: &Gpu, m: &DeviceNvFp4Matrix) -> nvfp4::Result<CudaSlice<Self>> {
        gpu.dequantize_f16(m)
    }
    fn silu_mul(
        gpu: &Gpu,
        gate: &CudaSlice<Self>,
        up: &CudaSlice<Self>,
        out: &mut CudaSlice<Self>,
    ) -> nvfp4::Result<()> {
        gpu.silu_mul_f16(gate, up, out)
    }
}

impl DenseElement for bf16 {
    const ONE: Self = bf16::ONE;
    const ZERO: Self = bf16::ZERO;
    fn dequantize(gpu: &Gpu, m: &DeviceNvFp4Matrix) -> nvfp4::Result<CudaSlice<Self>> {
        gpu.dequantize_bf16(m)
    }
    fn silu_mul(
        gpu: &Gpu,
        gate: &CudaSlice<Self>,
        up: &CudaSlice<Self>,
        out: &mut CudaSlice<Self>,
    ) -> nvfp4::Result<()> {
        gpu.silu_mul_bf16(gate, up, out)
    }
}

/// The unfused baseline's operands in element type `T`, dequantized beforehand (not timed),
/// and its outputs.
struct Unfused<T> {
    dense: Vec<[CudaSlice<T>; 3]>,
    gate: CudaSlice<T>,
    up: CudaSlice<T>,
    out: CudaSlice<T>,
}

impl<T: DenseElement> Unfused<T>
where
    CudaBlas: Gemm<T>,
{
    fn new(gpu: &Gpu, shape: DualGemmShape, inputs: &[[DeviceNvFp4Matrix; 3]]) -> BenchResult<Self> {
        let dense = inputs
            .iter()
            .map(|[a, b1, b2]| {
                Ok([
                    T::dequantize(gpu, a)?,
                    T::dequantize(gpu, b1)?,
                    T::dequantize(gpu, b2)?,
                ])
            })
            .collect::<nvfp4::Result<_>>()?;
        let outputs = || gpu.stream().alloc_zeros::<T>(shape.m * shape.n);
        Ok(Self {
            dense,
            gate: outputs()?,
            up: outputs()?,
            out: outputs()?,
        })
    }

    /// Per call two cuBLAS GEMMs and the SiLU·mul kernel, as a timed variant.
    fn variant<'a>(&'a mut self, gpu: &'a Gpu, blas: &'a CudaBlas, shape: DualGemmShape) -> Variant<'a> {
        let (m, n, k) = (shape.m, shape.n, shape.k);
        Box::new(move |i| {
            let [a, b1, b2] = &self.dense[i];
            gemm_nt(blas, (m, n, k), a, b1, &mut self.gate, T::ONE, T::ZERO)?;
            gemm_nt(blas, (m, n, k), a, b2, &mut self.up, T::ONE, T::ZERO)?;
            Ok(T::silu_mul(gpu, &self.gate, &self.up, &mut self.out)?)
        })
    }
}

fn bench_shape(
    gpu: &Gpu,
    setup: &mut common::Setup,
    shape: DualGemmShape,
    options: &Options,
) -> BenchResult<Row> {
    let common::Setup {
        blas,
        flush,
        ceilings,
    } = setup;
    let sets = options.sets;
    let problems: Vec<Problem> = (0..sets as u64)
        .into_par_iter()
        .map(|seed| Problem::random(shape, Distribution::Task, 1000 + seed))
        .collect::<nvfp4::Result<_>>()?;
    let inputs: Vec<[DeviceNvFp4Matrix; 3]> = problems
        .iter()
        .map(|p| Ok([gpu.upload(&p.a)?, gpu.upload(&p.b1)?, gpu.upload(&p.b2)?]))
        .collect::<nvfp4::Result<_>>()?;
    drop(problems);

    // Ours as planned (on Hopper: programmatic dependent launches), with plain launches, and
    // writing NVFP4 (a global scale that fits the task distribution's outputs; where the GPU
    // has that epilogue); the two cuBLAS baselines: in alternating phases
    // (`common::time_calls_in_phases`), all operands resident.
    let plan = match gpu.plan_dual_gemm(shape) {
        Ok(plan) => Some(plan),
        Err(nvfp4::Error::KernelUnavailable { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let plain = match &plan {
        Some(plan) if plan.programmatic_launch() => {
            let mut plain = gpu.plan_dual_gemm(shape)?;
            plain.set_programmatic_launch(false)?;
            Some(plain)
        }
        _ => None,
    };
    let mut h = gpu.alloc_nvfp4(shape.m, shape.n)?;
    let nvfp4_out = match &plan {
        Some(plan) => {
            let [a, b1, b2] = &inputs[0];
            match plan.launch_nvfp4(gpu, a, b1, b2, &mut h, 0.01) {
                Err(nvfp4::Error::KernelUnavailable { .. }) => false,
                first => {
                    first?;
                    true
                }
            }
        }
        None => false,
    };
    let mut f16_unfused = Unfused::<f16>::new(gpu, shape, &inputs)?;
    let mut bf16_unfused = Unfused::<bf16>::new(gpu, shape, &inputs)?;
    let (mut c, mut c_plain): (CudaSlice<f16>, CudaSlice<f16>) = (
        gpu.stream().alloc_zeros(shape.m * shape.n)?,
        gpu.stream().alloc_zeros(shape.m * shape.n)?,
    );
    let inputs = &inputs;
    let mut variants = vec![
        f16_unfused.variant(gpu, blas, shape),
        bf16_unfused.variant(gpu, blas, shape),
    ];
    let mut ours_at = [None; 3];
    if let Some(plan) = &plan {
        ours_at[0] = Some(variants.len());
        let c = &mut c;
        variants.push(Box::new(move |i| {
            let [a, b1, b2] = &inputs[i];
            Ok(plan.launch(gpu, a, b1, b2, c)?)
        }));
        if nvfp4_out {
            ours_at[2] = Some(variants.len());
            let h = &mut h;
            variants.push(Box::new(move |i| {
                let [a, b1, b2] = &inputs[i];
                Ok(plan.launch_nvfp4(gpu, a, b1, b2, h, 0.01)?)
            }));
        }
    }
    if let Some(plain) = &plain {
        ours_at[1] = Some(variants.len());
        let c = &mut c_plain;
        variants.push(Box::new(move |i| {
            let [a, b1, b2] = &inputs[i];
            Ok(plain.launch(gpu, a, b1, b2, c)?)
        }));
    }
    let samples = time_calls_in_phases(gpu, flush, sets, options.max_seconds, &mut variants)?;
    drop(variants);
    let [cublas_f16, cublas_bf16] = [timing(&samples[0]), timing(&samples[1])];
    let [ours, ours_plain, ours_nvfp4] = ours_at.map(|at| at.map(|i| timing(&samples[i])));

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
        ours_plain,
        ours_nvfp4,
        cublas_f16,
        cublas_bf16,
        torch_bf16: None,
        torch_scaled_mm: None,
        cute_dsl: None,
        floor_us,
        floor_bound,
    })
}

/// Runs `benches/torch_baseline.py` for all shapes: per shape, µs of PyTorch bf16,
/// `torch._scaled_mm` NVFP4 and the CuTe DSL baseline (`None` where not run); `Err` says why it
/// could not run at all.
fn torch_baseline(shapes: &[DualGemmShape], sets: usize) -> Result<Vec<[Option<f64>; 3]>, String> {
    let list: Vec<String> = shapes
        .iter()
        .map(|s| format!("{}x{}x{}", s.m, s.n, s.k))
        .collect();
    let stdout = common::python_baseline(
        "NVFP4_TORCH_BASELINE",
        "benches/torch_baseline.py",
        &["--sets", &sets.to_string(), "--shapes", &list.join(",")],
    )?;
    Ok(list
        .iter()
        .map(|name| {
            let line = stdout
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{name} ")));
            let mut values = line
                .into_iter()
                .flat_map(str::split_whitespace)
                .map(|v| v.parse::<f64>().ok());
            [
                values.next().flatten(),
                values.next().flatten(),
                values.next().flatten(),
            ]
        })
        .collect())
}

fn run(gpu: &Gpu, options: &Options) -> BenchResult<()> {
    let mut setup = common::setup(
        gpu,
        "shape",
        options.sets,
        "benches/dual_gemm.rs",
        options.max_seconds,
    )?;
    let mut rows = Vec::new();
    for &shape in &options.shapes {
        eprintln!("  {}×{}×{} …", shape.m, shape.n, shape.k);
        rows.push(bench_shape(gpu, &mut setup, shape, options)?);
    }
    let torch_note = match torch_baseline(&options.shapes, options.sets) {
        Ok(times) => {
            for (row, [bf16, scaled_mm, cute_dsl]) in rows.iter_mut().zip(times) {
                (row.torch_bf16, row.torch_scaled_mm, row.cute_dsl) = (bf16, scaled_mm, cute_dsl);
            }
            "PyTorch bf16: benches/torch_baseline.py".to_string()
        }
        Err(why) => format!("PyTorch baseline skipped: {why}"),
    };
    let table = markdown_table(&rows);
    common::write_results(
        gpu,
        &torch_note,
        Results {
            dir: &options.results,
            prefix: "bench",
            sets: options.sets,
            ceilings: Some(setup.ceilings),
            settings: serde_json::Value::Null,
            rows_key: "shapes",
            rows: rows.iter().map(row_json).collect(),
            table: &table,
            svg: Some(svg_chart(gpu, &rows)),
        },
    )?;
    Ok(())
}

fn markdown_table(rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| M × N × K | ours µs | ± | ours, plain launch µs | cuBLAS fp16 µs | cuBLAS bf16 µs | PyTorch bf16 µs | floor µs (bound) | ours / floor | TFLOP/s | GB/s | vs cuBLAS fp16 | vs cuBLAS bf16 | vs PyTorch |"
    );
    let _ = writeln!(t, "|{}", " --- |".repeat(14));
    for r in rows {
        let s = r.shape;
        let ours = r.ours.map(|o| o.us);
        let _ = writeln!(
            t,
            "| {}×{}×{} | {} | {} | {} | {:.1} | {:.1} | {} | {:.1} ({}) | {} | {} | {} | {} | {} | {} |",
            s.m,
            s.n,
            s.k,
            show(ours),
            r.ours.map_or("—".to_string(), |o| format!(
                "{:.1} %",
                100.0 * o.relative_error
            )),
            show(r.ours_plain.map(|o| o.us)),
            r.cublas_f16.us,
            r.cublas_bf16.us,
            show(r.torch_bf16),
            r.floor_us,
            r.floor_bound,
            ratio(ours, Some(r.floor_us)),
            ours.map_or("—".to_string(), |us| format!("{:.0}", s.flops() / us / 1e6)),
            ours.map_or("—".to_string(), |us| format!(
                "{:.0}",
                s.bytes() as f64 / us / 1e3
            )),
            ratio(Some(r.cublas_f16.us), ours),
            ratio(Some(r.cublas_bf16.us), ours),
            ratio(r.torch_bf16, ours),
        );
    }
    let bench: Vec<&Row> = rows
        .iter()
        .filter(|r| BENCH_SHAPES.contains(&(r.shape.m, r.shape.n, r.shape.k)))
        .collect();
    if bench.len() == BENCH_SHAPES.len() {
        let g = |f: &dyn Fn(&Row) -> Option<f64>| -> Option<f64> {
            let values: Option<Vec<f64>> = bench.iter().map(|r| f(r)).collect();
            values.map(|v| geomean(v.into_iter()))
        };
        let ours = g(&|r| r.ours.map(|o| o.us));
        let floor = g(&|r| Some(r.floor_us));
        let _ = writeln!(
            t,
            "| geomean (4 task shapes) | {} | | {} | {} | {} | {} | {} | {} | | | {} | {} | {} |",
            show(ours),
            show(g(&|r| r.ours_plain.map(|o| o.us))),
            show(g(&|r| Some(r.cublas_f16.us))),
            show(g(&|r| Some(r.cublas_bf16.us))),
            show(g(&|r| r.torch_bf16)),
            show(floor),
            g(&|r| r.ours.map(|o| o.us / r.floor_us)).map_or("—".to_string(), |v| format!("{v:.2}")),
            ratio(g(&|r| Some(r.cublas_f16.us)), ours),
            ratio(g(&|r| Some(r.cublas_bf16.us)), ours),
            ratio(g(&|r| r.torch_bf16), ours),
        );
    }
    if rows.iter().any(|r| r.ours_nvfp4.is_some()) {
        // The same kernels writing NVFP4 (the MLP's form) beside the fp16 output.
        let _ = writeln!(
            t,
            "\n| M × N × K | ours, fp16 out µs | ours, NVFP4 out µs | NVFP4 / fp16 |\n| --- | --- | --- | --- |"
        );
        for r in rows {
            let (m, n, k) = (r.shape.m, r.shape.n, r.shape.k);
            let (fp16, nvfp4) = (r.ours.map(|o| o.us), r.ours_nvfp4.map(|o| o.us));
            let _ = writeln!(
                t,
                "| {m}×{n}×{k} | {} | {} | {} |",
                show(fp16),
                show(nvfp4),
                fp16.zip(nvfp4)
                    .map_or("—".to_string(), |(f, q)| format!("{:.3}", q / f)),
            );
        }
    }
    if rows
        .iter()
        .any(|r| r.torch_scaled_mm.is_some() || r.cute_dsl.is_some())
    {
        // The 10.x baselines (same shapes, same method) as a second table.
        let _ = writeln!(
            t,
            "\n| M × N × K | torch._scaled_mm NVFP4 µs | CuTe DSL baseline µs |\n| --- | --- | --- |"
        );
        for r in rows {
            let (m, n, k) = (r.shape.m, r.shape.n, r.shape.k);
            let _ = writeln!(
                t,
                "| {m}×{n}×{k} | {} | {} |",
                show(r.torch_scaled_mm),
                show(r.cute_dsl)
            );
        }
    }
    t
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
        "ours_batches": r.ours.map(|o| o.batches),
        "ours_plain_launch_us": r.ours_plain.map(|o| o.us),
        "ours_nvfp4_out_us": r.ours_nvfp4.map(|o| o.us),
        "cublas_fp16_us": r.cublas_f16.us,
        "cublas_bf16_us": r.cublas_bf16.us,
        "torch_bf16_us": r.torch_bf16,
        "torch_scaled_mm_us": r.torch_scaled_mm,
        "cute_dsl_us": r.cute_dsl,
        "floor_us": r.floor_us,
        "floor_bound": r.floor_bound,
    })
}

/// Grouped horizontal bars per shape: floor, ours, cuBLAS fp16, PyTorch bf16 (µs, log scale).
fn svg_chart(gpu: &Gpu, rows: &[Row]) -> String {
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{}×{}×{}", r.shape.m, r.shape.n, r.shape.k))
        .collect();
    common::svg_bars(
        &format!(
            "NVFP4 dual GEMM on {} — µs per call (log scale), floor from ceilings measured in the same run",
            gpu.name()
        ),
        &labels,
        &["floor", "ours", "cuBLAS fp16", "PyTorch bf16"],
        |j, i| {
            let r = &rows[j];
            match i {
                0 => Some(r.floor_us),
                1 => r.ours.map(|o| o.us),
                2 => Some(r.cublas_f16.us),
                _ => r.torch_bf16,
            }
        },
    )
}
