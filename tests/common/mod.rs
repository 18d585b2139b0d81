//! Helpers shared by the integration tests: skipping (with a printed reason) when a GPU or a tool
//! is absent, unless the environment demands it.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;

use nvfp4::gpu::Gpu;
use nvfp4::tools;

/// Set to make an absent or unsupported GPU a test failure (the GPU runner sets it).
pub const REQUIRE_GPU_ENV: &str = "NVFP4_REQUIRE_GPU";

fn skip(test: &str, reason: &str) {
    // Written to the process's stderr directly: libtest captures only the print macros.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// Opens GPU 0, or prints why the test is skipped and returns `None`.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var_os(REQUIRE_GPU_ENV).is_some() => {
            panic!("{test}: a GPU is required ({REQUIRE_GPU_ENV} is set) but: {e}")
        }
        Err(e) => {
            skip(test, &format!("needs a supported GPU: {e}"));
            None
        }
    }
}

/// Finds a CUDA tool, or prints why the test is skipped (an error under NVFP4_REQUIRE_TOOLS=1).
pub fn cuda_tool_or_skip(name: &str, test: &str) -> Option<PathBuf> {
    match tools::find_cuda_tool(name) {
        Ok(path) => Some(path),
        Err(why) if tools::tools_required() => panic!("{test}: {why} ({} is set)", tools::REQUIRE_TOOLS_ENV),
        Err(why) => {
            skip(test, &why);
            None
        }
    }
}

/// Prints a skip reason (for conditions other than a missing GPU or tool).
pub fn skip_because(test: &str, reason: &str) {
    skip(test, reason);
}
