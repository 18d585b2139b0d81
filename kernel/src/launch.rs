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

/// fp16 `silu(gate) · up` (the unfused baseline's last step).
pub const SILU_MUL_F16: EntryPoint = EntryPoint {
    name: "nvfp4_silu_mul_f16",
    threads_per_block: 256,
    min_blocks_per_sm: None,
};

/// bf16 `silu(gate) · up`.
pub const SILU_MUL_BF16: EntryPoint = EntryPoint {
    name: "nvfp4_silu_mul_bf16",
    threads_per_block: 256,
    min_blocks_per_sm: None,
};

/// The sm_90a dual GEMM, one entry per token tile (`sm90::config::TILES`). `.minnctapersm 1`
/// lets `setmaxnreg` move registers between its warpgroups.
pub const fn sm90_dual_gemm(tile: crate::sm90::config::Tile) -> EntryPoint {
    EntryPoint {
        name: tile.entry_name(),
        threads_per_block: crate::sm90::config::THREADS,
        min_blocks_per_sm: Some(1),
    }
}

const SM90_TILES: [crate::sm90::config::Tile; 5] = crate::sm90::config::TILES;

/// Token pre-decoding for the sm_90a dual GEMM's large tiles (`sm90::tokens`).
pub const SM90_PREDECODE_TOKENS: EntryPoint = EntryPoint {
    name: "nvfp4_predecode_tokens_sm90",
    threads_per_block: 256,
    min_blocks_per_sm: None,
};

/// Entry points of both modules.
pub const COMMON_ENTRY_POINTS: &[EntryPoint] =
    &[DEQUANTIZE_F16, DEQUANTIZE_BF16, SILU_MUL_F16, SILU_MUL_BF16];

/// Entry points of the sm_90a module only.
pub const SM90_ENTRY_POINTS: &[EntryPoint] = &[
    sm90_dual_gemm(SM90_TILES[0]),
    sm90_dual_gemm(SM90_TILES[1]),
    sm90_dual_gemm(SM90_TILES[2]),
    sm90_dual_gemm(SM90_TILES[3]),
    sm90_dual_gemm(SM90_TILES[4]),
    SM90_PREDECODE_TOKENS,
];

/// The sm_100a dual GEMM (tcgen05), one entry per tile (`sm100::config::TILES`).
/// `.minnctapersm 1`: one CTA per SM owns all TMEM columns.
pub const fn sm100_dual_gemm(tile: crate::sm100::config::Tile) -> EntryPoint {
    EntryPoint {
        name: tile.entry_name(),
        threads_per_block: crate::sm100::config::THREADS,
        min_blocks_per_sm: Some(1),
    }
}

const SM100_TILES: [crate::sm100::config::Tile; 2] = crate::sm100::config::TILES;

/// Entry points of the sm_100a module only.
pub const SM100_ENTRY_POINTS: &[EntryPoint] =
    &[sm100_dual_gemm(SM100_TILES[0]), sm100_dual_gemm(SM100_TILES[1])];

/// The entry points of the module for `arch` (`"sm_90a"` or `"sm_100a"`).
pub fn entry_points(arch: &str) -> impl Iterator<Item = &'static EntryPoint> {
    let specific = match arch {
        "sm_90a" => SM90_ENTRY_POINTS,
        "sm_100a" => SM100_ENTRY_POINTS,
        _ => &[],
    };
    COMMON_ENTRY_POINTS.iter().chain(specific)
}
