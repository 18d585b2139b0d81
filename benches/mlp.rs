//! The MLP op (`MlpPlan`: quantize x, the dual GEMM writing h as NVFP4, the GEMM) against the
//! same three kernels called one by one, in the same run (`cargo bench --bench mlp`): what
//! handing the decoded token operands on saves, operand by operand. Prints why it is skipped
//! without a supported GPU.
//!
//! Method (`benches/common`): per shape, one bf16 input and random NVFP4 weights; each variant
//! captured as a CUDA graph of [`GRAPH_CALLS`] back-to-back calls and replayed with the L2
//! flushed before each replay; µs per call. A shape's variants are replayed in turn, one
//! replay of each a cycle, the cycles back to back for about `--max-seconds` per variant
//! (`common::time_graphs_interleaved`), so that clock drift reaches all alike under sustained
//! load; each variant its median. Variants:
//! the three calls (each tiled GEMM with its pre-decoding pass), and the op handing on neither
//! operand, x only, h only, both, and its default ([`MlpPlan::possible_hand_on`] or the plan's
//! policy). The op's output is checked against the three calls' bit for bit first.
//!
//! ```text
//! cargo bench --bench mlp -- [--tokens 1,16,64,256,1024,4096] [--hidden 2048,4096,7168]
//!     [--max-seconds 0.5] [--results DIR]
//! ```
//! `--hidden` picks the sizes by their hidden size (default: all three).
//! Output: a markdown table on stdout (each row on stderr as it is done); JSON and markdown
//! under `--results` (default `results/`).

mod common;

use std::fmt::Write as _;

use common::{BenchResult, Cli, Results, capture_graph, median, time_graphs_interleaved};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use nvfp4::GlobalScale;
use nvfp4::gemm::GemmShape;
use nvfp4::gpu::{DeviceNvFp4Matrix, Gpu};
use nvfp4::mlp::{MlpShape, TokenHandOn};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{Distribution, DualGemmShape, NvFp4Matrix};

/// Calls captured in one graph.
const GRAPH_CALLS: usize = 10;

/// (hidden, intermediate, model) of the layer bench's sizes.
const SIZES: [(usize, usize, &str); 3] = [
    (2048, 8192, "Llama-3.2-1B"),
    (4096, 14336, "Llama-3-8B"),
    (7168, 18432, "DeepSeek-V3 dense"),
];

struct Options {
    tokens: Vec<usize>,
    /// The sizes run, by hidden size.
    hidden: Vec<usize>,
    max_seconds: f64,
    results: String,
}

fn main() {
    let options = Cli::parse(&["tokens", "hidden", "max-seconds", "results"], &[]).and_then(|cli| {
        Ok(Options {
            tokens: list(
                &cli.value("tokens", "1,16,64,128,256,512,1024,4096".to_string())?,
                "tokens",
            )?,
            hidden: list(&cli.value("hidden", "2048,4096,7168".to_string())?, "hidden")?,
            max_seconds: cli.value("max-seconds", 0.5)?,
            results: cli.value("results", "results".to_string())?,
        })
    });
    common::run_with_options("mlp", options, |_| None, run);
}

/// The comma-separated counts of option `--{flag}`.
fn list(values: &str, flag: &str) -> Result<Vec<usize>, String> {
    values
        .split(',')
        .map(|v| v.trim().parse().map_err(|e| format!("--{flag} {v}: {e}")))
        .collect()
}

/// A random `rows × k` weight with global scale `g`, on the GPU.
fn weight(gpu: &Gpu, rows: usize, k: usize, g: f32, rng: &mut Rng) -> BenchResult<DeviceNvFp4Matrix> {
    let m = random_matrix(rows, k, Distribution::Task, rng)?;
    let m = NvFp4Matrix::from_parts(rows, k, m.data().to_vec(), m.scales().to_vec(), Some(g))?;
    Ok(gpu.upload(&m)?)
}

