//! A Mixture-of-Experts layer with SwiGLU experts, end to end in the contiguous convention:
//! `y_t = Σ_e w_te · W2_e·(silu(W1_e·x_t) ⊙ (W3_e·x_t))` over each token's top-k experts.
//!
//! ```text
//! cargo run --release --example moe -- [--tokens 64] [--experts 16] [--top-k 4]
//!     [--hidden 1024] [--intermediate 512] [--seed 1] [--backend auto|gpu|cpu]
//! ```
//!
//! 1. Weights: random f32 experts quantized once to NVFP4 (each with its own global scale);
//!    gate and up stored concatenated (`w13`, `2I × H` per expert), as checkpoints do.
//! 2. Routing on the host: every token picks `top-k` distinct experts with softmax weights; the
//!    routed rows are sorted by expert into one buffer with `E + 1` row offsets, and each
//!    expert's activations are quantized with their own global scale, its scales starting on a
//!    128-row block (the vLLM/SGLang form, `ContiguousTokens`).
//! 3. GPU (compute capability 9.0): one grouped dual GEMM launch for all experts' gate/up, with
//!    per-expert α = global(tokens) · global(weights); its fp16 output is quantized per expert
//!    on the CPU (the GPU quantizer writes whole matrices, not the contiguous convention's
//!    per-group scale blocks yet) and one grouped GEMM launch computes
//!    the down projections. Each launch's output is checked against the CPU reference of every
//!    expert (task tolerance), and the rows past the routed ones must stay untouched.
//! 4. The weighted combine runs on the host; the layer's output is compared with the same layer
//!    computed in f32 from the unquantized values (the NVFP4 quantization error, informative).
//!
//! With `--backend cpu`, or without a Hopper GPU (the reason is printed), the NVFP4 path runs on
//! the CPU reference instead. Exits non-zero when a check fails.

use std::process::ExitCode;
use std::time::Instant;

use half::f16;
use nvfp4::gpu::Gpu;
use nvfp4::grouped::{ContiguousInputs, ContiguousTokens, GroupedLayout, GroupedOp, UpWeights};
use nvfp4::problem::Rng;
use nvfp4::reference::{self, TASK_TOLERANCE};
use nvfp4::{GlobalScale, NvFp4Matrix};
use rayon::prelude::*;

const USAGE: &str = "usage: moe [--tokens T] [--experts E] [--top-k K] [--hidden H] \
                     [--intermediate I] [--seed S] [--backend auto|gpu|cpu]";

struct Args {
    tokens: usize,
    experts: usize,
    top_k: usize,
    hidden: usize,
    intermediate: usize,
    seed: u64,
    backend: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        tokens: 64,
        experts: 16,
        top_k: 4,
        hidden: 1024,
        intermediate: 512,
        seed: 1,
        backend: "auto".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--tokens" => args.tokens = number()?,
            "--experts" => args.experts = number()?,
            "--top-k" => args.top_k = number()?,
            "--hidden" => args.hidden = number()?,
            "--intermediate" => args.intermediate = number()?,
            "--seed" => args.seed = number()? as u64,
            "--backend" => args.backend = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.top_k == 0 || args.top_k > args.experts {
        return Err(format!("--top-k must be in 1..={} (the experts)", args.experts));
    }
    if !["auto", "gpu", "cpu"].contains(&args.backend.as_str()) {
        return Err(format!("unknown backend {}", args.backend));
    }
    Ok(args)
}

/// One expert's weights: unquantized (for the f32 layer) and NVFP4.
struct Expert {
    w1: Vec<f32>,
    w3: Vec<f32>,
    w2: Vec<f32>,
    q1: NvFp4Matrix,
    q3: NvFp4Matrix,
    q2: NvFp4Matrix,
}

/// Row-major `rows × cols` values, normal-ish with standard deviation `std`.
fn random_values(rows: usize, cols: usize, std: f32, rng: &mut Rng) -> Vec<f32> {
    (0..rows * cols)
        .map(|_| {
            // Sum of four uniforms: mean 2, variance 1/3.
            let s: f32 = (0..4).map(|_| rng.next_f32()).sum();
            (s - 2.0) * std * 3f32.sqrt()
        })
        .collect()
}

fn quantize(rows: usize, cols: usize, values: &[f32]) -> nvfp4::Result<NvFp4Matrix> {
    NvFp4Matrix::quantize(rows, cols, values, GlobalScale::Auto)
}

