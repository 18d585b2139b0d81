//! Bandwidth of the GPU quantizer (f32 / f16 / bf16 → NVFP4) against a device-to-device copy,
//! both measured in the same run (`cargo bench --bench quantize`); prints why it is skipped
//! without a supported GPU.
//!
//! Method (`benches/common`): a 4096 × 7168 input (an activation of the benchmark shapes), 8
//! distinct input sets, `Gpu::quantize_into` (fixed global scale: one pass, no waiting) back to
//! back, the L2 flushed before each batch, batches until the mean is known to 0.5 %. Bytes
//! counted: the input read, packed data and scales written. The `Auto` global scale adds an amax
//! pass (a second read) and one wait per call (`Gpu::quantize`): timed too, per call.
//!
//! ```text
//! cargo bench --bench quantize -- [--max-seconds 2] [--results DIR]
//! ```
//! Decode sizes (bf16, rows 1–256 × K 4096–14336: the activations of one decode or small
//! prefill step) are timed as CUDA graphs of [`GRAPH_CALLS`] back-to-back calls, per call,
//! beside a graph of as many copies of the same input bytes, the two graphs in two phases each
//! of their own sustained load, A B B A, `--max-seconds` a phase (`common::time_calls_in_phases`):
//! what a call costs inside a captured model, where a kernel's launch is not the host's but its
//! fixed cost on the GPU is.
//!
//! Output: a markdown table on stdout; JSON and markdown under `--results` (default `results/`).

mod common;

use std::fmt::Write as _;

use common::{BenchResult, Cli, Results, capture_graph, time_calls, time_graphs_in_phases, timing};
use cudarc::driver::{CudaSlice, DevicePtr};
use half::{bf16, f16};
use nvfp4::gpu::Gpu;
use nvfp4::problem::Rng;
use nvfp4::quantize::{DeviceQuantizeInput, Element};
use nvfp4::{BlockedScales, GlobalScale};

const ROWS: usize = 4096;
const K: usize = 7168;
const SETS: usize = 8;

/// Decode-size inputs (bf16): rows × K.
const DECODE_SIZES: [(usize, usize); 9] = [
    (1, 4096),
    (1, 7168),
    (1, 14336),
    (16, 7168),
    (64, 7168),
    (64, 14336),
    (256, 4096),
    (256, 7168),
    (256, 14336),
];

/// Calls captured in one graph for the decode sizes.
const GRAPH_CALLS: usize = 50;

struct Options {
    max_seconds: f64,
    results: String,
}

fn main() {
    let options = Cli::parse(&["max-seconds", "results"], &[]).and_then(|cli| {
        Ok(Options {
            max_seconds: cli.value("max-seconds", 2.0)?,
            results: cli.value("results", "results".to_string())?,
        })
    });
    common::run_with_options("quantize", options, |_| None, run);
}

/// µs per call of the enqueue-only quantizer and of the waiting one with `Auto`, for `T`.
fn time_type<T: DeviceQuantizeInput>(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    max_seconds: f64,
    convert: impl Fn(f32) -> T,
) -> BenchResult<(f64, f64)> {
    let mut rng = Rng::new(5);
    let inputs: Vec<CudaSlice<T>> = (0..SETS)
        .map(|_| {
            let values: Vec<T> = (0..ROWS * K)
                .map(|_| convert(rng.next_f32() * 8.0 - 4.0))
                .collect();
            gpu.stream().clone_htod(&values)
        })
        .collect::<Result<_, _>>()?;
    let mut outputs = (0..SETS)
        .map(|_| gpu.alloc_nvfp4(ROWS, K))
        .collect::<nvfp4::Result<Vec<_>>>()?;
    let mut checks = gpu.quantize_checks()?;
    let fixed = time_calls(gpu, flush, SETS, max_seconds, |i| {
        Ok(gpu.quantize_into(&inputs[i], &mut outputs[i], GlobalScale::Fixed(0.01), &mut checks)?)
    })?;
    checks.result(gpu, &inputs[SETS - 1])?;
    let auto = time_calls(gpu, flush, SETS, max_seconds, |i| {
        gpu.quantize(ROWS, K, &inputs[i], GlobalScale::Auto)?;
        Ok(())
    })?;
    Ok((fixed.us, auto.us))
}

