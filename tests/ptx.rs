//! The kernel PTX: committed copy up to date, assembles with ptxas for its architecture, no local
//! memory (but the bounded per-segment values of the fitted grouped kernels), no serialized wgmma
//! pipeline, launch bounds written for every entry point.

mod common;

use std::process::Command;

use nvfp4::kernels::{PTX_ORIGIN, PTX_SM90A, PTX_SM100F, PtxOrigin};
use nvfp4_kernel::registry::{ARCHES, entry_points};
use nvfp4_kernel::sm90::registry as sm90_registry;
use nvfp4_kernel::sm100::registry as sm100_registry;

const COMMITTED: [(&str, &str, &str); 2] = [
    ("sm_90a", PTX_SM90A, include_str!("../kernel/ptx/nvfp4_sm90a.ptx")),
    (
        "sm_100f",
        PTX_SM100F,
        include_str!("../kernel/ptx/nvfp4_sm100f.ptx"),
    ),
];

/// The most stack frame a fitted grouped kernel may have (see the ptxas test).
const FITTED_FRAME_BYTES: u32 = 64;

/// The sm_90a grouped kernels whose tiles are fitted to each group (`Tile::fits_groups`).
fn fitted_grouped_entries() -> impl Iterator<Item = &'static str> {
    sm90_registry::TILED
        .iter()
        .filter(|entries| entries.tile.fits_groups())
        .flat_map(|entries| {
            entries
                .grouped
                .iter()
                .flat_map(|g| g.kernels().map(|k| k.entry.name))
        })
}

fn committed_ptx_matches_a_fresh_build() {
    if PTX_ORIGIN == PtxOrigin::Committed {
        // build.rs fails instead when NVFP4_REQUIRE_TOOLS is set, so this is never a CI skip.
        common::skip_because("no nvptx toolchain; the build used kernel/ptx/");
        return;
    }
    for (arch, fresh, committed) in COMMITTED {
        if let Some((line, (f, c))) = fresh
            .lines()
            .zip(committed.lines())
            .enumerate()
            .find(|(_, (f, c))| f != c)
        {
            panic!(
                "kernel/ptx for {arch} is stale (first difference at line {}: fresh `{f}`, committed `{c}`); \
                 run `NVFP4_UPDATE_PTX=1 cargo build` and commit kernel/ptx/",
                line + 1
            );
        }
        assert_eq!(
            fresh.len(),
            committed.len(),
            "kernel/ptx for {arch} is stale (length differs)"
        );
    }
}

fn every_entry_point_has_launch_bounds_and_one_parameter_of_its_arguments_size() {
    for (arch, ptx, _) in COMMITTED {
        for entry in entry_points(arch) {
            let start = ptx
                .find(&format!(".visible .entry {}(", entry.name))
                .unwrap_or_else(|| panic!("{arch}: entry {} missing", entry.name));
            let body = &ptx[start..];
            let bounds = format!(".maxntid {}, 1, 1", entry.threads_per_block);
            let brace = body.find('{').unwrap_or(body.len());
            assert!(
                body[..brace].contains(&bounds),
                "{arch}: {} lacks `{bounds}`",
                entry.name
            );
            // The one parameter is the entry's arguments struct, as the host fills it.
            let params = &body[..body.find(')').unwrap_or(brace)];
            assert_eq!(
                params.matches(".param").count(),
                1,
                "{arch}: {} must take exactly one parameter",
                entry.name
            );
            // Declared 64-byte aligned: tensor maps inside it (launch::TensorMap).
            assert!(
                params.contains(&format!(".align {}", nvfp4_kernel::launch::PARAM_ALIGN)),
                "{arch}: {}'s parameter is not {}-byte aligned: {params}",
                entry.name,
                nvfp4_kernel::launch::PARAM_ALIGN
            );
            let size = format!("_param_0[{}]", entry.param_bytes);
            assert!(
                params.contains(&size),
                "{arch}: {}'s parameter is not {} bytes (its arguments struct): {params}",
                entry.name,
                entry.param_bytes
            );
        }
    }
}

fn every_module_entry_is_in_its_registry() {
    for (arch, ptx, _) in COMMITTED {
        let listed: Vec<&str> = entry_points(arch).map(|e| e.name).collect();
        let defined: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry ")?.strip_suffix('('))
            .collect();
        for name in &defined {
            assert!(
                listed.contains(name),
                "{arch}: entry {name} is not in the registry"
            );
        }
        assert_eq!(
            defined.len(),
            listed.len(),
            "{arch}: entries listed twice or missing"
        );
    }
    assert_eq!(
        ARCHES,
        COMMITTED.map(|(arch, _, _)| arch),
        "one module per registry"
    );
}