/// Routed rows, sorted by expert: `rows[e]` lists (token, weight) of expert `e`.
fn route(args: &Args, rng: &mut Rng) -> Vec<Vec<(usize, f32)>> {
    let mut rows = vec![Vec::new(); args.experts];
    for token in 0..args.tokens {
        let mut chosen: Vec<(usize, f32)> = Vec::new();
        while chosen.len() < args.top_k {
            let e = (rng.next_u64() % args.experts as u64) as usize;
            if chosen.iter().all(|&(c, _)| c != e) {
                chosen.push((e, 4.0 * rng.next_f32()));
            }
        }
        let total: f32 = chosen.iter().map(|&(_, logit)| logit.exp()).sum();
        for (e, logit) in chosen {
            rows[e].push((token, logit.exp() / total));
        }
    }
    rows
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// `rows × out` = `x (rows × k) · wᵀ (out × k)` in f32.
fn matmul_t(x: &[f32], w: &[f32], k: usize) -> Vec<f32> {
    x.chunks(k)
        .flat_map(|row| {
            w.chunks(k)
                .map(move |w_row| row.iter().zip(w_row).map(|(a, b)| a * b).sum::<f32>())
        })
        .collect()
}

/// The unquantized layer in f32.
fn layer_f32(args: &Args, x: &[f32], experts: &[Expert], routes: &[Vec<(usize, f32)>]) -> Vec<f32> {
    let (h, i) = (args.hidden, args.intermediate);
    let per_expert: Vec<Vec<(usize, f32, Vec<f32>)>> = routes
        .par_iter()
        .zip(experts)
        .map(|(rows, expert)| {
            rows.iter()
                .map(|&(token, weight)| {
                    let xt = &x[token * h..(token + 1) * h];
                    let gate = matmul_t(xt, &expert.w1, h);
                    let up = matmul_t(xt, &expert.w3, h);
                    let act: Vec<f32> = gate.iter().zip(&up).map(|(&g, &u)| silu(g) * u).collect();
                    (token, weight, matmul_t(&act, &expert.w2, i))
                })
                .collect()
        })
        .collect();
    combine(args, per_expert.into_iter().flatten())
}

fn combine(args: &Args, rows: impl Iterator<Item = (usize, f32, Vec<f32>)>) -> Vec<f32> {
    let mut y = vec![0f32; args.tokens * args.hidden];
    for (token, weight, row) in rows {
        for (out, v) in y[token * args.hidden..].iter_mut().zip(row) {
            *out += weight * v;
        }
    }
    y
}

/// Each expert's routed activations, quantized (`None` for an expert without tokens).
fn quantize_groups(
    routes: &[Vec<(usize, f32)>],
    cols: usize,
    row_of: impl Fn(usize, usize) -> Vec<f32> + Sync,
) -> nvfp4::Result<Vec<Option<NvFp4Matrix>>> {
    routes
        .par_iter()
        .enumerate()
        .map(|(e, rows)| {
            if rows.is_empty() {
                return Ok(None);
            }
            let values: Vec<f32> = (0..rows.len()).flat_map(|r| row_of(e, r)).collect();
            quantize(rows.len(), cols, &values).map(Some)
        })
        .collect()
}

fn global(m: &NvFp4Matrix) -> f32 {
    m.global_scale().unwrap_or(1.0)
}

/// The GPU the NVFP4 path runs on, `None` for the CPU reference (printing why when the GPU
/// was not refused by `--backend cpu`).
fn select_gpu(backend: &str) -> Result<Option<Gpu>, String> {
    if backend == "cpu" {
        return Ok(None);
    }
    let reason = match Gpu::open(0) {
        Ok(gpu) => return Ok(Some(gpu)),
        Err(e) if backend == "gpu" => return Err(e.to_string()),
        Err(e) => e.to_string(),
    };
    if backend == "gpu" {
        return Err(format!("--backend gpu needs a supported GPU: {reason}"));
    }
    println!("backend: cpu ({reason})");
    Ok(None)
}

/// The grouped launches' outputs, in the contiguous buffers' row order.
struct NvFp4Stage {
    /// `rows × N` fp16, the first `offsets[E]` rows routed.
    out: Vec<f16>,
    offsets: Vec<u32>,
    micros: f64,
}

/// Runs one grouped launch (gate/up when `up` is given, else a plain GEMM) over the experts'
/// quantized activations on the GPU, checks that rows past the routed ones stay untouched.
fn run_gpu_stage(
    gpu: &Gpu,
    groups: &[Option<NvFp4Matrix>],
    gate: &[NvFp4Matrix],
    up: Option<&[NvFp4Matrix]>,
    capacity: usize,
) -> nvfp4::Result<NvFp4Stage> {
    let (n, k) = (gate[0].rows(), gate[0].k());
    let refs: Vec<Option<&NvFp4Matrix>> = groups.iter().map(Option::as_ref).collect();
    let tokens = ContiguousTokens::new(&refs, k, capacity)?;
    let token_global = |e: usize| groups[e].as_ref().map_or(1.0, global);
    let alpha_gate: Vec<f32> = (0..gate.len())
        .map(|e| token_global(e) * global(&gate[e]))
        .collect();
    let (op, weights, alpha_up) = match up {
        Some(up) => {
            // w13: gate rows, then up rows, per expert.
            let w13 = gate
                .iter()
                .zip(up)
                .map(|(g, u)| {
                    let data = [g.data(), u.data()].concat();
                    let plain = [g.plain_scales(), u.plain_scales()].concat();
                    NvFp4Matrix::from_plain_scales(2 * n, k, data, &plain, None)
                })
                .collect::<nvfp4::Result<Vec<_>>>()?;
            let alpha_up: Vec<f32> = (0..up.len()).map(|e| token_global(e) * global(&up[e])).collect();
            (GroupedOp::DualGemm, w13, Some(alpha_up))
        }
        None => (GroupedOp::Gemm, gate.to_vec(), None),
    };
    let stream = gpu.stream();
    let weights = gpu.upload_grouped_weights(&weights)?;
    let a = stream.clone_htod(&tokens.data)?;
    let a_scales = stream.clone_htod(&tokens.scales)?;
    let row_offsets = stream.clone_htod(&tokens.row_offsets)?;
    let scale_offsets = stream.clone_htod(&tokens.scale_offsets)?;
    let alpha_gate = stream.clone_htod(&alpha_gate)?;
    let alpha_up = alpha_up.map(|a| stream.clone_htod(&a)).transpose()?;
    let layout = GroupedLayout::Contiguous {
        groups: gate.len(),
        rows: capacity,
        scale_rows: tokens.scale_rows,
        n,
        k,
        up: match op {
            GroupedOp::DualGemm => UpWeights::Concatenated,
            GroupedOp::Gemm => UpWeights::Separate,
        },
    };
    let plan = gpu.plan_grouped(op, layout, None)?;
    let inputs = ContiguousInputs {
        a: &a,
        a_scales: &a_scales,
        row_offsets: &row_offsets,
        scale_offsets: &scale_offsets,
        gate: weights.view(),
        up: None,
        alpha_gate: Some(&alpha_gate),
        alpha_up: alpha_up.as_ref(),
        scale: 1.0,
    };
    let mut c = stream.clone_htod(&vec![f16::NAN; capacity * n])?;
    plan.launch(gpu, &inputs, &mut c)?;
    let out = stream.clone_dtoh(&c)?;
    plan.device_status(gpu)?;
    // Time a few more launches (tokens in L2; `cargo bench --bench grouped` measures properly).
    let start = Instant::now();
    let repeats = 20;
    for _ in 0..repeats {
        plan.launch(gpu, &inputs, &mut c)?;
    }
    stream.synchronize()?;
    let micros = start.elapsed().as_secs_f64() * 1e6 / repeats as f64;
    Ok(NvFp4Stage {
        out,
        offsets: tokens.row_offsets,
        micros,
    })
}

/// The CPU reference of one stage, in the same row order as the GPU's.
fn cpu_stage(
    groups: &[Option<NvFp4Matrix>],
    gate: &[NvFp4Matrix],
    up: Option<&[NvFp4Matrix]>,
) -> nvfp4::Result<Vec<Vec<f16>>> {
    groups
        .par_iter()
        .enumerate()
        .map(|(e, a)| match (a, up) {
            (None, _) => Ok(Vec::new()),
            (Some(a), Some(up)) => reference::dual_gemm(a, &gate[e], &up[e]),
            (Some(a), None) => reference::gemm(a, &gate[e]),
        })
        .collect()
}

/// Checks a GPU stage against the per-expert references; prints a line; returns the pass.
fn check_stage(name: &str, stage: &NvFp4Stage, references: &[Vec<f16>], n: usize) -> nvfp4::Result<bool> {
    let mut passed = true;
    let mut mismatches = 0;
    for (e, expected) in references.iter().enumerate() {
        let (start, end) = (stage.offsets[e] as usize, stage.offsets[e + 1] as usize);
        let report = reference::check(&stage.out[start * n..end * n], expected, n, TASK_TOLERANCE)?;
        if !report.passed() {
            println!("  expert {e}: {report}");
            passed = false;
        }
        mismatches += report.mismatches;
    }
    let routed = *stage.offsets.last().unwrap_or(&0) as usize;
    let untouched = stage.out[routed * n..].iter().all(|v| v.is_nan());
    println!(
        "{name}: {:.1} µs per launch; {} against the CPU reference ({mismatches} elements outside \
         rtol = atol = 1e-3); rows past the routed {routed}: {}",
        stage.micros,
        if passed { "pass" } else { "FAIL" },
        if untouched { "untouched" } else { "WRITTEN" }
    );
    Ok(passed && untouched)
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    let (h, i) = (args.hidden, args.intermediate);
    let mut rng = Rng::new(args.seed);
    println!(
        "MoE layer: {} tokens, {} experts, top-{}, hidden {h}, intermediate {i}",
        args.tokens, args.experts, args.top_k
    );
    let experts: Vec<Expert> = (0..args.experts)
        .map(|_| {
            let std_in = 1.0 / (h as f32).sqrt();
            let (w1, w3) = (
                random_values(i, h, std_in, &mut rng),
                random_values(i, h, std_in, &mut rng),
            );
            let w2 = random_values(h, i, 1.0 / (i as f32).sqrt(), &mut rng);
            Ok(Expert {
                q1: quantize(i, h, &w1)?,
                q3: quantize(i, h, &w3)?,
                q2: quantize(h, i, &w2)?,
                w1,
                w3,
                w2,
            })
        })
        .collect::<nvfp4::Result<_>>()?;
    let x = random_values(args.tokens, h, 1.0, &mut rng);
    let routes = route(args, &mut rng);
    let sizes: Vec<usize> = routes.iter().map(Vec::len).collect();
    println!("tokens per expert: {sizes:?}");
    let capacity = args.tokens * args.top_k;

    let q1: Vec<NvFp4Matrix> = experts.iter().map(|e| e.q1.clone()).collect();
    let q3: Vec<NvFp4Matrix> = experts.iter().map(|e| e.q3.clone()).collect();
    let q2: Vec<NvFp4Matrix> = experts.iter().map(|e| e.q2.clone()).collect();
    let activations = quantize_groups(&routes, h, |e, r| {
        let token = routes[e][r].0;
        x[token * h..(token + 1) * h].to_vec()
    })?;

    let gpu = select_gpu(&args.backend)?;
    let gate_up_reference = cpu_stage(&activations, &q1, Some(&q3))?;
    let (gate_up, mut passed): (Vec<Vec<f16>>, bool) = match &gpu {
        Some(gpu) => {
            let stage = run_gpu_stage(gpu, &activations, &q1, Some(&q3), capacity)?;
            let passed = check_stage("gate/up (grouped dual GEMM)", &stage, &gate_up_reference, i)?;
            let per_expert = (0..args.experts)
                .map(|e| stage.out[stage.offsets[e] as usize * i..stage.offsets[e + 1] as usize * i].to_vec())
                .collect();
            (per_expert, passed)
        }
        None => (gate_up_reference, true),
    };
    // The SwiGLU output, quantized per expert for the down projection.
    let hidden = quantize_groups(&routes, i, |e, r| {
        gate_up[e][r * i..(r + 1) * i]
            .iter()
            .map(|v| v.to_f32())
            .collect()
    })?;
    let down_reference = cpu_stage(&hidden, &q2, None)?;
    let down: Vec<Vec<f16>> = match &gpu {
        Some(gpu) => {
            let stage = run_gpu_stage(gpu, &hidden, &q2, None, capacity)?;
            passed &= check_stage("down (grouped GEMM)", &stage, &down_reference, h)?;
            (0..args.experts)
                .map(|e| stage.out[stage.offsets[e] as usize * h..stage.offsets[e + 1] as usize * h].to_vec())
                .collect()
        }
        None => down_reference,
    };

    let y = combine(
        args,
        routes.iter().zip(&down).flat_map(|(rows, out)| {
            rows.iter().enumerate().map(move |(r, &(token, weight))| {
                let row = out[r * h..(r + 1) * h].iter().map(|v| v.to_f32()).collect();
                (token, weight, row)
            })
        }),
    );
    let exact = layer_f32(args, &x, &experts, &routes);
    let norm = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let difference: Vec<f32> = y.iter().zip(&exact).map(|(a, b)| a - b).collect();
    println!(
        "layer output vs the unquantized f32 layer: relative error {:.3} (NVFP4 weights and \
         activations; informative, not a check)",
        norm(&difference) / norm(&exact).max(f64::MIN_POSITIVE)
    );
    let round_trip = experts[0].q1.dequantize_f32();
    let round_trip_error: Vec<f32> = round_trip
        .iter()
        .zip(&experts[0].w1)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "  (for scale: one weight matrix quantized and dequantized has relative error {:.3})",
        norm(&round_trip_error) / norm(&experts[0].w1)
    );
    println!("{}", if passed { "PASS" } else { "FAIL" });
    Ok(passed)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
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
