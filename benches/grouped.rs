//! Benchmark of the grouped NVFP4 GEMM and grouped dual GEMM (MoE experts) against the
//! alternatives a user has and the hardware floor, all measured side by side in one run.
//!
//! ```text
//! cargo bench --bench grouped -- [--cases LIST] [--sets 20] [--max-seconds 2] [--results DIR]
//!     [--tokens-per-group T] [--fixed-sizes-contiguous]
//!   LIST: comma-separated groups or case names: gpumode (the four cases of the public grouped
//!   benchmark problem), decode, prefill (MoE gate/up layers at 64 and 4096 tokens), all (default)
//!   T: the plans' `tokens_per_group` (picks the token tile; default: tokens / groups)
//!   --fixed-sizes-contiguous: run the GPU MODE cases in the contiguous convention instead (the
//!   same kinds of data: a weight copy per input set, tokens drawn as the separate convention's)
//! ```
//!
//! Cases: the public problem's four (`C_g = A_g·B_gᵀ`, per-group allocations and sizes: the
//! *separate* convention, fixed group sizes), and the gate/up projections (grouped dual GEMM,
//! *contiguous* convention, w1 and w3 concatenated) of DeepSeek-V3 (256 experts, top-8, K = 7168,
//! I = 2048), Qwen3-30B-A3B (128, top-8, 2048, 768) and gpt-oss-120b (128, top-4, K = I = 2880)
//! at 64 tokens (decode) and 4096 tokens (prefill). Each token picks top-k distinct experts
//! uniformly at random, a new routing for every input set: every call reads its own offsets
//! from device memory (nothing about the routing is cached on the host or in the plan).
//!
//! Method (`benches/common`, the reference harness's): per case `--sets` input sets (weights
//! repeat only when `sets` copies would not fit 2 GiB, and then each copy is far larger than
//! the L2); the L2 flushed before each timed batch of back-to-back calls, one per set, launch
//! cost included. Ours as planned, ours with plain launches and the cuBLAS loop each in two
//! phases of batches back to back, `--max-seconds` long, in the order A B C C B A
//! (`common::time_calls_in_phases`: each at the clocks of its own sustained load), the mean of
//! the batches of each phase's second half; all their operands resident.
//!
//! Peers, same cases and method: a per-group loop of cuBLAS fp16 GEMMs on weights and tokens
//! dequantized beforehand (for gate/up: two GEMMs per group, then one SiLU·mul over all rows),
//! and, through `benches/torch_grouped_baseline.py` when `python3` can import torch, one
//! `torch._grouped_mm` bf16 call (gate/up: over the concatenated w13, then SiLU·mul).
//!
//! Floor per case: max(bytes / copy bandwidth, FLOPs / fp16 tensor rate), both ceilings measured
//! in this run; bytes are the NVFP4 tokens, the weights of groups with tokens (a group without
//! rows needs none), and the fp16 output, averaged over the sets' routings. Output: a markdown
//! table on stdout, JSON, markdown and an SVG chart under `--results` (default `results/`).
//! Without a Hopper GPU it prints why and exits successfully.

mod common;

use std::fmt::Write as _;

use common::{BenchResult, Cli, Results, Timing, Variant, gemm_nt, geomean, ratio, show, timing};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use half::f16;
use nvfp4::gpu::{DeviceNvFp4Matrix, F16Mut, Gpu};
use nvfp4::grouped::{
    ContiguousInputs, ContiguousTokens, GroupedLayout, GroupedOp, GroupedPlan, GroupedWeights, SeparateGroup,
    UpWeights,
};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{BlockedScales, Distribution, NvFp4Matrix};
use rayon::prelude::*;

/// How a case's tokens are grouped.
#[derive(Clone, Copy, Debug)]
enum Routing {
    /// Fixed group sizes, per-group allocations (the separate convention).
    Fixed(&'static [usize]),
    /// `tokens` each routed to `top_k` of the groups, one contiguous buffer.
    TopK { tokens: usize, top_k: usize },
}

#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    /// Which list of `--cases` it belongs to.
    family: &'static str,
    op: GroupedOp,
    groups: usize,
    routing: Routing,
    /// Outputs per group (of each product for gate/up).
    n: usize,
    k: usize,
}