/// The decode sizes' rows: µs per call of the quantizer and of a copy of its input, in graphs.
fn time_decode_sizes(
    gpu: &Gpu,
    flush: &mut CudaSlice<u8>,
    max_seconds: f64,
) -> BenchResult<(String, Vec<serde_json::Value>)> {
    let mut table = format!(
        "\n| bf16 rows × K | quantize_into µs (graph of {GRAPH_CALLS}) | copy of the input µs | quantize / copy |\n| --- | --- | --- | --- |\n"
    );
    let mut rows_json = Vec::new();
    let mut rng = Rng::new(7);
    for (rows, k) in DECODE_SIZES {
        let inputs: Vec<CudaSlice<bf16>> = (0..SETS)
            .map(|_| {
                let values: Vec<bf16> = (0..rows * k)
                    .map(|_| bf16::from_f32(rng.next_f32() * 8.0 - 4.0))
                    .collect();
                gpu.stream().clone_htod(&values)
            })
            .collect::<Result<_, _>>()?;
        let outputs = (0..SETS)
            .map(|_| gpu.alloc_nvfp4(rows, k))
            .collect::<nvfp4::Result<Vec<_>>>()?;
        let copies: Vec<CudaSlice<bf16>> = (0..SETS)
            .map(|_| gpu.stream().alloc_zeros(rows * k))
            .collect::<Result<_, _>>()?;
        let mut checks = gpu.quantize_checks()?;
        // Raw addresses, taken before the capture (the slices' own accessors record events,
        // which a capture refuses).
        let stream = gpu.stream();
        let addresses = |i: usize| -> (u64, u64, u64, u64) {
            let (x, _) = inputs[i].device_ptr(stream);
            let (c, _) = copies[i].device_ptr(stream);
            let view = outputs[i].view(stream);
            (x, c, view.data_address(), view.scales_address())
        };
        let at: Vec<_> = (0..SETS).map(addresses).collect();
        let ours_graph = capture_graph(gpu, GRAPH_CALLS, |i| {
            let (x, _, data, scales) = at[i % SETS];
            // SAFETY: the buffers above, sized for rows × k, outlive the graph.
            let global = GlobalScale::Fixed(0.01);
            unsafe { gpu.quantize_raw(Element::Bf16, x, rows, k, data, scales, global, &mut checks) }?;
            Ok(())
        })?;
        checks.result(gpu, &inputs[SETS - 1])?;
        let copy_graph = capture_graph(gpu, GRAPH_CALLS, |i| {
            let (x, c, _, _) = at[i % SETS];
            // SAFETY: both buffers hold rows × k bf16 and outlive the graph.
            unsafe { cudarc::driver::result::memcpy_dtod_async(c, x, 2 * rows * k, stream.cu_stream()) }?;
            Ok(())
        })?;
        // The two graphs in phases of their own sustained load (A B B A).
        let graphs = [ours_graph, copy_graph];
        let samples = time_graphs_in_phases(gpu, flush, &graphs, GRAPH_CALLS, max_seconds)?;
        let [ours, copy] = [0, 1].map(|v| timing(&samples[v]).us);
        let _ = writeln!(
            table,
            "| {rows} × {k} | {ours:.2} | {copy:.2} | {:.2} |",
            ours / copy
        );
        rows_json.push(serde_json::json!({
            "input": "bf16 graph",
            "rows": rows,
            "k": k,
            "ours_us": ours,
            "copy_us": copy,
        }));
    }
    Ok((table, rows_json))
}

fn run(gpu: &Gpu, options: &Options) -> BenchResult<()> {
    let max_seconds = options.max_seconds;
    let mut flush: CudaSlice<u8> = gpu.stream().alloc_zeros(common::FLUSH_BYTES)?;
    let bytes = 1usize << 30;
    let source: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let mut target: CudaSlice<u8> = gpu.stream().alloc_zeros(bytes)?;
    let copy = time_calls(gpu, &mut flush, 3, max_seconds, |_| {
        Ok(gpu.stream().memcpy_dtod(&source, &mut target)?)
    })?;
    drop((source, target));
    let copy_gbs = 2.0 * bytes as f64 / copy.us / 1e3;
    println!(
        "device: {}; copy {copy_gbs:.0} GB/s (read + write), measured now; {ROWS} × {K}, {SETS} input sets",
        gpu.name()
    );
    let mut table = String::from(
        "| input | quantize_into µs | GB/s | of copy | quantize (Auto, waits) µs |\n| --- | --- | --- | --- | --- |\n",
    );
    let mut inputs = Vec::new();
    let written = ROWS * K / 2 + BlockedScales::new(ROWS, K).len();
    for (name, element_bytes, (fixed, auto)) in [
        ("f32", 4, time_type(gpu, &mut flush, max_seconds, |x| x)?),
        ("f16", 2, time_type(gpu, &mut flush, max_seconds, f16::from_f32)?),
        (
            "bf16",
            2,
            time_type(gpu, &mut flush, max_seconds, bf16::from_f32)?,
        ),
    ] {
        let gbs = (ROWS * K * element_bytes + written) as f64 / fixed / 1e3;
        let _ = writeln!(
            table,
            "| {name} | {fixed:.1} | {gbs:.0} | {:.0} % | {auto:.1} |",
            100.0 * gbs / copy_gbs
        );
        inputs.push(serde_json::json!({
            "input": name,
            "rows": ROWS,
            "k": K,
            "ours_us": fixed,
            "ours_gbs": gbs,
            "of_copy": gbs / copy_gbs,
            "auto_us": auto,
        }));
    }
    // A handle on a stream of its own for the graphs: the bench's handle issues on the legacy
    // stream, which cannot be captured.
    let mut graphs = Gpu::open(0)?;
    graphs.set_stream(graphs.stream().context().new_stream()?)?;
    let mut graph_flush: CudaSlice<u8> = graphs.stream().alloc_zeros(common::FLUSH_BYTES)?;
    let (decode_table, decode_rows) = time_decode_sizes(&graphs, &mut graph_flush, max_seconds)?;
    table += &decode_table;
    inputs.extend(decode_rows);
    common::write_results(
        gpu,
        "",
        Results {
            dir: &options.results,
            prefix: "quantize",
            sets: SETS,
            ceilings: None,
            settings: serde_json::json!({ "copy_gbs": copy_gbs }),
            rows_key: "inputs",
            rows: inputs,
            table: &table,
            svg: None,
        },
    )
}
