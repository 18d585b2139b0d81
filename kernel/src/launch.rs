//! Launch contract of every kernel entry point: the PTX name the host looks up, the block size,
//! and the one definition of its arguments.
//!
//! Every kernel takes a single parameter, a `#[repr(C)]` struct passed by value, and the host
//! fills that same struct: a [`Kernel<A>`] can only be launched with an `A`, so the argument
//! list cannot disagree between the two sides (order, count or types). The PTX test checks
//! that every entry declares one parameter of `size_of::<A>()` bytes.
//!
//! Rust cannot express launch bounds, so the host crate's `build.rs` reads this table and writes
//! `.maxntid` (and `.minnctapersm`, which `setmaxnreg` needs) into the PTX after each entry's
//! parameter list; the host launches with the same `threads_per_block`.

use core::marker::PhantomData;

/// One kernel entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Exported PTX name (`#[unsafe(no_mangle)]` function name).
    pub name: &'static str,
    /// Threads per block; written as `.maxntid threads_per_block, 1, 1`.
    pub threads_per_block: u32,
    /// Written as `.minnctapersm` when present (required for `setmaxnreg` to take effect).
    pub min_blocks_per_sm: Option<u32>,
    /// Bytes of the entry's one by-value parameter (its arguments struct).
    pub param_bytes: u32,
}

/// An entry point whose one parameter is an `A`.
#[derive(Debug)]
pub struct Kernel<A> {
    /// Name, block size and launch bounds.
    pub entry: EntryPoint,
    args: PhantomData<fn(A)>,
}

impl<A> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for Kernel<A> {}

impl<A> Kernel<A> {
    /// The entry `name` with `threads_per_block` threads and an optional `.minnctapersm`.
    pub const fn new(name: &'static str, threads_per_block: u32, min_blocks_per_sm: Option<u32>) -> Self {
        Self {
            entry: EntryPoint {
                name,
                threads_per_block,
                min_blocks_per_sm,
                param_bytes: core::mem::size_of::<A>() as u32,
            },
            args: PhantomData,
        }
    }
}

/// A TMA tensor map (`CUtensorMap`: 128 opaque bytes) carried inside a kernel's arguments. The
/// host encodes it for each launch (a host-only driver call: no device memory, no copy, so a
/// launch can be captured in a CUDA graph); the kernel passes TMA the map's generic address in
/// parameter space (`ptx::kernel_param_address!`), as CUDA C++ does for a
/// `__grid_constant__ CUtensorMap`.
///
/// TMA needs the map 64-byte aligned. rustc's nvptx backend rejects parameter types aligned
/// above 16 bytes, so: the type is 16-byte aligned, every arguments struct puts its maps at
/// offsets that are multiples of [`PARAM_ALIGN`] (checked where the struct is defined), and the
/// build declares every entry's parameter `.align PARAM_ALIGN` in the PTX.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorMap(pub [u64; 16]);

impl TensorMap {
    /// Tensors spanning fewer bytes than this get [`Self::with_driver_workaround`]'s bit cleared.
    pub const SMALL_TENSOR_BYTES: u64 = 128 * 1024;
    /// The newest driver (CUDA 13.1, as `cuDriverGetVersion` reports it) that needs the
    /// workaround.
    pub const LAST_AFFECTED_DRIVER: i32 = 13010;

    /// The map as CUTLASS leaves it after encoding (since 4.3.4, `cute/atom/
    /// copy_traits_sm90_tma.hpp`, `make_tma_copy_desc`; its changelog: a driver bug "which will
    /// cause occasionally errors on Blackwell when the tensor's backing memory allocation is less
    /// than 128KB"): with a driver of CUDA 13.1 or older, a map over a tensor whose memory span is
    /// under 128 KiB has bit 21 of its 64-bit word 1 cleared. Both architectures' maps get it,
    /// as CUTLASS does (it checks no architecture).
    pub const fn with_driver_workaround(mut self, driver_version: i32, span_bytes: u64) -> Self {
        if driver_version <= Self::LAST_AFFECTED_DRIVER && span_bytes < Self::SMALL_TENSOR_BYTES {
            self.0[1] &= !(1u64 << 21);
        }
        self
    }