const fn gpumode(name: &'static str, sizes: &'static [usize], n: usize, k: usize) -> Case {
    Case {
        name,
        family: "gpumode",
        op: GroupedOp::Gemm,
        groups: sizes.len(),
        routing: Routing::Fixed(sizes),
        n,
        k,
    }
}

const fn moe(
    name: &'static str,
    family: &'static str,
    experts: usize,
    tokens: usize,
    top_k: usize,
    i: usize,
    k: usize,
) -> Case {
    Case {
        name,
        family,
        op: GroupedOp::DualGemm,
        groups: experts,
        routing: Routing::TopK { tokens, top_k },
        n: i,
        k,
    }
}

const CASES: [Case; 10] = [
    gpumode("gpumode-1", &[80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168),
    gpumode("gpumode-2", &[40, 76, 168, 72, 164, 148, 196, 160], 7168, 2048),
    gpumode("gpumode-3", &[192, 320], 3072, 4096),
    gpumode("gpumode-4", &[128, 384], 4096, 1536),
    moe("deepseek-v3-decode", "decode", 256, 64, 8, 2048, 7168),
    moe("qwen3-30b-decode", "decode", 128, 64, 8, 768, 2048),
    moe("gpt-oss-120b-decode", "decode", 128, 64, 4, 2880, 2880),
    moe("deepseek-v3-prefill", "prefill", 256, 4096, 8, 2048, 7168),
    moe("qwen3-30b-prefill", "prefill", 128, 4096, 8, 768, 2048),
    moe("gpt-oss-120b-prefill", "prefill", 128, 4096, 4, 2880, 2880),
];

/// Device memory that per-set copies of a case's weights (or tokens) may take.
const COPY_BUDGET_BYTES: usize = 2 << 30;

struct Options {
    cases: Vec<Case>,
    sets: usize,
    max_seconds: f64,
    results: String,
    tokens_per_group: Option<usize>,
    fixed_sizes_contiguous: bool,
}

fn parse_options() -> Result<Options, String> {
    let cli = Cli::parse(
        &["cases", "sets", "max-seconds", "results", "tokens-per-group"],
        &["fixed-sizes-contiguous"],
    )?;
    let tokens_per_group: usize = cli.value("tokens-per-group", 0)?;
    let mut options = Options {
        cases: Vec::new(),
        sets: cli.value("sets", 20)?,
        max_seconds: cli.value("max-seconds", 2.0)?,
        results: cli.value("results", "results".to_string())?,
        tokens_per_group: (tokens_per_group > 0).then_some(tokens_per_group),
        fixed_sizes_contiguous: cli.switch("fixed-sizes-contiguous"),
    };
    let list: String = cli.value("cases", "all".to_string())?;
    for item in list.split(',') {
        let matching: Vec<Case> = CASES
            .iter()
            .filter(|c| item == "all" || c.family == item || c.name == item)
            .copied()
            .collect();
        if matching.is_empty() {
            let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
            return Err(format!(
                "unknown case {item} (gpumode, decode, prefill, all, or one of {names:?})"
            ));
        }
        options.cases.extend(matching);
    }
    options.sets = options.sets.max(1);
    Ok(options)
}

fn main() {
    common::run_with_options("grouped", parse_options(), |_| None, run);
}

/// Group sizes of each input set.
fn routings(case: &Case, sets: usize) -> Vec<Vec<usize>> {
    (0..sets)
        .map(|set| match case.routing {
            Routing::Fixed(sizes) => sizes.to_vec(),
            Routing::TopK { tokens, top_k } => {
                let mut rng = Rng::new(7000 + set as u64);
                let mut sizes = vec![0; case.groups];
                for _ in 0..tokens {
                    let mut chosen: Vec<usize> = Vec::with_capacity(top_k);
                    while chosen.len() < top_k {
                        let g = (rng.next_u64() % case.groups as u64) as usize;
                        if !chosen.contains(&g) {
                            chosen.push(g);
                        }
                    }
                    chosen.into_iter().for_each(|g| sizes[g] += 1);
                }
                sizes
            }
        })
        .collect()
}

/// Weight rows per group (gate and up together for the dual GEMM).
fn weight_rows(case: &Case) -> usize {
    match case.op {
        GroupedOp::DualGemm => 2 * case.n,
        GroupedOp::Gemm => case.n,
    }
}

/// NVFP4 bytes of `rows × k` (packed data and one scale byte per 16).
fn nvfp4_bytes(rows: usize, k: usize) -> f64 {
    (rows * k / 2 + rows * k / 16) as f64
}

/// Bytes and FLOPs of one call with these group sizes.
fn traffic(case: &Case, sizes: &[usize]) -> (f64, f64) {
    let tokens: usize = sizes.iter().sum();
    let busy = sizes.iter().filter(|&&m| m > 0).count();
    let bytes = nvfp4_bytes(tokens, case.k)
        + busy as f64 * nvfp4_bytes(weight_rows(case), case.k)
        + (tokens * case.n * 2) as f64;
    (bytes, 2.0 * (tokens * weight_rows(case) * case.k) as f64)
}

/// A random stack of `groups` weight matrices of `rows × k` (Task distribution).
fn random_weights(groups: usize, rows: usize, k: usize, seed: u64) -> Vec<NvFp4Matrix> {
    (0..groups)
        .into_par_iter()
        .map(|g| {
            random_matrix(
                rows,
                k,
                Distribution::Task,
                &mut Rng::new(seed * 100_003 + g as u64),
            )
            .unwrap()
        })
        .collect()
}

/// Copies of a case's weights for `sets` input sets: one per set where they fit
/// [`COPY_BUDGET_BYTES`], else as many as do.
fn weight_copies(case: &Case, sets: usize) -> usize {
    let bytes = case.groups as f64 * nvfp4_bytes(weight_rows(case), case.k);
    (COPY_BUDGET_BYTES / bytes as usize).clamp(1, sets)
}

/// One case's results.
struct Row {
    case: Case,
    sizes: String,
    ours: Timing,
    ours_plain: Timing,
    cublas_loop: Timing,
    torch_grouped_mm: Option<f64>,
    floor_us: f64,
    floor_bound: &'static str,
    tile: u32,
}

/// The per-group cuBLAS fp16 loop's outputs; [`CublasLoop::variant`] times it.
struct CublasLoop {
    gate: CudaSlice<f16>,
    up: CudaSlice<f16>,
    out: CudaSlice<f16>,
}

impl CublasLoop {
    /// Outputs for `rows` token rows of `case`.
    fn new(gpu: &Gpu, case: &Case, rows: usize) -> BenchResult<Self> {
        let outputs = || gpu.stream().alloc_zeros::<f16>(rows * case.n);
        Ok(Self {
            gate: outputs()?,
            up: outputs()?,
            out: outputs()?,
        })
    }

    /// Call `set`: group g multiplies its rows of `tokens[set % copies]` (dequantized tokens,
    /// `rows × k`) by its dequantized weights into `gate` (and `up`), then SiLU·mul.
    fn variant<'a>(
        &'a mut self,
        gpu: &'a Gpu,
        blas: &'a CudaBlas,
        case: &'a Case,
        sizes: &'a [Vec<usize>],
        tokens: &'a [CudaSlice<f16>],
        weights: &'a [Vec<CudaSlice<f16>>],
    ) -> Variant<'a> {
        Box::new(move |set| {
            let a = &tokens[set % tokens.len()];
            let w = &weights[set % weights.len()];
            let mut row = 0;
            for (g, &m) in sizes[set].iter().enumerate() {
                if m == 0 {
                    continue;
                }
                let a_g = a.slice(row * case.k..(row + m) * case.k);
                let shape = (m, case.n, case.k);
                let mut gate_g = self.gate.slice_mut(row * case.n..(row + m) * case.n);
                match case.op {
                    GroupedOp::Gemm => gemm_nt(blas, shape, &a_g, &w[g], &mut gate_g, f16::ONE, f16::ZERO)?,
                    GroupedOp::DualGemm => {
                        let half = case.n * case.k;
                        gemm_nt(
                            blas,
                            shape,
                            &a_g,
                            &w[g].slice(..half),
                            &mut gate_g,
                            f16::ONE,
                            f16::ZERO,
                        )?;
                        let mut up_g = self.up.slice_mut(row * case.n..(row + m) * case.n);
                        gemm_nt(
                            blas,
                            shape,
                            &a_g,
                            &w[g].slice(half..),
                            &mut up_g,
                            f16::ONE,
                            f16::ZERO,
                        )?;
                    }
                }
                row += m;
            }
            if case.op == GroupedOp::DualGemm {
                gpu.silu_mul_f16(&self.gate, &self.up, &mut self.out)?;
            }
            Ok(())
        })
    }
}

