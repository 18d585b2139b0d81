//! Locating the external tools the build and the tests use: an nvptx-capable rustc, ptxas and
//! cuobjdump. Shared verbatim by `build.rs` (through `#[path]`) and the library, so there is one
//! search order. Depends on `std` only.
//!
//! Search orders:
//! * nvptx rustc: `$NVFP4_NVPTX_RUSTC`, then `/usr/bin/rustc` (Debian's `rustc-web`); a candidate
//!   counts only if `<sysroot>/lib/rustlib/src/rust/library/core` exists (its library source,
//!   which `-Zbuild-std=core` compiles, must match the compiler exactly).
//! * CUDA tools: `$PTXAS` (ptxas only), then `PATH`, then `/usr/local/cuda/bin`, then the PyPI
//!   wheels' `<site-packages>/nvidia/cu13/bin` of `python3`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable that turns every missing tool into an error instead of a skip.
pub const REQUIRE_TOOLS_ENV: &str = "NVFP4_REQUIRE_TOOLS";
/// Environment variable naming an nvptx-capable rustc.
pub const NVPTX_RUSTC_ENV: &str = "NVFP4_NVPTX_RUSTC";
/// Environment variable naming a ptxas binary.
pub const PTXAS_ENV: &str = "PTXAS";

/// True when `NVFP4_REQUIRE_TOOLS` is set to something other than `0` or empty.
pub fn tools_required() -> bool {
    std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Finds a rustc whose nvptx backend and matching library source can build the kernel crate.
pub fn find_nvptx_rustc() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os(NVPTX_RUSTC_ENV) {
        candidates.push(PathBuf::from(path));
    }
    candidates.push(PathBuf::from("/usr/bin/rustc"));
    let mut tried = Vec::new();
    for rustc in candidates {
        match library_source_of(&rustc) {
            Ok(_) => return Ok(rustc),
            Err(why) => tried.push(format!("{}: {why}", rustc.display())),
        }
    }
    Err(format!(
        "no nvptx-capable rustc with matching library source ({}); install Debian's \
         `rustc-web rust-web-src` or set {NVPTX_RUSTC_ENV}",
        tried.join("; ")
    ))
}

fn library_source_of(rustc: &Path) -> Result<PathBuf, String> {
    let output = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run ({e})"))?;
    if !output.status.success() {
        return Err("`--print sysroot` failed".into());
    }
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let library = Path::new(&sysroot).join("lib/rustlib/src/rust/library");
    if library.join("core").is_dir() {
        Ok(library)
    } else {
        Err(format!("no library source at {}", library.display()))
    }
}

/// Finds a CUDA binary tool (`ptxas`, `cuobjdump`, `nvdisasm`) by the search order above.
pub fn find_cuda_tool(name: &str) -> Result<PathBuf, String> {
    if name == "ptxas"
        && let Some(path) = std::env::var_os(PTXAS_ENV)
    {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{PTXAS_ENV}={} is not a file", path.display()))
        };
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.extend(
        python_site_packages()
            .into_iter()
            .map(|sp| sp.join("nvidia/cu13/bin")),
    );
    dirs.iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!(
                "`{name}` not found in PATH, /usr/local/cuda/bin or python3's nvidia/cu13/bin; \
                 install it with `python3 -m pip install nvidia-cuda-nvcc==13.0.88 \
                 nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`"
            )
        })
}

fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site, sysconfig\n\
                  paths = [sysconfig.get_paths()['purelib']] + site.getsitepackages() + [site.getusersitepackages()]\n\
                  print('\\n'.join(paths))";
    Command::new("python3")
        .args(["-c", script])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}
