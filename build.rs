//! Builds the device crate `kernel/` to PTX with rustc's nvptx backend, once per GPU architecture.
//!
//! For each target in [`TARGETS`]: `cargo rustc -Zbuild-std=core --target nvptx64-nvidia-cuda
//! --crate-type staticlib -- --emit=asm=…` with Debian's rustc (see `host/tools.rs` and
//! `docs/toolchain.md`), then launch bounds from the kernel registries (`nvfp4_kernel::registry`) are inserted into
//! the PTX text, then ptxas assembles it when found. The host crate embeds the result from
//! `OUT_DIR`. Without an nvptx toolchain the PTX committed under `kernel/ptx/` is used instead, so
//! that stable Rust alone builds the library, but only if their first line, a fingerprint of the
//! kernel sources (`sources_header`), matches the sources here; `NVFP4_REQUIRE_TOOLS=1` makes a
//! missing toolchain an error, and `NVFP4_UPDATE_PTX=1` copies a fresh build over the committed
//! files.

#[path = "host/tools.rs"]
mod tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use nvfp4_kernel::launch::{EntryPoint, PARAM_ALIGN};
use nvfp4_kernel::registry::entry_points;

/// One PTX module to build.
struct Target {
    /// `-C target-cpu` and the `nvfp4_arch` cfg value.
    arch: &'static str,
    /// Extra `-C target-feature`s (the PTX ISA version).
    features: &'static str,
    /// File name in `OUT_DIR` and `kernel/ptx/`.
    file: &'static str,
}

const TARGETS: [Target; 2] = [
    Target {
        arch: "sm_90a",
        features: "",
        file: "nvfp4_sm90a.ptx",
    },
    // `.kind::mxf4nvf4` needs PTX 8.7 and `.block16` 8.8 (docs/ptx-facts.md §0).
    Target {
        arch: "sm_100f",
        features: "+ptx88",
        file: "nvfp4_sm100f.ptx",
    },
];

const UPDATE_PTX_ENV: &str = "NVFP4_UPDATE_PTX";
/// Set to repeat the build's notices (committed PTX used, PTX not validated) on every build.
const VERBOSE_ENV: &str = "NVFP4_BUILD_VERBOSE";

fn main() {
    for path in [
        "kernel/src",
        "kernel/Cargo.toml",
        "kernel/ptx",
        "host/tools.rs",
        "build.rs",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    for var in [
        tools::REQUIRE_TOOLS_ENV,
        tools::NVPTX_RUSTC_ENV,
        tools::PTXAS_ENV,
        UPDATE_PTX_ENV,
        VERBOSE_ENV,
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    built_revision();
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

/// Exposes the revision being built as `NVFP4_BUILT_REVISION` (`nvfp4::BUILT_REVISION`):
/// `git rev-parse --short HEAD`, with `+dirty` when tracked files differ from it, or `unknown`
/// outside a git checkout. Rebuilt when HEAD or the index moves.
fn built_revision() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let revision = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(changes) if !changes.is_empty() => format!("{head}+dirty"),
            _ => head,
        },
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=NVFP4_BUILT_REVISION={revision}");
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        for file in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={git_dir}/{file}");
        }
    }
}

fn run() -> Result<(), String> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let committed_dir = manifest_dir.join("kernel/ptx");
    let sources = sources_header(&manifest_dir)?;
    let origin = match tools::find_nvptx_rustc() {
        Ok(rustc) => {
            for target in &TARGETS {
                let ptx = format!(
                    "{sources}\n{}",
                    build_ptx(&rustc, &manifest_dir, &out_dir, target)?
                );
                write(&out_dir.join(target.file), &ptx)?;
                if std::env::var_os(UPDATE_PTX_ENV).is_some() {
                    write(&committed_dir.join(target.file), &ptx)?;
                }
            }
            "fresh"
        }
        Err(why) if tools::tools_required() => {
            return Err(format!("{why} ({} is set)", tools::REQUIRE_TOOLS_ENV));
        }
        Err(why) => {
            notice(
                &out_dir,
                "committed-ptx",
                &format!("kernels not rebuilt, using the PTX committed under kernel/ptx/ ({why})"),
            );
            for target in &TARGETS {
                let committed = committed_dir.join(target.file);
                let ptx = std::fs::read_to_string(&committed)
                    .map_err(|e| format!("cannot read {}: {e}", committed.display()))?;
                let built_from = ptx.lines().next().unwrap_or_default();
                if built_from != sources {
                    return Err(format!(
                        "{} was built from other kernel sources than these ({built_from:?}, these: \
                         {sources:?}) and no nvptx toolchain is here to rebuild it ({why}). Rebuild \
                         and commit it where one is: `apt-get install rustc-web rust-web-src && \
                         NVFP4_UPDATE_PTX=1 cargo build --release` (docs/toolchain.md)",
                        committed.display()
                    ));
                }
                write(&out_dir.join(target.file), &ptx)?;
            }
            "committed"
        }
    };
    println!("cargo:rustc-env=NVFP4_PTX_ORIGIN={origin}");
    assemble_with_ptxas(&out_dir)
}

/// The files the PTX is built from: the kernel crate's sources and manifest, and this build
/// script (it writes the launch bounds).
fn kernel_sources(manifest_dir: &Path) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = vec![
        manifest_dir.join("kernel/Cargo.toml"),
        manifest_dir.join("build.rs"),
    ];
    walk(&manifest_dir.join("kernel/src"), &mut files)?;
    Ok(files)
}