/// Ours as planned, ours with plain launches, and the cuBLAS loop, in alternating phases
/// (`common::time_calls_in_phases`), all operands resident.
fn time_three(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    sets: usize,
    max_seconds: f64,
    variants: [Variant; 3],
) -> BenchResult<(Timing, Timing, Timing)> {
    let mut variants = Vec::from(variants);
    let samples = common::time_calls_in_phases(gpu, flush, sets, max_seconds, &mut variants)?;
    Ok((timing(&samples[0]), timing(&samples[1]), timing(&samples[2])))
}

/// Contiguous-convention inputs of one set on the device.
struct ContiguousSet {
    a: CudaSlice<u8>,
    a_scales: CudaSlice<u8>,
    row_offsets: CudaSlice<u32>,
    scale_offsets: CudaSlice<u32>,
}

#[allow(clippy::too_many_arguments)]
fn bench_contiguous(
    gpu: &Gpu,
    blas: &CudaBlas,
    flush: &mut CudaSlice<u8>,
    case: &Case,
    sizes: &[Vec<usize>],
    rows: usize,
    options: &Options,
) -> BenchResult<(Timing, Timing, Timing, u32)> {
    let (k, n) = (case.k, case.n);
    let scale_rows = ContiguousTokens::scale_rows_for(rows, case.groups);
    let token_copies = (COPY_BUDGET_BYTES / nvfp4_bytes(rows, k) as usize).clamp(1, sizes.len());
    let stream = gpu.stream();
    let sets: Vec<ContiguousSet> = sizes
        .iter()
        .enumerate()
        .map(|(set, sizes)| {
            let mut rng = Rng::new(500 + (set % token_copies) as u64);
            let mut a = vec![0u8; rows * k / 2];
            rng.fill(&mut a);
            a.iter_mut().for_each(|b| *b &= 0b1011_1011);
            // Scales drawn as `Distribution::Task` draws them (the reference harness's, and the
            // cuBLAS loop's tokens'): at the power limit the data's bits set the clocks, and
            // {1.0, 2.0} alone read ≈ 3 % faster on long calls (perf log entry 167).
            let scales: Vec<u8> = (0..BlockedScales::new(scale_rows, k).len())
                .map(|_| nvfp4::codec::f32_to_e4m3(rng.next_f32()))
                .collect();
            let (mut row_offsets, mut scale_offsets) = (vec![0u32], vec![0u32]);
            for &m in sizes {
                row_offsets.push(row_offsets.last().unwrap() + m as u32);
                scale_offsets.push(scale_offsets.last().unwrap() + m.next_multiple_of(128) as u32);
            }
            Ok(ContiguousSet {
                a: stream.clone_htod(&a)?,
                a_scales: stream.clone_htod(&scales)?,
                row_offsets: stream.clone_htod(&row_offsets)?,
                scale_offsets: stream.clone_htod(&scale_offsets)?,
            })
        })
        .collect::<BenchResult<_>>()?;
    // The GPU MODE cases take a weight copy per input set, as in their separate convention
    // (`bench_separate`): one shared copy would stay in L2 across a batch where it fits
    // (gpumode-3/-4). The MoE layers' weights are one copy, far larger than the L2.
    let copies = match case.routing {
        Routing::Fixed(_) => weight_copies(case, sizes.len()),
        Routing::TopK { .. } => 1,
    };
    let weights: Vec<Vec<NvFp4Matrix>> = (0..copies)
        .map(|copy| random_weights(case.groups, weight_rows(case), k, 1 + copy as u64))
        .collect();
    let stacked: Vec<GroupedWeights> = weights
        .iter()
        .map(|w| Ok(gpu.upload_grouped_weights(w)?))
        .collect::<BenchResult<_>>()?;
    let alphas = stream.clone_htod(&vec![1.0f32; case.groups])?;
    let layout = GroupedLayout::Contiguous {
        groups: case.groups,
        rows,
        scale_rows,
        n,
        k,
        up: match case.op {
            GroupedOp::DualGemm => UpWeights::Concatenated,
            GroupedOp::Gemm => UpWeights::Separate,
        },
    };
    let plan: GroupedPlan = gpu.plan_grouped(case.op, layout, options.tokens_per_group)?;
    let mut plain: GroupedPlan = gpu.plan_grouped(case.op, layout, options.tokens_per_group)?;
    plain.set_programmatic_launch(false);
    let (tile, ctas) = plan.tile_and_grid();
    eprintln!("    tile {tile}, {ctas} CTAs");
    // The cuBLAS loop on dequantized operands (its own random tokens, same routings).
    let dense_tokens: Vec<CudaSlice<f16>> = (0..token_copies)
        .map(|copy| {
            let a = random_matrix(rows, k, Distribution::Task, &mut Rng::new(900 + copy as u64))?;
            Ok(gpu.dequantize_f16(&gpu.upload(&a)?)?)
        })
        .collect::<BenchResult<_>>()?;
    let dense_weights: Vec<Vec<CudaSlice<f16>>> = weights
        .iter()
        .map(|w| dequantize_all(gpu, w))
        .collect::<BenchResult<_>>()?;
    drop(weights);
    let mut cublas_loop = CublasLoop::new(gpu, case, rows)?;
    let (mut c, mut c_plain): (CudaSlice<f16>, CudaSlice<f16>) =
        (stream.alloc_zeros(rows * n)?, stream.alloc_zeros(rows * n)?);
    let dual = case.op == GroupedOp::DualGemm;
    let variants = [
        contiguous_variant(gpu, &plan, &sets, &stacked, &alphas, dual, &mut c),
        contiguous_variant(gpu, &plain, &sets, &stacked, &alphas, dual, &mut c_plain),
        cublas_loop.variant(gpu, blas, case, sizes, &dense_tokens, &dense_weights),
    ];
    let (ours, ours_plain, cublas_loop) = time_three(gpu, flush, sizes.len(), options.max_seconds, variants)?;
    plan.device_status(gpu)?;
    plain.device_status(gpu)?;
    Ok((ours, ours_plain, cublas_loop, tile))
}