fn run(_: &Gpu, options: &Options) -> BenchResult<()> {
    // A handle on a stream of its own (the bench's handle issues on the legacy stream, which
    // cannot be captured), with cudarc's cross-stream event tracking off: its waits on events
    // recorded before a capture are not allowed inside it.
    let mut gpu = Gpu::open(0)?;
    let context = gpu.stream().context().clone();
    gpu.set_stream(context.new_stream()?)?;
    // SAFETY: all work of this bench is on that one stream.
    unsafe { context.disable_event_tracking() };
    let gpu = &gpu;
    let mut flush: CudaSlice<u8> = gpu.stream().alloc_zeros(common::FLUSH_BYTES)?;
    println!(
        "device: {} ({} SMs); CUDA graphs of {GRAPH_CALLS} calls; µs per call",
        gpu.name(),
        gpu.multiprocessors()
    );
    let mut table = String::from(
        "| model (hidden → intermediate) | tokens | three calls | op: none | op: x | op: h | op: x, h | op default (x, h) | default / three calls |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut rows = Vec::new();
    let stream = gpu.stream().clone();
    let (gx, gh) = (0.004f32, 0.02f32);
    for (hidden, intermediate, model) in SIZES.into_iter().filter(|size| options.hidden.contains(&size.0)) {
        let mut rng = Rng::new(hidden as u64);
        let w1 = weight(gpu, intermediate, hidden, 0.002, &mut rng)?;
        let w3 = weight(gpu, intermediate, hidden, 0.002, &mut rng)?;
        let w2 = weight(gpu, hidden, intermediate, 0.001, &mut rng)?;
        for &tokens in &options.tokens {
            let values: Vec<bf16> = (0..tokens * hidden)
                .map(|_| bf16::from_f32(rng.next_f32() * 8.0 - 4.0))
                .collect();
            let x = stream.clone_htod(&values)?;
            let mut plan = gpu.plan_mlp(MlpShape {
                tokens,
                hidden,
                intermediate,
            })?;
            let dual = gpu.plan_dual_gemm(DualGemmShape {
                m: tokens,
                n: intermediate,
                k: hidden,
            })?;
            let down = gpu.plan_gemm(GemmShape {
                m: tokens,
                n: hidden,
                k: intermediate,
            })?;
            let mut xq = gpu.alloc_nvfp4(tokens, hidden)?;
            let mut h = gpu.alloc_nvfp4(tokens, intermediate)?;
            let mut checks = gpu.quantize_checks()?;
            let mut want: CudaSlice<f16> = stream.alloc_zeros(tokens * hidden)?;
            let mut got: CudaSlice<f16> = stream.alloc_zeros(tokens * hidden)?;
            let mut three_calls = |out: &mut CudaSlice<f16>| -> BenchResult<()> {
                gpu.quantize_into(&x, &mut xq, GlobalScale::Fixed(gx), &mut checks)?;
                dual.launch_nvfp4(gpu, &xq, &w1, &w3, &mut h, gh)?;
                down.launch(gpu, &h, &w2, out)?;
                Ok(())
            };
            three_calls(&mut want)?;
            let default = plan.token_hand_on();
            plan.launch(gpu, &x, GlobalScale::Fixed(gx), &w1, &w3, &w2, gh, &mut got)?;
            if stream.clone_dtoh(&got)? != stream.clone_dtoh(&want)? {
                return Err(format!("{model} {tokens} tokens: the op differs from its three calls").into());
            }
            let possible = plan.possible_hand_on();
            // The variants: the three calls (None), then the op with each hand-on; the default's
            // own entry last.
            let hand_ons = [(false, false), (true, false), (false, true), (true, true)]
                .map(|(x, h)| Some(TokenHandOn { x, h }));
            let order: Vec<Option<TokenHandOn>> = std::iter::once(None)
                .chain(hand_ons)
                .chain([Some(default)])
                .collect();
            // Each variant captured as a graph, then all replayed in turn (`benches/common`'s
            // interleaved timer: the variants are the same kernels and draw about the same
            // power): a heavy row's clocks drift by more than its variants differ, and identical
            // kernels timed one after the other read up to 11 % apart; in phases of their own
            // they spread by several percent (perf log entry 144).
            let mut graphs = Vec::new();
            let mut timed = Vec::new();
            for (i, &variant) in order.iter().enumerate() {
                let graph = match variant {
                    None => capture_graph(gpu, GRAPH_CALLS, |_| three_calls(&mut want))?,
                    Some(hand_on) if hand_on.x && !possible.x || hand_on.h && !possible.h => continue,
                    Some(hand_on) => {
                        plan.set_token_hand_on(hand_on)?;
                        capture_graph(gpu, GRAPH_CALLS, |_| {
                            Ok(plan.launch(gpu, &x, GlobalScale::Fixed(gx), &w1, &w3, &w2, gh, &mut got)?)
                        })?
                    }
                };
                graphs.push(graph);
                timed.push(i);
            }
            let samples =
                time_graphs_interleaved(gpu, &mut flush, &graphs, GRAPH_CALLS, options.max_seconds)?;
            let mut each: Vec<Vec<f64>> = vec![Vec::new(); order.len()];
            for (i, samples) in timed.into_iter().zip(samples) {
                each[i] = samples;
            }
            let medians: Vec<Option<f64>> = each
                .iter()
                .map(|us| (!us.is_empty()).then(|| median(us)))
                .collect();
            let calls_us = medians[0].ok_or("the three calls were timed")?;
            let variants = &medians[1..5];
            let default_us = medians[5].ok_or("the default hand-on is possible")?;
            let shown: Vec<String> = variants.iter().map(|&v| common::show(v)).collect();
            let row = format!(
                "| {model} ({hidden} → {intermediate}) | {tokens} | {calls_us:.1} | {} | {default_us:.1} ({}, {}) | {:.3} |",
                shown.join(" | "),
                default.x,
                default.h,
                default_us / calls_us
            );
            eprintln!("{row}");
            let quartiles = |us: &[f64]| -> String {
                let mut sorted = us.to_vec();
                sorted.sort_by(f64::total_cmp);
                match sorted.len() {
                    0 => "-".to_string(),
                    n => format!("{:.1}–{:.1}", sorted[n / 4], sorted[3 * n / 4]),
                }
            };
            let shown: Vec<String> = each.iter().map(|us| quartiles(us)).collect();
            eprintln!("  quartiles over {} cycles: {}", each[0].len(), shown.join(" | "));
            writeln!(table, "{row}")?;
            rows.push(serde_json::json!({
                "model": model,
                "tokens": tokens,
                "hidden": hidden,
                "intermediate": intermediate,
                "ours_us": default_us,
                "three_calls_us": calls_us,
                "hand_on_none_us": variants[0],
                "hand_on_x_us": variants[1],
                "hand_on_h_us": variants[2],
                "hand_on_both_us": variants[3],
                "default_hand_on": [default.x, default.h],
                "samples_us": each,
            }));
        }
    }
    common::write_results(
        gpu,
        "",
        Results {
            dir: &options.results,
            prefix: "mlp",
            sets: 1,
            ceilings: None,
            settings: serde_json::json!({
                "graph_calls": GRAPH_CALLS,
                "x_scale": gx,
                "h_scale": gh,
            }),
            rows_key: "shapes",
            rows,
            table: &table,
            svg: None,
        },
    )
}
