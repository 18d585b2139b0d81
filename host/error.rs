//! The library's error type: every rejected input names the argument and the rule it broke.

/// Errors returned by this library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A dimension or parameter breaks a rule (e.g. K not a multiple of 16).
    #[error("invalid `{arg}`: {rule} (got {got})")]
    InvalidArgument {
        /// The argument's name.
        arg: &'static str,
        /// The rule it must follow.
        rule: String,
        /// The value it had.
        got: String,
    },
    /// A buffer's length does not match the shape it is said to have.
    #[error("buffer `{arg}` has {got} elements, expected {expected}")]
    BufferLength {
        /// The buffer's name.
        arg: &'static str,
        /// Elements the shape requires.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// Two operands disagree on a shared dimension.
    #[error("shape mismatch: {0}")]
    ShapeMismatch(String),
    /// An input value cannot be quantized (NaN or infinite).
    #[error("`{arg}` holds a non-finite value {value} at index {index}")]
    NonFinite {
        /// The input's name.
        arg: &'static str,
        /// Index of the first non-finite element.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// No CUDA driver library could be loaded on this machine.
    #[error(
        "no CUDA driver found (libcuda could not be loaded); use the CPU reference (`nvfp4::reference::dual_gemm`)"
    )]
    NoDriver,
    /// The GPU is neither Hopper (9.0) nor Blackwell (10.x).
    #[error(
        "unsupported GPU `{name}` (compute capability {major}.{minor}): kernels exist for 9.0 \
         (sm_90a) and 10.0 and 10.3 (sm_100f); use the CPU reference (`nvfp4::reference::dual_gemm`)"
    )]
    UnsupportedGpu {
        /// Device name reported by the driver.
        name: String,
        /// Compute capability, major.
        major: i32,
        /// Compute capability, minor.
        minor: i32,
    },
    /// The device's architecture has no kernel for this operation yet.
    #[error("no {operation} kernel for {arch} yet; use the CPU reference (`nvfp4::reference::dual_gemm`)")]
    KernelUnavailable {
        /// The operation.
        operation: &'static str,
        /// The architecture, e.g. `sm_100f`.
        arch: &'static str,
    },
    /// A plan asked for a kernel that the architecture's registry does not list (for example
    /// a tile the module is not built for): an internal inconsistency, never another kernel.
    #[error("the {arch} module has no {kernel} kernel")]
    MissingKernel {
        /// The kernel asked for, e.g. `grouped dual GEMM, 256-token tile`.
        kernel: String,
        /// The architecture, e.g. `sm_90a`.
        arch: &'static str,
    },
    /// A grouped launch's device-side offsets broke a rule (found by the GPU; the launch wrote
    /// nothing). Reported by `GroupedPlan::device_status`.
    #[error("device-side offsets of group {group}: {rule}; the launch computed nothing")]
    DeviceOffsets {
        /// The first group found breaking it.
        group: usize,
        /// The rule.
        rule: &'static str,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Cuda(#[from] cudarc::driver::DriverError),
}

/// Shorthand for results of this library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(arg: &'static str, rule: impl Into<String>, got: impl ToString) -> Self {
        Error::InvalidArgument {
            arg,
            rule: rule.into(),
            got: got.to_string(),
        }
    }
}