/// Our contiguous-convention launch as a timed variant: call `set` on `sets[set]` and weight
/// copy `set % stacked.len()`.
fn contiguous_variant<'a>(
    gpu: &'a Gpu,
    plan: &'a GroupedPlan,
    sets: &'a [ContiguousSet],
    stacked: &'a [GroupedWeights],
    alphas: &'a CudaSlice<f32>,
    dual: bool,
    c: &'a mut CudaSlice<f16>,
) -> Variant<'a> {
    Box::new(move |set| {
        let s = &sets[set];
        let inputs = ContiguousInputs {
            a: &s.a,
            a_scales: &s.a_scales,
            row_offsets: &s.row_offsets,
            scale_offsets: &s.scale_offsets,
            gate: stacked[set % stacked.len()].view(),
            up: None,
            alpha_gate: Some(alphas),
            alpha_up: dual.then_some(alphas),
            scale: 1.0,
        };
        Ok(plan.launch(gpu, &inputs, c)?)
    })
}

/// Our separate-convention launch as a timed variant: call `set` on copy `set % copies` of the
/// groups' tokens and weights, into `outputs`.
fn separate_variant<'a>(
    gpu: &'a Gpu,
    plan: &'a GroupedPlan,
    device: &'a [Vec<(DeviceNvFp4Matrix, DeviceNvFp4Matrix)>],
    outputs: &'a mut [CudaSlice<f16>],
) -> Variant<'a> {
    Box::new(move |set| {
        let copy = &device[set % device.len()];
        let stream = gpu.stream();
        let groups: Vec<SeparateGroup> = copy
            .iter()
            .zip(outputs.iter_mut())
            .map(|((a, b), c)| SeparateGroup {
                a: Some(a.view(stream)),
                gate: b.view(stream),
                up: None,
                c: Some(F16Mut::of(c, stream)),
            })
            .collect();
        Ok(plan.launch_separate(gpu, &groups)?)
    })
}