/// The SASS of `ptx` assembled for `arch`, or `None` (with a printed skip) when ptxas or
/// cuobjdump is absent.
fn sass_of(arch: &str, ptx: &str) -> Option<String> {
    let test = common::current_test();
    let ptxas = common::cuda_tool_or_skip("ptxas")?;
    let cuobjdump = common::cuda_tool_or_skip("cuobjdump")?;
    // One directory per test: tests of one process run in parallel, and each removes its own.
    let dir = std::env::temp_dir().join(format!("nvfp4-sass-{arch}-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (source, cubin) = (dir.join("module.ptx"), dir.join("module.cubin"));
    std::fs::write(&source, ptx).unwrap();
    let status = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&source)
        .arg("-o")
        .arg(&cubin)
        .status()
        .unwrap();
    assert!(status.success(), "ptxas rejected the {arch} module");
    // cuobjdump finds nvdisasm next to itself or on PATH.
    let path = format!(
        "{}:{}",
        cuobjdump.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new(&cuobjdump)
        .arg("-sass")
        .arg(&cubin)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The SASS of entry `name`, up to the next function.
fn function_sass<'a>(sass: &'a str, name: &str) -> &'a str {
    let start = sass
        .find(&format!("Function : {name}"))
        .unwrap_or_else(|| panic!("no {name} in the SASS"));
    let body = &sass[start..];
    &body[..body[1..].find("Function : ").map_or(body.len(), |e| e + 1)]
}

fn sm90_tiled_sass_uses_hgmma_of_the_tile_for_every_entry() {
    let Some(sass) = sass_of("sm_90a", PTX_SM90A) else {
        return;
    };
    let kernels = sm90_registry::TILED.iter().flat_map(|entries| {
        let grouped = entries
            .grouped
            .map(|g| [g.gated.entry, g.gated_nvfp4.entry, g.plain.entry]);
        let dense = entries.dense_kernels().map(|k| k.entry);
        dense
            .into_iter()
            .chain(grouped.into_iter().flatten())
            .map(move |e| (entries.tile, e))
    });
    for (tile, entry) in kernels {
        let (name, body) = (entry.name, function_sass(&sass, entry.name));
        if fitted_grouped_entries().any(|fitted| fitted == name) {
            fitted_stage_loops_without_local_memory(name, body);
            continue;
        }
        let hgmma = format!("HGMMA.64x{}x16.F32", tile.tokens);
        assert!(body.contains(&hgmma), "{name}: no {hgmma}");
        assert!(
            !body.contains("LDL") && !body.contains("STL"),
            "{name}: local memory"
        );
    }
}

/// A fitted grouped kernel's SASS: a stage loop for every width, each without local memory
/// from its first slot wait to the end of its wgmma pipeline (its per-segment code may keep a
/// few values there: the ptxas test bounds them).
fn fitted_stage_loops_without_local_memory(name: &str, body: &str) {
    use nvfp4_kernel::sm90::config::FITTED_WIDTHS;
    for width in FITTED_WIDTHS {
        let hgmma = format!("HGMMA.64x{width}x16.F32");
        let (Some(first), Some(last)) = (body.find(&hgmma), body.rfind(&hgmma)) else {
            panic!("{name}: no {hgmma}");
        };
        let start = body[..first].rfind("SYNCS.PHASECHK").unwrap_or(first);
        let end = last
            + body[last..]
                .find("DEPBAR.LE gsb0, 0x0")
                .unwrap_or(body.len() - last);
        let stage_loop = &body[start..end];
        assert!(
            !stage_loop.contains("LDL") && !stage_loop.contains("STL"),
            "{name}: local memory in the {width}-token stage loop"
        );
    }
}

fn sm90_decode_size_kernels_sass_uses_hmma_without_local_memory() {
    let Some(sass) = sass_of("sm_90a", PTX_SM90A) else {
        return;
    };
    let dense = sm90_registry::DECODE
        .iter()
        .flat_map(|decode| decode.kernels())
        .chain(sm90_registry::DECODE_PAIRED);
    let grouped = sm90_registry::GROUPED_DECODE.kernels();
    for entry in dense.map(|k| k.entry).chain(grouped.map(|k| k.entry)) {
        let (name, body) = (entry.name, function_sass(&sass, entry.name));
        assert!(body.contains("HMMA.16816.F32"), "{name}: no HMMA.16816.F32");
        assert!(
            !body.contains("LDL") && !body.contains("STL"),
            "{name}: local memory"
        );
    }
}

fn sm100_dual_gemm_sass_uses_the_block_scaled_fp4_mma_without_local_memory() {
    let Some(sass) = sass_of("sm_100f", PTX_SM100F) else {
        return;
    };
    // The dense dual GEMM (fp16 and NVFP4 output) and the grouped kernels (gated and plain)
    // of every tile.
    let names = sm100_registry::TILED.iter().flat_map(|entries| {
        [
            entries.dense.entry.name,
            entries.dense_nvfp4.entry.name,
            entries.grouped_gated.entry.name,
            entries.grouped_plain.entry.name,
        ]
    });
    for name in names {
        let body = function_sass(&sass, name);
        for instruction in ["UTCOMMA.4X", "UTCCP", "UTCBAR", "LDTM", "UTMALDG.2D", "UBLKCP"] {
            assert!(body.contains(instruction), "no {instruction} in {name}");
        }
        assert!(
            !body.contains("LDL") && !body.contains("STL"),
            "local memory in {name}"
        );
    }
    // The NVFP4 epilogue: the block scale's e4m3 rounding in hardware, data and scale stores.
    for entries in sm100_registry::TILED {
        let (name, body) = (
            entries.dense_nvfp4.entry.name,
            function_sass(&sass, entries.dense_nvfp4.entry.name),
        );
        for instruction in ["F2FP.SATFINITE.E4M3.F32.PACK", "STG.E.64"] {
            assert!(body.contains(instruction), "no {instruction} in {name}");
        }
    }
}

fn modules_call_no_external_functions() {
    for (arch, ptx, _) in COMMITTED {
        assert!(
            !ptx.contains(".extern .func"),
            "{arch}: a kernel calls into `core` (a panic path?)"
        );
    }
}

fn ptxas_assembles_both_modules_without_local_memory() {
    let Some(ptxas) = common::cuda_tool_or_skip("ptxas") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvfp4-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The Blackwell module is built for the family target and must also assemble for the
    // arch-specific targets of the devices that load it (10.0 and 10.3).
    let targets = COMMITTED.iter().flat_map(|&(arch, ptx, _)| {
        let also: &[&str] = if arch == "sm_100f" {
            &["sm_100a", "sm_103a", "sm_103f"]
        } else {
            &[]
        };
        std::iter::once((arch, ptx)).chain(also.iter().map(move |&a| (a, ptx)))
    });
    for (arch, ptx) in targets {
        let source = dir.join(format!("{arch}.ptx"));
        std::fs::write(&source, ptx).unwrap();
        let output = Command::new(&ptxas)
            .args([&format!("-arch={arch}"), "-v"])
            .arg(&source)
            .arg("-o")
            .arg(dir.join(format!("{arch}.cubin")))
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "ptxas rejected the {arch} module:\n{report}"
        );
        // No entry whose wgmmas ptxas serializes (it waits after every wgmma then, a loss of
        // up to 1.5x: perf log entries 111-112).
        let serialized: Vec<&str> = report
            .lines()
            .filter(|l| l.contains("instructions are serialized"))
            .collect();
        assert!(
            serialized.is_empty(),
            "{arch}: serialized wgmma pipelines:\n{}",
            serialized.join("\n")
        );
        // Each entry's frame line, after the line that names it.
        let mut entry = "";
        let mut frames = Vec::new();
        for line in report.lines() {
            if let Some((_, name)) = line.split_once("Function properties for ") {
                entry = name.trim();
            } else if line.contains("stack frame") {
                frames.push((entry, line));
            }
        }
        assert!(!frames.is_empty(), "{arch}: no resource report:\n{report}");
        for (entry, line) in frames {
            if fitted_grouped_entries().any(|name| name == entry) {
                // The fitted grouped kernels' producer thread (24 registers) and their consumers'
                // three stage loops keep a few values of the per-segment code in local memory
                // (the SASS: none inside a stage or slice loop; perf log entry 112): bounded.
                let frame: u32 = line
                    .trim()
                    .split(' ')
                    .next()
                    .and_then(|b| b.parse().ok())
                    .unwrap_or(u32::MAX);
                assert!(
                    frame <= FITTED_FRAME_BYTES,
                    "{arch}: {entry} keeps more local memory than its bound: {line}"
                );
                continue;
            }
            assert!(
                line.contains("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                "{arch}: local memory in use in {entry}: {line}"
            );
        }
        // The setmaxnreg budget (sm90::config) assumes ptxas allocates the tile's entry registers
        // at launch.
        let dense = sm90_registry::TILED
            .iter()
            .filter(|_| arch == "sm_90a")
            .flat_map(|entries| entries.dense_kernels().map(|k| (entries, k)));
        for (entries, kernel) in dense {
            let name = kernel.entry.name;
            let entry = report
                .split("Compiling entry function")
                // The chunk this entry's header opens (other entries' notes may name it too).
                .find(|r| r.trim_start().starts_with(&format!("'{name}'")));
            let wanted = format!("Used {} registers", entries.tile.entry_registers());
            assert!(
                entry.is_some_and(|r| r.contains(&wanted)),
                "{name}: expected `{wanted}`"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

test_main!(
    committed_ptx_matches_a_fresh_build,
    every_entry_point_has_launch_bounds_and_one_parameter_of_its_arguments_size,
    every_module_entry_is_in_its_registry,
    sm90_tiled_sass_uses_hgmma_of_the_tile_for_every_entry,
    sm90_decode_size_kernels_sass_uses_hmma_without_local_memory,
    sm100_dual_gemm_sass_uses_the_block_scaled_fp4_mma_without_local_memory,
    modules_call_no_external_functions,
    ptxas_assembles_both_modules_without_local_memory,
);
