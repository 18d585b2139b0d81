//! The kernel PTX: committed copy up to date, assembles with ptxas for its architecture, no local
//! memory, launch bounds written for every entry point.

mod common;

use std::process::Command;

use nvfp4::kernels::{PTX_ORIGIN, PTX_SM90A, PTX_SM100A, PtxOrigin};
use nvfp4_kernel::launch::ENTRY_POINTS;

const COMMITTED: [(&str, &str, &str); 2] = [
    ("sm_90a", PTX_SM90A, include_str!("../kernel/ptx/nvfp4_sm90a.ptx")),
    (
        "sm_100a",
        PTX_SM100A,
        include_str!("../kernel/ptx/nvfp4_sm100a.ptx"),
    ),
];

#[test]
fn committed_ptx_matches_a_fresh_build() {
    if PTX_ORIGIN == PtxOrigin::Committed {
        // build.rs fails instead when NVFP4_REQUIRE_TOOLS is set, so this is never a CI skip.
        common::skip_because(
            "committed_ptx_matches_a_fresh_build",
            "no nvptx toolchain; the build used kernel/ptx/",
        );
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

#[test]
fn every_entry_point_has_launch_bounds_in_both_modules() {
    for (arch, ptx, _) in COMMITTED {
        for entry in ENTRY_POINTS {
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
        }
    }
}

#[test]
fn modules_call_no_external_functions() {
    for (arch, ptx, _) in COMMITTED {
        assert!(
            !ptx.contains(".extern .func"),
            "{arch}: a kernel calls into `core` (a panic path?)"
        );
    }
}

#[test]
fn ptxas_assembles_both_modules_without_local_memory() {
    let Some(ptxas) = common::cuda_tool_or_skip("ptxas", "ptxas_assembles_both_modules_without_local_memory")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvfp4-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (arch, ptx, _) in COMMITTED {
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
        let frames: Vec<&str> = report.lines().filter(|l| l.contains("stack frame")).collect();
        assert!(!frames.is_empty(), "{arch}: no resource report:\n{report}");
        for line in frames {
            assert!(
                line.contains("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                "{arch}: local memory in use: {line}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