    /// Bytes a 2-D tensor of `dims` (innermost first) spans with rows `row_pitch` bytes apart:
    /// from its first element to the end of its last (CuTe's `cosize` × element bytes).
    pub const fn span_bytes_2d(dims: [u64; 2], row_pitch: u64, element_bytes: u64) -> u64 {
        if dims[0] == 0 || dims[1] == 0 {
            0
        } else {
            (dims[1] - 1) * row_pitch + dims[0] * element_bytes
        }
    }
}

/// Alignment of every kernel's parameter in the PTX (`.param .align 64`; see [`TensorMap`]).
pub const PARAM_ALIGN: usize = 64;

/// Arguments of the dequantization kernels: an NVFP4 matrix to row-major fp16/bf16.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DequantizeArgs {
    /// Packed e2m1 data, `rows × k/2` bytes, 8-byte aligned.
    pub data: *const u8,
    /// Blocked e4m3 scales.
    pub scales: *const u8,
    /// Output, `rows × k` elements, 16-byte aligned.
    pub out: *mut u16,
    /// Rows.
    pub rows: u32,
    /// K (a multiple of 16).
    pub k: u32,
    /// The matrix's global scale (1 for none).
    pub global_scale: f32,
}

/// Arguments of the `silu(gate) · up` kernels on fp16/bf16 vectors.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiluMulArgs {
    /// Gate values, `len` elements, 16-byte aligned.
    pub gate: *const u32,
    /// Up values, `len` elements, 16-byte aligned.
    pub up: *const u32,
    /// Output, `len` elements, 16-byte aligned.
    pub out: *mut u32,
    /// Elements (a multiple of 8, below 2³¹).
    pub len: u32,
}

/// Arguments of the quantization kernels (`crate::quantize`): row-major f32 / f16 / bf16
/// values to an NVFP4 matrix.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QuantizeArgs {
    /// `rows × k` input elements, 16-byte aligned.
    pub values: *const u8,
    /// Packed e2m1 output, `rows × k / 2` bytes, 8-byte aligned.
    pub data: *mut u8,
    /// Blocked e4m3 scales (padding left as the caller filled it: zeros, like the host's).
    pub scales: *mut u8,
    /// The tensor's largest magnitude as f32 bits (the amax kernel's result), from which the
    /// kernel derives the global scale as the host's `GlobalScale::Auto` does; null: use
    /// `global_scale`.
    pub amax: *const u32,
    /// `u64::MAX − i` for the smallest index `i` of a non-finite input element; 0 when there is
    /// none (the caller zeroes it first).
    pub status: *mut u64,
    /// Rows.
    pub rows: u32,
    /// K (a multiple of 16; `rows · k / 16 < 2^31`).
    pub k: u32,
    /// The global scale when `amax` is null (1 for none).
    pub global_scale: f32,
}

/// Arguments of the amax kernels: the largest magnitude of `blocks · 16` elements.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmaxArgs {
    /// The elements, 16-byte aligned.
    pub values: *const u8,
    /// Running maximum of the magnitudes' f32 bits (the caller zeroes it first).
    pub amax: *mut u32,
    /// 16-element blocks (below 2^31).
    pub blocks: u32,
}

/// Arguments of the test-support kernel that occupies multiprocessors ([`OCCUPY`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OccupyArgs {
    /// Each block spins until this word is non-zero.
    pub release: *const u32,
    /// Each block adds 1 here when it starts.
    pub started: *mut u32,
}

/// NVFP4 → fp16 dequantization.
pub const DEQUANTIZE_F16: Kernel<DequantizeArgs> = Kernel::new("nvfp4_dequantize_f16", 256, None);

/// NVFP4 → bf16 dequantization.
pub const DEQUANTIZE_BF16: Kernel<DequantizeArgs> = Kernel::new("nvfp4_dequantize_bf16", 256, None);

/// fp16 `silu(gate) · up` (the unfused baseline's last step).
pub const SILU_MUL_F16: Kernel<SiluMulArgs> = Kernel::new("nvfp4_silu_mul_f16", 256, None);