/// The first line of every PTX module: a fingerprint of [`kernel_sources`] (64-bit FNV-1a over
/// each file's path relative to the crate, with `/` separators, and its bytes, in path order;
/// a staleness check, not a security measure). A committed module whose line differs was built
/// from other sources.
fn sources_header(manifest_dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    for path in kernel_sources(manifest_dir)? {
        let relative = path.strip_prefix(manifest_dir).map_err(|e| e.to_string())?;
        let name = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        files.push((name, bytes));
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, bytes) in &files {
        for &byte in name.as_bytes().iter().chain(&[0]).chain(bytes).chain(&[0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    Ok(format!(
        "// nvfp4-kernel sources fnv1a64:{hash:016x} ({} files)",
        files.len()
    ))
}

fn build_ptx(rustc: &Path, manifest_dir: &Path, out_dir: &Path, target: &Target) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // One nvptx target dir per outer profile (…/target/<profile>/nvptx-kernel), so that test,
    // clippy and build runs of the same profile reuse the compiled `core`.
    let target_dir = out_dir
        .ancestors()
        .nth(3)
        .unwrap_or(out_dir)
        .join("nvptx-kernel")
        .join(target.arch);
    let raw_ptx = target_dir.join(target.file);
    let mut rustflags = format!(
        "-C target-cpu={} --cfg nvfp4_arch=\"{}\"",
        target.arch, target.arch
    );
    if !target.features.is_empty() {
        rustflags += &format!(" -C target-feature={}", target.features);
    }
    let mut command = Command::new(cargo);
    command
        .current_dir(manifest_dir.join("kernel"))
        .args(["rustc", "--quiet", "--release", "-Zbuild-std=core"])
        .args(["--target", "nvptx64-nvidia-cuda", "--crate-type", "staticlib"])
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--")
        .arg(format!("--emit=asm={}", raw_ptx.display()))
        .env("RUSTC", rustc)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", rustflags);
    // The outer cargo's settings must not leak into the device build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo for {}: {e}", target.arch))?;
    if !status.success() {
        return Err(format!("building the {} kernels failed ({status})", target.arch));
    }
    let ptx =
        std::fs::read_to_string(&raw_ptx).map_err(|e| format!("cannot read {}: {e}", raw_ptx.display()))?;
    insert_launch_bounds(&ptx, target.arch)
}

/// Writes `.maxntid` (and `.minnctapersm`) after the parameter list of each entry point that
/// the registries declare for `arch`, and declares its parameter `.align PARAM_ALIGN` (tensor maps
/// inside it must be 64-byte aligned: `nvfp4_kernel::launch::TensorMap`); every declared entry
/// must be in the module.
fn insert_launch_bounds(ptx: &str, arch: &str) -> Result<String, String> {
    let entries: Vec<&EntryPoint> = entry_points(arch).collect();
    let mut out = String::with_capacity(ptx.len() + 64 * entries.len());
    let mut pending: Option<&EntryPoint> = None;
    let mut written = 0;
    for line in ptx.lines() {
        let aligned;
        let line = match pending {
            Some(entry) if line.contains(&format!("{}_param_0[", entry.name)) => {
                let Some(start) = line.find(".align ") else {
                    return Err(format!("{}: parameter without .align: {line}", entry.name));
                };
                let end = line[start + 7..].find(' ').map_or(line.len(), |e| start + 7 + e);
                aligned = format!("{}.align {PARAM_ALIGN}{}", &line[..start], &line[end..]);
                &aligned
            }
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
        if let Some(name) = line
            .strip_prefix(".visible .entry ")
            .and_then(|s| s.strip_suffix('('))
        {
            pending = entries.iter().copied().find(|e| e.name == name);
        } else if line.trim() == ")"
            && let Some(entry) = pending.take()
        {
            out.push_str(&format!(".maxntid {}, 1, 1\n", entry.threads_per_block));
            if let Some(blocks) = entry.min_blocks_per_sm {
                out.push_str(&format!(".minnctapersm {blocks}\n"));
            }
            written += 1;
        }
    }
    if let Some(entry) = pending {
        return Err(format!("no parameter list end found for entry {}", entry.name));
    }
    if written != entries.len() {
        return Err(format!(
            "{arch}: {} entry points declared in the registries, {written} found in the PTX",
            entries.len()
        ));
    }
    Ok(out)
}

fn assemble_with_ptxas(out_dir: &Path) -> Result<(), String> {
    let ptxas = match tools::find_cuda_tool("ptxas") {
        Ok(path) => path,
        Err(why) if tools::tools_required() => {
            return Err(format!("{why} ({} is set)", tools::REQUIRE_TOOLS_ENV));
        }
        Err(why) => {
            notice(
                out_dir,
                "unvalidated-ptx",
                &format!("PTX not checked by ptxas ({why})"),
            );
            return Ok(());
        }
    };
    for target in &TARGETS {
        let ptx = out_dir.join(target.file);
        let output = Command::new(&ptxas)
            .arg(format!("-arch={}", target.arch))
            .arg(&ptx)
            .arg("-o")
            .arg(out_dir.join(target.file).with_extension("cubin"))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
        if !output.status.success() {
            return Err(format!(
                "ptxas rejected {} for {}:\n{}",
                ptx.display(),
                target.arch,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(())
}

/// A build notice (committed PTX used, PTX not validated): silent by default, since cargo
/// replays a build script's warnings on every later build of this package, even a no-op one;
/// `NVFP4_BUILD_VERBOSE=1` shows it as a warning. The same facts reach the user once per test
/// run instead: `nvfp4::kernels::PTX_ORIGIN` and the PTX tests' skip reasons, listed in the test
/// summary. The notice is also written to `OUT_DIR/notice-<name>`.
fn notice(out_dir: &Path, name: &str, message: &str) {
    if std::env::var_os(VERBOSE_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        println!("cargo:warning={message}");
    }
    let _ = std::fs::write(out_dir.join(format!("notice-{name}")), message);
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