fn dequantize_all(gpu: &Gpu, matrices: &[NvFp4Matrix]) -> BenchResult<Vec<CudaSlice<f16>>> {
    matrices
        .iter()
        .map(|m| Ok(gpu.dequantize_f16(&gpu.upload(m)?)?))
        .collect()
}

fn bench_separate(
    gpu: &Gpu,
    blas: &CudaBlas,
    flush: &mut CudaSlice<u8>,
    case: &Case,
    sizes: &[Vec<usize>],
    options: &Options,
) -> BenchResult<(Timing, Timing, Timing, u32)> {
    let (k, n) = (case.k, case.n);
    let copies = weight_copies(case, sizes.len());
    // Per copy: every group's tokens and weights (as the public problem hands them over).
    let host: Vec<Vec<(NvFp4Matrix, NvFp4Matrix)>> = (0..copies)
        .into_par_iter()
        .map(|copy| {
            let mut rng = Rng::new(300 + copy as u64);
            sizes[copy]
                .iter()
                .map(|&m| {
                    (
                        random_matrix(m.max(1), k, Distribution::Task, &mut rng).unwrap(),
                        random_matrix(n, k, Distribution::Task, &mut rng).unwrap(),
                    )
                })
                .collect()
        })
        .collect();
    let device: Vec<Vec<(DeviceNvFp4Matrix, DeviceNvFp4Matrix)>> = host
        .iter()
        .map(|groups| {
            groups
                .iter()
                .map(|(a, b)| Ok((gpu.upload(a)?, gpu.upload(b)?)))
                .collect::<BenchResult<_>>()
        })
        .collect::<BenchResult<_>>()?;
    let tokens: usize = sizes[0].iter().sum();
    let layout = GroupedLayout::Separate {
        groups: case.groups,
        rows: tokens,
        max_k: k,
    };
    let plan = gpu.plan_grouped(case.op, layout, options.tokens_per_group)?;
    let mut plain = gpu.plan_grouped(case.op, layout, options.tokens_per_group)?;
    plain.set_programmatic_launch(false);
    let tile = plan.tile_and_grid().0;
    let outputs = || -> BenchResult<Vec<CudaSlice<f16>>> {
        Ok(sizes[0]
            .iter()
            .map(|&m| gpu.stream().alloc_zeros(m * n))
            .collect::<Result<_, _>>()?)
    };
    let (mut c, mut c_plain) = (outputs()?, outputs()?);

    // The cuBLAS loop: each copy's tokens stacked in one buffer, its weights dequantized.
    let dense_tokens: Vec<CudaSlice<f16>> = host
        .iter()
        .map(|groups| {
            let mut stacked: CudaSlice<f16> = gpu.stream().alloc_zeros(tokens * k)?;
            let mut row = 0;
            for ((a, _), &m) in groups.iter().zip(&sizes[0]) {
                let dense = gpu.dequantize_f16(&gpu.upload(a)?)?;
                gpu.stream().memcpy_dtod(
                    &dense.slice(..m * k),
                    &mut stacked.slice_mut(row * k..(row + m) * k),
                )?;
                row += m;
            }
            Ok(stacked)
        })
        .collect::<BenchResult<_>>()?;
    let dense_weights: Vec<Vec<CudaSlice<f16>>> = host
        .iter()
        .map(|groups| {
            let b: Vec<NvFp4Matrix> = groups.iter().map(|(_, b)| b.clone()).collect();
            dequantize_all(gpu, &b)
        })
        .collect::<BenchResult<_>>()?;
    drop(host);
    let mut cublas_loop = CublasLoop::new(gpu, case, tokens)?;
    let variants = [
        separate_variant(gpu, &plan, &device, &mut c),
        separate_variant(gpu, &plain, &device, &mut c_plain),
        cublas_loop.variant(gpu, blas, case, sizes, &dense_tokens, &dense_weights),
    ];
    let (ours, ours_plain, cublas_loop) = time_three(gpu, flush, sizes.len(), options.max_seconds, variants)?;
    plan.device_status(gpu)?;
    plain.device_status(gpu)?;
    Ok((ours, ours_plain, cublas_loop, tile))
}