/// bf16 `silu(gate) · up`.
pub const SILU_MUL_BF16: Kernel<SiluMulArgs> = Kernel::new("nvfp4_silu_mul_bf16", 256, None);

/// f32 → NVFP4 quantization.
pub const QUANTIZE_F32: Kernel<QuantizeArgs> = Kernel::new("nvfp4_quantize_f32", 256, None);

/// f16 → NVFP4 quantization.
pub const QUANTIZE_F16: Kernel<QuantizeArgs> = Kernel::new("nvfp4_quantize_f16", 256, None);

/// bf16 → NVFP4 quantization.
pub const QUANTIZE_BF16: Kernel<QuantizeArgs> = Kernel::new("nvfp4_quantize_bf16", 256, None);

/// Largest magnitude of f32 values.
pub const AMAX_F32: Kernel<AmaxArgs> = Kernel::new("nvfp4_amax_f32", 256, None);

/// Largest magnitude of f16 values.
pub const AMAX_F16: Kernel<AmaxArgs> = Kernel::new("nvfp4_amax_f16", 256, None);

/// Largest magnitude of bf16 values.
pub const AMAX_BF16: Kernel<AmaxArgs> = Kernel::new("nvfp4_amax_bf16", 256, None);

/// Test support: one block per multiprocessor it is given spins until released (see
/// `crate::testing`), to make SMs unavailable to other kernels.
pub const OCCUPY: Kernel<OccupyArgs> = Kernel::new("nvfp4_test_occupy", 32, None);

use crate::grouped::GroupedPrepareArgs;
use crate::sm90::config::{self as sm90, DecodeArgs, DualGemmArgs, GroupedArgs, PredecodeArgs};

/// The sm_90a dual GEMM, one entry per token tile (`sm90::config::TILES`). `.minnctapersm 1`
/// lets `setmaxnreg` move registers between its warpgroups.
pub const fn sm90_dual_gemm(tile: sm90::Tile) -> Kernel<DualGemmArgs> {
    Kernel::new(tile.entry_name(), tile.threads(), Some(1))
}

/// The sm_90a grouped GEMM (plain) or grouped dual GEMM (`gated`), one entry per token tile.
pub const fn sm90_grouped(tile: sm90::Tile, gated: bool) -> Kernel<GroupedArgs> {
    Kernel::new(tile.grouped_entry_name(gated), tile.threads(), Some(1))
}

/// Token pre-decoding for the sm_90a dual GEMM's large tiles (`sm90::tokens`).
pub const SM90_PREDECODE_TOKENS: Kernel<PredecodeArgs> =
    Kernel::new("nvfp4_predecode_tokens_sm90", 256, None);

/// The sm_90a decode-size dual GEMM (`sm90::decode`) for 1 or 2 token tiles of 8 (M ≤ 8, M ≤
/// 16): `DECODE_WARPS` warps per CTA and [`SM90_DECODE_CTAS_PER_SM`] CTAs per SM, which holds
/// ptxas to 64 registers per thread.
pub const SM90_DECODE: [Kernel<DecodeArgs>; 2] = [
    Kernel::new(
        "nvfp4_dual_gemm_decode_sm90_m8",
        sm90::DECODE_WARPS * 32,
        Some(SM90_DECODE_CTAS_PER_SM),
    ),
    Kernel::new(
        "nvfp4_dual_gemm_decode_sm90_m16",
        sm90::DECODE_WARPS * 32,
        Some(SM90_DECODE_CTAS_PER_SM),
    ),
];

/// CTAs of the decode-size dual GEMM per SM (`.minnctapersm`): 32 warps.
pub const SM90_DECODE_CTAS_PER_SM: u32 = 32 / sm90::DECODE_WARPS;

/// The preparation pass of the sm_90a grouped kernels (`sm90::grouped`).
pub const SM90_GROUPED_PREPARE: Kernel<GroupedPrepareArgs> =
    Kernel::new("nvfp4_grouped_prepare_sm90", 256, None);

