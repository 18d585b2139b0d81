//! The PTX modules built from `kernel/` by `build.rs`, embedded in the library.

/// Where the embedded PTX came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxOrigin {
    /// Built from `kernel/src` by this build (an nvptx toolchain was found).
    Fresh,
    /// Copied from `kernel/ptx/` (no nvptx toolchain; the kernels were not rebuilt).
    Committed,
}

/// The origin of [`PTX_SM90A`] and [`PTX_SM100F`].
pub const PTX_ORIGIN: PtxOrigin = match env!("NVFP4_PTX_ORIGIN").as_bytes() {
    b"fresh" => PtxOrigin::Fresh,
    _ => PtxOrigin::Committed,
};

/// Kernels for Hopper (compute capability 9.0), PTX for `sm_90a`.
pub const PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/nvfp4_sm90a.ptx"));

/// Kernels for Blackwell (compute capability 10.0 and 10.3), PTX for the family target `sm_100f`.
pub const PTX_SM100F: &str = include_str!(concat!(env!("OUT_DIR"), "/nvfp4_sm100f.ptx"));
