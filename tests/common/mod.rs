//! Helpers shared by the integration tests: skipping (with a printed reason) when a GPU or a tool
//! is absent, unless the environment demands it, and the harness that reports such skips.
//!
//! Test binaries with tests that may skip use [`test_main!`] (with `harness = false`): a skipped
//! test is reported as *ignored, with its reason* (not as passed), the summary counts it among
//! the ignored, and a list of skipped tests and reasons is printed last.
#![allow(dead_code)]

use std::cell::Cell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use libtest_mimic::{Arguments, Completion, Trial};
use nvfp4::gpu::Gpu;
use nvfp4::tools;

/// Set to make an absent or unsupported GPU a test failure (the GPU runner sets it).
pub const REQUIRE_GPU_ENV: &str = "NVFP4_REQUIRE_GPU";

/// Skips recorded by the running tests: (test, reason).
static SKIPS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

thread_local! {
    /// The test [`run_tests`] runs on this thread: the name skips are recorded under.
    static CURRENT_TEST: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// The name of the test running on this thread (as [`test_main!`] listed it).
pub fn current_test() -> &'static str {
    CURRENT_TEST
        .get()
        .expect("skips and test names are only known on a test's own thread, inside run_tests")
}

fn skip(reason: &str) {
    let test = current_test();
    if let Ok(mut skips) = SKIPS.lock() {
        skips.push((test.to_string(), reason.to_string()));
    }
}

/// The reason `test` recorded for skipping, if any.
fn take_skip(test: &str) -> Option<String> {
    let mut skips = SKIPS.lock().ok()?;
    let position = skips.iter().position(|(t, _)| t == test)?;
    Some(skips.remove(position).1)
}

/// Opens GPU 0, or records why the running test is skipped and returns `None`.
pub fn gpu_or_skip() -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var_os(REQUIRE_GPU_ENV).is_some() => {
            panic!("a GPU is required ({REQUIRE_GPU_ENV} is set) but: {e}")
        }
        Err(e) => {
            skip(&format!("needs a supported GPU: {e}"));
            None
        }
    }
}

/// Finds a CUDA tool, or records why the running test is skipped (an error under NVFP4_REQUIRE_TOOLS=1).
pub fn cuda_tool_or_skip(name: &str) -> Option<PathBuf> {
    match tools::find_cuda_tool(name) {
        Ok(path) => Some(path),
        Err(why) if tools::tools_required() => panic!("{why} ({} is set)", tools::REQUIRE_TOOLS_ENV),
        Err(why) => {
            skip(&why);
            None
        }
    }
}

/// Records why the running test is skipped (for conditions other than a missing GPU or tool).
pub fn skip_because(reason: &str) {
    skip(reason);
}

/// Runs `tests` (name, function) with libtest's command line and output: a test that recorded a
/// skip is *ignored* with its reason; the skipped tests are listed again at the end.
pub fn run_tests(tests: Vec<(&'static str, fn())>) -> ExitCode {
    let args = Arguments::from_args();
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            Trial::ignorable_test(name, move || {
                CURRENT_TEST.set(Some(name));
                test();
                Ok(take_skip(name).map_or(Completion::Completed, Completion::ignored_with))
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    if conclusion.num_ignored > 0 && !args.list {
        println!(
            "{} test(s) skipped (ignored) here; {REQUIRE_GPU_ENV}=1 or {}=1 turn such skips into failures.",
            conclusion.num_ignored,
            tools::REQUIRE_TOOLS_ENV
        );
    }
    conclusion.exit_code()
}

/// `fn main` of a test binary (`harness = false`) running the listed test functions with
/// [`run_tests`].
#[macro_export]
macro_rules! test_main {
    ($($test:ident),* $(,)?) => {
        fn main() -> std::process::ExitCode {
            common::run_tests(vec![$((stringify!($test), $test as fn())),*])
        }
    };
}