/// Entry points of both modules.
pub const COMMON_ENTRY_POINTS: &[EntryPoint] = &[
    DEQUANTIZE_F16.entry,
    DEQUANTIZE_BF16.entry,
    SILU_MUL_F16.entry,
    SILU_MUL_BF16.entry,
    QUANTIZE_F32.entry,
    QUANTIZE_F16.entry,
    QUANTIZE_BF16.entry,
    AMAX_F32.entry,
    AMAX_F16.entry,
    AMAX_BF16.entry,
    OCCUPY.entry,
];

const SM90_TILES: [sm90::Tile; 6] = sm90::TILES;

/// Entry points of the sm_90a module only.
pub const SM90_ENTRY_POINTS: &[EntryPoint] = &[
    sm90_dual_gemm(SM90_TILES[0]).entry,
    sm90_dual_gemm(SM90_TILES[1]).entry,
    sm90_dual_gemm(SM90_TILES[2]).entry,
    sm90_dual_gemm(SM90_TILES[3]).entry,
    sm90_dual_gemm(SM90_TILES[4]).entry,
    sm90_dual_gemm(SM90_TILES[5]).entry,
    sm90_grouped(SM90_TILES[0], true).entry,
    sm90_grouped(SM90_TILES[1], true).entry,
    sm90_grouped(SM90_TILES[2], true).entry,
    sm90_grouped(SM90_TILES[3], true).entry,
    sm90_grouped(SM90_TILES[4], true).entry,
    sm90_grouped(SM90_TILES[0], false).entry,
    sm90_grouped(SM90_TILES[1], false).entry,
    sm90_grouped(SM90_TILES[2], false).entry,
    sm90_grouped(SM90_TILES[3], false).entry,
    sm90_grouped(SM90_TILES[4], false).entry,
    SM90_PREDECODE_TOKENS.entry,
    SM90_DECODE[0].entry,
    SM90_DECODE[1].entry,
    SM90_GROUPED_PREPARE.entry,
];

/// The sm_100f dual GEMM (tcgen05), one entry per tile (`sm100::config::TILES`).
/// `.minnctapersm 1`: one CTA per SM owns all TMEM columns.
pub const fn sm100_dual_gemm(tile: crate::sm100::config::Tile) -> Kernel<crate::sm100::config::DualGemmArgs> {
    Kernel::new(tile.entry_name(), crate::sm100::config::THREADS, Some(1))
}

/// The sm_100f grouped GEMM (plain) or grouped dual GEMM (`gated`), one entry per tile.
pub const fn sm100_grouped(
    tile: crate::sm100::config::Tile,
    gated: bool,
) -> Kernel<crate::sm100::config::GroupedArgs> {
    Kernel::new(
        tile.grouped_entry_name(gated),
        crate::sm100::config::THREADS,
        Some(1),
    )
}

/// The preparation pass of the sm_100f grouped kernels (one warp; `sm100::grouped`).
pub const SM100_GROUPED_PREPARE: Kernel<GroupedPrepareArgs> =
    Kernel::new("nvfp4_grouped_prepare_sm100", 32, None);

const SM100_TILES: [crate::sm100::config::Tile; 2] = crate::sm100::config::TILES;

/// Entry points of the sm_100f module only.
pub const SM100_ENTRY_POINTS: &[EntryPoint] = &[
    sm100_dual_gemm(SM100_TILES[0]).entry,
    sm100_dual_gemm(SM100_TILES[1]).entry,
    sm100_grouped(SM100_TILES[0], true).entry,
    sm100_grouped(SM100_TILES[1], true).entry,
    sm100_grouped(SM100_TILES[0], false).entry,
    sm100_grouped(SM100_TILES[1], false).entry,
    SM100_GROUPED_PREPARE.entry,
];

/// The entry points of the module for `arch` (`"sm_90a"` or `"sm_100f"`).
pub fn entry_points(arch: &str) -> impl Iterator<Item = &'static EntryPoint> {
    let specific = match arch {
        "sm_90a" => SM90_ENTRY_POINTS,
        "sm_100f" => SM100_ENTRY_POINTS,
        _ => &[],
    };
    COMMON_ENTRY_POINTS.iter().chain(specific)
}