fn bench_case(gpu: &Gpu, setup: &mut common::Setup, case: &Case, options: &Options) -> BenchResult<Row> {
    let common::Setup {
        blas,
        flush,
        ceilings,
    } = setup;
    let sizes = routings(case, options.sets);
    let (ours, ours_plain, cublas_loop, tile) = match case.routing {
        Routing::Fixed(fixed) if options.fixed_sizes_contiguous => {
            let rows = fixed.iter().sum();
            bench_contiguous(gpu, blas, flush, case, &sizes, rows, options)?
        }
        Routing::Fixed(_) => bench_separate(gpu, blas, flush, case, &sizes, options)?,
        Routing::TopK { tokens, top_k } => {
            bench_contiguous(gpu, blas, flush, case, &sizes, tokens * top_k, options)?
        }
    };
    let (mut memory_us, mut compute_us) = (0.0, 0.0);
    for set in &sizes {
        let (bytes, flops) = traffic(case, set);
        memory_us += bytes / ceilings.copy_gbs / 1e3 / sizes.len() as f64;
        compute_us += flops / ceilings.fp16_tflops / 1e6 / sizes.len() as f64;
    }
    let (floor_us, floor_bound) = if memory_us > compute_us {
        (memory_us, "memory")
    } else {
        (compute_us, "fp16 tensor")
    };
    let busy: Vec<usize> = sizes
        .iter()
        .map(|s| s.iter().filter(|&&m| m > 0).count())
        .collect();
    let described = match case.routing {
        Routing::Fixed(sizes) => format!("{sizes:?}"),
        Routing::TopK { tokens, top_k } => format!(
            "{tokens} tokens × top-{top_k}; {:.0} of {} groups with rows",
            busy.iter().sum::<usize>() as f64 / busy.len() as f64,
            case.groups
        ),
    };
    Ok(Row {
        case: *case,
        sizes: described,
        ours,
        ours_plain,
        cublas_loop,
        torch_grouped_mm: None,
        floor_us,
        floor_bound,
        tile,
    })
}

