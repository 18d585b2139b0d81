//! Launch contract of every kernel entry point: the PTX name the host looks up and the block size.
//!
//! Rust cannot express launch bounds, so the host crate's `build.rs` reads this table and writes
//! `.maxntid` (and `.minnctapersm`, which `setmaxnreg` needs) into the PTX after each entry's
//! parameter list; the host launches with the same `threads_per_block`.

/// One kernel entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Exported PTX name (`#[unsafe(no_mangle)]` function name).
    pub name: &'static str,
    /// Threads per block; written as `.maxntid threads_per_block, 1, 1`.
    pub threads_per_block: u32,
    /// Written as `.minnctapersm` when present (required for `setmaxnreg` to take effect).
    pub min_blocks_per_sm: Option<u32>,
}

/// NVFP4 → fp16 dequantization.
pub const DEQUANTIZE_F16: EntryPoint = EntryPoint {
    name: "nvfp4_dequantize_f16",
    threads_per_block: 256,
    min_blocks_per_sm: None,
};

/// NVFP4 → bf16 dequantization.
pub const DEQUANTIZE_BF16: EntryPoint = EntryPoint {
    name: "nvfp4_dequantize_bf16",
    threads_per_block: 256,
    min_blocks_per_sm: None,
};

/// Every entry point, in the order the build post-processes them.
pub const ENTRY_POINTS: &[EntryPoint] = &[DEQUANTIZE_F16, DEQUANTIZE_BF16];