/// Runs `benches/torch_grouped_baseline.py` on the cases (their group sizes per set written
/// to a JSON file): µs of `torch._grouped_mm` bf16 per case, or why it could not run.
fn torch_baseline(cases: &[Case], sets: usize, results: &str) -> Result<Vec<Option<f64>>, String> {
    let cases_json: Vec<serde_json::Value> = cases
        .iter()
        .map(|case| {
            serde_json::json!({
                "name": case.name,
                "dual": case.op == GroupedOp::DualGemm,
                "n": case.n,
                "k": case.k,
                "sizes": routings(case, sets),
            })
        })
        .collect();
    std::fs::create_dir_all(results).map_err(|e| e.to_string())?;
    let path = format!("{results}/grouped-cases.json");
    let text = serde_json::to_string_pretty(&cases_json).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    let stdout = common::python_baseline(
        "NVFP4_TORCH_GROUPED_BASELINE",
        "benches/torch_grouped_baseline.py",
        &[&path],
    )?;
    Ok(cases
        .iter()
        .map(|case| {
            stdout
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{} ", case.name)))
                .and_then(|v| v.trim().parse().ok())
        })
        .collect())
}

fn run(gpu: &Gpu, options: &Options) -> BenchResult<()> {
    let mut setup = common::setup(
        gpu,
        "case",
        options.sets,
        "benches/grouped.rs",
        options.max_seconds,
    )?;
    let mut rows = Vec::new();
    for case in &options.cases {
        eprintln!("  {} …", case.name);
        rows.push(bench_case(gpu, &mut setup, case, options)?);
    }
    drop(setup.flush);
    let torch_note = match torch_baseline(&options.cases, options.sets, &options.results) {
        Ok(times) => {
            for (row, t) in rows.iter_mut().zip(times) {
                row.torch_grouped_mm = t;
            }
            "torch._grouped_mm bf16: benches/torch_grouped_baseline.py".to_string()
        }
        Err(why) => format!("PyTorch baseline skipped: {why}"),
    };
    let table = markdown_table(&rows);
    common::write_results(
        gpu,
        &torch_note,
        Results {
            dir: &options.results,
            prefix: "grouped",
            sets: options.sets,
            ceilings: Some(setup.ceilings),
            settings: serde_json::Value::Null,
            rows_key: "cases",
            rows: rows.iter().map(row_json).collect(),
            table: &table,
            svg: Some(svg_chart(gpu, &rows)),
        },
    )
}

fn markdown_table(rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| case | op | G | rows per group | N | K | tile | ours µs | ± | ours, plain launch µs | cuBLAS fp16 loop µs | torch._grouped_mm bf16 µs | floor µs (bound) | ours / floor | vs cuBLAS loop | vs grouped_mm |"
    );
    let _ = writeln!(t, "|{}", " --- |".repeat(16));
    for r in rows {
        let c = &r.case;
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} % | {:.1} | {:.1} | {} | {:.1} ({}) | {:.2}× | {} | {} |",
            c.name,
            match c.op {
                GroupedOp::Gemm => "GEMM",
                GroupedOp::DualGemm => "gate/up",
            },
            c.groups,
            r.sizes,
            c.n,
            c.k,
            r.tile,
            r.ours.us,
            100.0 * r.ours.relative_error,
            r.ours_plain.us,
            r.cublas_loop.us,
            show(r.torch_grouped_mm),
            r.floor_us,
            r.floor_bound,
            r.ours.us / r.floor_us,
            ratio(Some(r.cublas_loop.us), Some(r.ours.us)),
            ratio(r.torch_grouped_mm, Some(r.ours.us)),
        );
    }
    let gpumode: Vec<&Row> = rows.iter().filter(|r| r.case.family == "gpumode").collect();
    if gpumode.len() == 4 {
        let g = |f: &dyn Fn(&Row) -> f64| geomean(gpumode.iter().map(|r| f(r)));
        let _ = writeln!(
            t,
            "| geomean (4 gpumode cases) | | | | | | | {:.1} | | {:.1} | {:.1} | {} | {:.1} | {:.2}× | {} | {} |",
            g(&|r| r.ours.us),
            g(&|r| r.ours_plain.us),
            g(&|r| r.cublas_loop.us),
            show(
                gpumode
                    .iter()
                    .all(|r| r.torch_grouped_mm.is_some())
                    .then(|| g(&|r| r.torch_grouped_mm.unwrap_or(1.0)))
            ),
            g(&|r| r.floor_us),
            g(&|r| r.ours.us / r.floor_us),
            ratio(Some(g(&|r| r.cublas_loop.us)), Some(g(&|r| r.ours.us))),
            ratio(
                gpumode
                    .iter()
                    .all(|r| r.torch_grouped_mm.is_some())
                    .then(|| g(&|r| r.torch_grouped_mm.unwrap_or(1.0))),
                Some(g(&|r| r.ours.us))
            ),
        );
    }
    t
}

/// A case's JSON record.
fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "case": r.case.name,
        "groups": r.case.groups,
        "rows": r.sizes,
        "n": r.case.n,
        "k": r.case.k,
        "tile": r.tile,
        "ours_us": r.ours.us,
        "ours_median_us": r.ours.median_us,
        "ours_relative_error": r.ours.relative_error,
        "ours_plain_launch_us": r.ours_plain.us,
        "cublas_fp16_loop_us": r.cublas_loop.us,
        "torch_grouped_mm_bf16_us": r.torch_grouped_mm,
        "floor_us": r.floor_us,
        "floor_bound": r.floor_bound,
    })
}

/// Grouped horizontal bars per case: floor, ours, cuBLAS loop, torch._grouped_mm (µs, log scale).
fn svg_chart(gpu: &Gpu, rows: &[Row]) -> String {
    let labels: Vec<String> = rows.iter().map(|r| r.case.name.to_string()).collect();
    common::svg_bars(
        &format!(
            "Grouped NVFP4 GEMMs on {} — µs per call (log scale), floor from ceilings measured in the same run",
            gpu.name()
        ),
        &labels,
        &["floor", "ours", "cuBLAS fp16 loop", "torch._grouped_mm bf16"],
        |j, i| {
            let r = &rows[j];
            match i {
                0 => Some(r.floor_us),
                1 => Some(r.ours.us),
                2 => Some(r.cublas_loop.us),
                _ => r.torch_grouped_mm,
            }
        },
    )
}
