//! The sm_90a kernel registry: every entry point of the Hopper module, declared once.
//!
//! Each list is a macro that hands its entries to a callback macro. The kernel files pass the
//! macro that defines their entry functions (`sm90::dual_gemm`, `sm90::grouped`,
//! `sm90::decode`, `sm90::tokens`); this module passes the macros that build the const tables
//! below, from which `build.rs` (launch bounds), the PTX tests, the host loaders and the host's
//! tile choice read. So an entry's name is written once, here, and a tile is one line.
//!
//! Pure: compiled for the host too.

use crate::grouped::{GroupedPrepareArgs, SeparatePrepareArgs};
use crate::launch::{EntryPoint, Kernel};
use crate::sm90::config::{
    DECODE_WARPS, DECODE_WHOLE_K_CTAS_PER_SM, DECODE_WHOLE_K_MAX_WARPS, DECODE_WHOLE_K_SMALL_CTAS_PER_SM,
    DECODE_WHOLE_K_SMALL_WARPS, DECODE_WIDE_WARPS_PER_MATRIX, DecodeArgs, DualGemmArgs, FITTED_MAX_TOKENS,
    FITTED_WIDTHS, GroupedArgs, GroupedDecodeArgs, PredecodeArgs, Tile, check_tile,
};

/// The tiled kernels, smallest tile first, one line per token-tile width:
/// `tokens wgmma_shape dense_dual_entry dense_dual_nvfp4_entry dense_plain_entry
/// dense_dual_bf16_entry dense_plain_bf16_entry (grouped_wgmma_shape grouped_dual_entry
/// grouped_dual_nvfp4_entry grouped_plain_entry);`, the parentheses empty where the tile has no
/// grouped kernels; `grouped_wgmma_shape` is the grouped kernels' widest wgmma.
///
/// The 256-token tile's grouped kernels fit their tiles to each group (`Tile::fits_groups`):
/// a group's rows in the fewest tiles of at most [`FITTED_MAX_TOKENS`] (176), each multiplied
/// at the narrowest fitted width that holds it (`config::FITTED_WIDTHS`), so that a group of
/// 129–176 tokens takes one tile, not two of 128.
macro_rules! tiled_entries {
    ($callback:ident) => {
        $callback! {
            8 m64n8k16 nvfp4_dual_gemm_sm90_t8 nvfp4_dual_gemm_nvfp4_sm90_t8 nvfp4_gemm_sm90_t8
                nvfp4_dual_gemm_bf16_sm90_t8 nvfp4_gemm_bf16_sm90_t8
                (m64n8k16 nvfp4_grouped_dual_gemm_sm90_t8 nvfp4_grouped_dual_gemm_nvfp4_sm90_t8
                    nvfp4_grouped_gemm_sm90_t8);
            16 m64n16k16 nvfp4_dual_gemm_sm90_t16 nvfp4_dual_gemm_nvfp4_sm90_t16 nvfp4_gemm_sm90_t16
                nvfp4_dual_gemm_bf16_sm90_t16 nvfp4_gemm_bf16_sm90_t16
                (m64n16k16 nvfp4_grouped_dual_gemm_sm90_t16 nvfp4_grouped_dual_gemm_nvfp4_sm90_t16
                    nvfp4_grouped_gemm_sm90_t16);
            32 m64n32k16 nvfp4_dual_gemm_sm90_t32 nvfp4_dual_gemm_nvfp4_sm90_t32 nvfp4_gemm_sm90_t32
                nvfp4_dual_gemm_bf16_sm90_t32 nvfp4_gemm_bf16_sm90_t32
                (m64n32k16 nvfp4_grouped_dual_gemm_sm90_t32 nvfp4_grouped_dual_gemm_nvfp4_sm90_t32
                    nvfp4_grouped_gemm_sm90_t32);
            64 m64n64k16 nvfp4_dual_gemm_sm90_t64 nvfp4_dual_gemm_nvfp4_sm90_t64 nvfp4_gemm_sm90_t64
                nvfp4_dual_gemm_bf16_sm90_t64 nvfp4_gemm_bf16_sm90_t64
                (m64n64k16 nvfp4_grouped_dual_gemm_sm90_t64 nvfp4_grouped_dual_gemm_nvfp4_sm90_t64
                    nvfp4_grouped_gemm_sm90_t64);
            128 m64n128k16 nvfp4_dual_gemm_sm90_t128 nvfp4_dual_gemm_nvfp4_sm90_t128 nvfp4_gemm_sm90_t128
                nvfp4_dual_gemm_bf16_sm90_t128 nvfp4_gemm_bf16_sm90_t128
                (m64n128k16 nvfp4_grouped_dual_gemm_sm90_t128 nvfp4_grouped_dual_gemm_nvfp4_sm90_t128
                    nvfp4_grouped_gemm_sm90_t128);
            256 m64n256k16 nvfp4_dual_gemm_sm90_t256 nvfp4_dual_gemm_nvfp4_sm90_t256 nvfp4_gemm_sm90_t256
                nvfp4_dual_gemm_bf16_sm90_t256 nvfp4_gemm_bf16_sm90_t256
                (m64n176k16 nvfp4_grouped_dual_gemm_sm90_fitted nvfp4_grouped_dual_gemm_nvfp4_sm90_fitted
                    nvfp4_grouped_gemm_sm90_fitted);
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use tiled_entries;

/// The decode-size kernels (`sm90::decode`), one line per count of 8-token tiles:
/// `token_tiles dual_entry dual_nvfp4_entry plain_entry dual_bf16_entry plain_bf16_entry;`
/// (M ≤ 8, M ≤ 16).
macro_rules! decode_entries {
    ($callback:ident) => {
        $callback! {
            1 nvfp4_dual_gemm_decode_sm90_m8 nvfp4_dual_gemm_nvfp4_decode_sm90_m8 nvfp4_gemm_decode_sm90_m8
                nvfp4_dual_gemm_bf16_decode_sm90_m8 nvfp4_gemm_bf16_decode_sm90_m8;
            2 nvfp4_dual_gemm_decode_sm90_m16 nvfp4_dual_gemm_nvfp4_decode_sm90_m16 nvfp4_gemm_decode_sm90_m16
                nvfp4_dual_gemm_bf16_decode_sm90_m16 nvfp4_gemm_bf16_decode_sm90_m16;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use decode_entries;

/// The decode-size dual GEMM's paired entries (`sm90::decode`: two steps an iteration), one
/// token tile (M ≤ 8), for splits of at least `config::DECODE_PAIRED_MIN_STEPS`:
/// `dual_entry dual_nvfp4_entry dual_bf16_entry`.
macro_rules! decode_paired_entries {
    ($callback:ident) => {
        $callback! {
            nvfp4_dual_gemm_paired_decode_sm90_m8 nvfp4_dual_gemm_nvfp4_paired_decode_sm90_m8
                nvfp4_dual_gemm_bf16_paired_decode_sm90_m8
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use decode_paired_entries;

/// The decode-size kernels' wide entries (`sm90::decode`): two token tiles (M = 9…16),
/// `config::DECODE_WIDE_WARPS_PER_MATRIX` warps on each matrix, [`DECODE_WIDE_CTAS_PER_SM`] CTAs
/// an SM: `dual_entry dual_nvfp4_entry plain_entry dual_bf16_entry plain_bf16_entry`.
macro_rules! decode_wide_entries {
    ($callback:ident) => {
        $callback! {
            nvfp4_dual_gemm_wide_decode_sm90_m16 nvfp4_dual_gemm_nvfp4_wide_decode_sm90_m16
                nvfp4_gemm_wide_decode_sm90_m16 nvfp4_dual_gemm_bf16_wide_decode_sm90_m16
                nvfp4_gemm_bf16_wide_decode_sm90_m16
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use decode_wide_entries;

/// The whole-K decode-size kernels (`sm90::decode`), one token tile (M ≤ 8): `dual_entry
/// dual_nvfp4_entry plain_entry dual_bf16_entry plain_bf16_entry`.
macro_rules! decode_whole_k_entries {
    ($callback:ident) => {
        $callback! {
            nvfp4_dual_gemm_whole_k_decode_sm90_m8 nvfp4_dual_gemm_nvfp4_whole_k_decode_sm90_m8
                nvfp4_gemm_whole_k_decode_sm90_m8 nvfp4_dual_gemm_bf16_whole_k_decode_sm90_m8
                nvfp4_gemm_bf16_whole_k_decode_sm90_m8
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use decode_whole_k_entries;

/// The whole-K decode-size dual GEMM's small-CTA entries (`sm90::decode`, one token tile):
/// `config::DECODE_WHOLE_K_SMALL_WARPS` warps, `config::DECODE_WHOLE_K_SMALL_CTAS_PER_SM` CTAs
/// an SM: `dual_entry dual_nvfp4_entry dual_bf16_entry`.
macro_rules! decode_whole_k_small_entries {
    ($callback:ident) => {
        $callback! {
            nvfp4_dual_gemm_whole_k4_decode_sm90_m8 nvfp4_dual_gemm_nvfp4_whole_k4_decode_sm90_m8
                nvfp4_dual_gemm_bf16_whole_k4_decode_sm90_m8
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use decode_whole_k_small_entries;

/// The grouped decode-size kernels (`sm90::decode`): `dual_entry dual_nvfp4_entry plain_entry`
/// (any count of tokens per group, 16 at a time).
macro_rules! grouped_decode_entries {
    ($callback:ident) => {
        $callback! {
            nvfp4_grouped_dual_gemm_decode_sm90 nvfp4_grouped_dual_gemm_nvfp4_decode_sm90
                nvfp4_grouped_gemm_decode_sm90
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use grouped_decode_entries;

/// The token pre-decoder of the large tiles (`sm90::tokens`).
macro_rules! predecode_tokens_entry {
    ($callback:ident) => {
        $callback! { nvfp4_predecode_tokens_sm90 }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use predecode_tokens_entry;

/// The preparation pass of the grouped kernels (`sm90::grouped`).
macro_rules! grouped_prepare_entry {
    ($callback:ident) => {
        $callback! { nvfp4_grouped_prepare_sm90 }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use grouped_prepare_entry;

/// The preparation pass of a separate-convention launch whose table travels in its parameters
/// (`sm90::grouped`).
macro_rules! grouped_prepare_separate_entry {
    ($callback:ident) => {
        $callback! { nvfp4_grouped_prepare_separate_sm90 }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use grouped_prepare_separate_entry;

/// What a tiled (dense or grouped) kernel's epilogue finishes and writes: each is its own
/// entry point, so that no kernel carries the registers or branches of an output it does not
/// write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileEpilogue {
    /// The dual GEMM, fp16 out.
    Gated,
    /// The dual GEMM, NVFP4 out (`DualGemmArgs::out_scales`, `DecodeArgs::out_scales`).
    GatedNvfp4,
    /// The plain GEMM, fp16 out.
    Plain,
    /// The dual GEMM, bf16 out (dense kernels only).
    GatedBf16,
    /// The plain GEMM, bf16 out (dense kernels only).
    PlainBf16,
}

impl TileEpilogue {
    /// The fp16-output epilogue of the dual GEMM (`gated`) or the plain GEMM.
    pub const fn f16(gated: bool) -> Self {
        Self::half(gated, false)
    }

    /// The 16-bit-output epilogue of the dual GEMM (`gated`) or the plain GEMM, bf16 if `bf16`.
    pub const fn half(gated: bool, bf16: bool) -> Self {
        match (gated, bf16) {
            (true, false) => Self::Gated,
            (false, false) => Self::Plain,
            (true, true) => Self::GatedBf16,
            (false, true) => Self::PlainBf16,
        }
    }

    /// Whether it finishes the dual GEMM.
    pub const fn gated(self) -> bool {
        !matches!(self, Self::Plain | Self::PlainBf16)
    }

    /// Whether it writes bf16.
    pub const fn bf16(self) -> bool {
        matches!(self, Self::GatedBf16 | Self::PlainBf16)
    }

    /// Whether it writes NVFP4.
    pub const fn nvfp4(self) -> bool {
        matches!(self, Self::GatedNvfp4)
    }

    /// Its name in messages.
    pub const fn operation(self) -> &'static str {
        match self {
            Self::Gated => "dual GEMM",
            Self::GatedNvfp4 => "dual GEMM with NVFP4 output",
            Self::Plain => "GEMM",
            Self::GatedBf16 => "dual GEMM with bf16 output",
            Self::PlainBf16 => "GEMM with bf16 output",
        }
    }
}

/// One token-tile width and its kernels.
#[derive(Clone, Copy, Debug)]
pub struct TiledEntries {
    /// The tile.
    pub tile: Tile,
    /// The dense dual GEMM.
    pub dense: Kernel<DualGemmArgs>,
    /// The dense dual GEMM writing NVFP4.
    pub dense_nvfp4: Kernel<DualGemmArgs>,
    /// The dense (plain) GEMM: the same kernel with a one-product epilogue.
    pub dense_plain: Kernel<DualGemmArgs>,
    /// The dense dual GEMM writing bf16.
    pub dense_bf16: Kernel<DualGemmArgs>,
    /// The dense (plain) GEMM writing bf16.
    pub dense_plain_bf16: Kernel<DualGemmArgs>,
    /// The grouped dual GEMM and the grouped (plain) GEMM, if the tile has them.
    pub grouped: Option<GroupedEntries<GroupedArgs>>,
}

/// The three grouped kernels of a tile, or of the grouped decode-size kernels (`A`: their
/// arguments).
#[derive(Debug)]
pub struct GroupedEntries<A> {
    /// The grouped dual GEMM.
    pub gated: Kernel<A>,
    /// The grouped dual GEMM writing NVFP4 (the descriptors' `out_scales`).
    pub gated_nvfp4: Kernel<A>,
    /// The grouped (plain) GEMM.
    pub plain: Kernel<A>,
}

impl<A> Clone for GroupedEntries<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for GroupedEntries<A> {}

impl<A> GroupedEntries<A> {
    /// The kernel of `epilogue`, if it has one (no grouped kernel writes bf16).
    pub const fn kernel(&self, epilogue: TileEpilogue) -> Option<Kernel<A>> {
        match epilogue {
            TileEpilogue::Gated => Some(self.gated),
            TileEpilogue::GatedNvfp4 => Some(self.gated_nvfp4),
            TileEpilogue::Plain => Some(self.plain),
            TileEpilogue::GatedBf16 | TileEpilogue::PlainBf16 => None,
        }
    }

    /// Every kernel of the entry.
    pub const fn kernels(&self) -> [Kernel<A>; 3] {
        [self.gated, self.gated_nvfp4, self.plain]
    }
}

impl TiledEntries {
    /// The kernels of `tile` under these names. Every tiled entry runs `tile.threads()` threads
    /// with `.minnctapersm 1`, which lets `setmaxnreg` move registers between its warpgroups.
    const fn new(tile: Tile, dense: [&'static str; 5], grouped: Option<[&'static str; 3]>) -> Self {
        Self {
            tile,
            dense: Kernel::new(dense[0], tile.threads(), Some(1)),
            dense_nvfp4: Kernel::new(dense[1], tile.threads(), Some(1)),
            dense_plain: Kernel::new(dense[2], tile.threads(), Some(1)),
            dense_bf16: Kernel::new(dense[3], tile.threads(), Some(1)),
            dense_plain_bf16: Kernel::new(dense[4], tile.threads(), Some(1)),
            grouped: match grouped {
                Some([gated, gated_nvfp4, plain]) => Some(GroupedEntries {
                    gated: Kernel::new(gated, tile.threads(), Some(1)),
                    gated_nvfp4: Kernel::new(gated_nvfp4, tile.threads(), Some(1)),
                    plain: Kernel::new(plain, tile.threads(), Some(1)),
                }),
                None => None,
            },
        }
    }

    /// The dense kernel of `epilogue`.
    pub const fn dense(&self, epilogue: TileEpilogue) -> Kernel<DualGemmArgs> {
        match epilogue {
            TileEpilogue::Gated => self.dense,
            TileEpilogue::GatedNvfp4 => self.dense_nvfp4,
            TileEpilogue::Plain => self.dense_plain,
            TileEpilogue::GatedBf16 => self.dense_bf16,
            TileEpilogue::PlainBf16 => self.dense_plain_bf16,
        }
    }

    /// Every dense kernel of the tile.
    pub const fn dense_kernels(&self) -> [Kernel<DualGemmArgs>; 5] {
        [
            self.dense,
            self.dense_nvfp4,
            self.dense_plain,
            self.dense_bf16,
            self.dense_plain_bf16,
        ]
    }

    /// The grouped kernel of `epilogue`, if the tile has grouped kernels of that epilogue.
    pub const fn grouped(&self, epilogue: TileEpilogue) -> Option<Kernel<GroupedArgs>> {
        match self.grouped {
            Some(g) => g.kernel(epilogue),
            None => None,
        }
    }
}

macro_rules! tiled_table {
    ($($tokens:literal $mma:ident $dense:ident $dense_nvfp4:ident $dense_plain:ident
        $dense_bf16:ident $dense_plain_bf16:ident
        ($($grouped_mma:ident $gated:ident $gated_nvfp4:ident $plain:ident)?);)*) => {
        /// Every tiled entry, smallest tile first (`tiled_entries!`).
        pub const TILED: [TiledEntries; [$($tokens),*].len()] = [$(
            TiledEntries::new(
                Tile { tokens: $tokens },
                [
                    stringify!($dense),
                    stringify!($dense_nvfp4),
                    stringify!($dense_plain),
                    stringify!($dense_bf16),
                    stringify!($dense_plain_bf16),
                ],
                grouped_names!($($gated $gated_nvfp4 $plain)?),
            ),
        )*];
    };
}

macro_rules! grouped_names {
    () => {
        None
    };
    ($gated:ident $gated_nvfp4:ident $plain:ident) => {
        Some([stringify!($gated), stringify!($gated_nvfp4), stringify!($plain)])
    };
}

tiled_entries!(tiled_table);

/// The decode-size kernels for one count of token tiles.
#[derive(Clone, Copy, Debug)]
pub struct DecodeEntry {
    /// The 8-token tiles they compute (`config::decode_token_tiles(m)`).
    pub token_tiles: u32,
    /// The dual GEMM: `DECODE_WARPS` warps per CTA and [`DECODE_CTAS_PER_SM`] CTAs per SM
    /// ([`DECODE_WIDE`]: `2 · DECODE_WIDE_WARPS_PER_MATRIX` warps, [`DECODE_WIDE_CTAS_PER_SM`]),
    /// which holds ptxas to 64 registers per thread.
    pub kernel: Kernel<DecodeArgs>,
    /// The dual GEMM writing NVFP4, launched as the dual GEMM (its staging reuses token rows:
    /// `config::decode_shared_bytes`).
    pub nvfp4: Kernel<DecodeArgs>,
    /// The plain GEMM, launched as the dual GEMM.
    pub plain: Kernel<DecodeArgs>,
    /// The dual GEMM writing bf16.
    pub bf16: Kernel<DecodeArgs>,
    /// The plain GEMM writing bf16.
    pub plain_bf16: Kernel<DecodeArgs>,
}

impl DecodeEntry {
    /// The kernel of `epilogue`.
    pub const fn kernel(&self, epilogue: TileEpilogue) -> Kernel<DecodeArgs> {
        match epilogue {
            TileEpilogue::Gated => self.kernel,
            TileEpilogue::GatedNvfp4 => self.nvfp4,
            TileEpilogue::Plain => self.plain,
            TileEpilogue::GatedBf16 => self.bf16,
            TileEpilogue::PlainBf16 => self.plain_bf16,
        }
    }

    /// Every kernel of the entry.
    pub const fn kernels(&self) -> [Kernel<DecodeArgs>; 5] {
        [self.kernel, self.nvfp4, self.plain, self.bf16, self.plain_bf16]
    }
}

/// A decode-size entry (dense or grouped): [`DECODE_WARPS`] warps, `ctas_per_sm` CTAs per SM
/// (`.minnctapersm`, which sets its register budget).
const fn decode_size_kernel<A>(name: &'static str, ctas_per_sm: u32) -> Kernel<A> {
    Kernel::new(name, DECODE_WARPS * 32, Some(ctas_per_sm))
}

macro_rules! decode_table {
    ($($tiles:literal $name:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident;)*) => {
        /// The decode-size kernels, one entry per count of token tiles (`decode_entries!`).
        pub const DECODE: [DecodeEntry; [$($tiles),*].len()] = [$(
            DecodeEntry {
                token_tiles: $tiles,
                kernel: decode_size_kernel(stringify!($name), DECODE_CTAS_PER_SM),
                nvfp4: decode_size_kernel(stringify!($nvfp4), DECODE_CTAS_PER_SM),
                plain: decode_size_kernel(stringify!($plain), DECODE_CTAS_PER_SM),
                bf16: decode_size_kernel(stringify!($bf16), DECODE_CTAS_PER_SM),
                plain_bf16: decode_size_kernel(stringify!($plain_bf16), DECODE_CTAS_PER_SM),
            },
        )*];
    };
}
decode_entries!(decode_table);

macro_rules! decode_paired_table {
    ($gated:ident $nvfp4:ident $bf16:ident) => {
        /// The decode-size dual GEMM's paired entries for one token tile (`decode_paired_entries!`):
        /// fp16, NVFP4 and bf16 output, launched as the other decode-size entries.
        pub const DECODE_PAIRED: [Kernel<DecodeArgs>; 3] = [
            decode_size_kernel(stringify!($gated), DECODE_CTAS_PER_SM),
            decode_size_kernel(stringify!($nvfp4), DECODE_CTAS_PER_SM),
            decode_size_kernel(stringify!($bf16), DECODE_CTAS_PER_SM),
        ];
    };
}
decode_paired_entries!(decode_paired_table);

macro_rules! decode_wide_table {
    ($name:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident) => {
        /// The decode-size kernels' wide entries (`decode_wide_entries!`), two token tiles:
        /// `2 · DECODE_WIDE_WARPS_PER_MATRIX` warps, [`DECODE_WIDE_CTAS_PER_SM`] CTAs per SM.
        pub const DECODE_WIDE: DecodeEntry = DecodeEntry {
            token_tiles: 2,
            kernel: wide_kernel(stringify!($name)),
            nvfp4: wide_kernel(stringify!($nvfp4)),
            plain: wide_kernel(stringify!($plain)),
            bf16: wide_kernel(stringify!($bf16)),
            plain_bf16: wide_kernel(stringify!($plain_bf16)),
        };
    };
}
decode_wide_entries!(decode_wide_table);

/// A wide decode-size entry: `2 · DECODE_WIDE_WARPS_PER_MATRIX` warps, [`DECODE_WIDE_CTAS_PER_SM`]
/// CTAs an SM (64 registers a thread, as the standard entries).
const fn wide_kernel(name: &'static str) -> Kernel<DecodeArgs> {
    Kernel::new(
        name,
        2 * DECODE_WIDE_WARPS_PER_MATRIX * 32,
        Some(DECODE_WIDE_CTAS_PER_SM),
    )
}

/// The decode-size kernel of `epilogue` for `token_tiles` tiles of 8 tokens, if the module has
/// one.
pub const fn decode(token_tiles: u32, epilogue: TileEpilogue) -> Option<Kernel<DecodeArgs>> {
    let mut i = 0;
    while i < DECODE.len() {
        if DECODE[i].token_tiles == token_tiles {
            return Some(DECODE[i].kernel(epilogue));
        }
        i += 1;
    }
    None
}

macro_rules! decode_whole_k_table {
    ($gated:ident $nvfp4:ident $plain:ident $bf16:ident $plain_bf16:ident) => {
        /// The whole-K decode-size kernels (`decode_whole_k_entries!`): dual GEMM, dual GEMM
        /// writing NVFP4, plain GEMM, dual and plain GEMM writing bf16. Launched with any
        /// block of up to [`DECODE_WHOLE_K_MAX_WARPS`] warps (the host's choice).
        pub const DECODE_WHOLE_K: [Kernel<DecodeArgs>; 5] = [
            whole_k_kernel(stringify!($gated)),
            whole_k_kernel(stringify!($nvfp4)),
            whole_k_kernel(stringify!($plain)),
            whole_k_kernel(stringify!($bf16)),
            whole_k_kernel(stringify!($plain_bf16)),
        ];
    };
}
decode_whole_k_entries!(decode_whole_k_table);

macro_rules! decode_whole_k_small_table {
    ($gated:ident $nvfp4:ident $bf16:ident) => {
        /// The whole-K dual GEMM's small-CTA entries (`decode_whole_k_small_entries!`): fp16,
        /// NVFP4 and bf16 output, blocks of [`DECODE_WHOLE_K_SMALL_WARPS`] warps.
        pub const DECODE_WHOLE_K_SMALL: [Kernel<DecodeArgs>; 3] = [
            small_whole_k_kernel(stringify!($gated)),
            small_whole_k_kernel(stringify!($nvfp4)),
            small_whole_k_kernel(stringify!($bf16)),
        ];
    };
}
decode_whole_k_small_entries!(decode_whole_k_small_table);

/// A small-CTA whole-K entry: [`DECODE_WHOLE_K_SMALL_CTAS_PER_SM`] to an SM.
const fn small_whole_k_kernel(name: &'static str) -> Kernel<DecodeArgs> {
    Kernel::new(
        name,
        DECODE_WHOLE_K_SMALL_WARPS * 32,
        Some(DECODE_WHOLE_K_SMALL_CTAS_PER_SM),
    )
}

/// A whole-K decode-size entry: blocks of up to [`DECODE_WHOLE_K_MAX_WARPS`] warps, the
/// largest [`DECODE_WHOLE_K_CTAS_PER_SM`] to an SM.
const fn whole_k_kernel(name: &'static str) -> Kernel<DecodeArgs> {
    Kernel::new(
        name,
        DECODE_WHOLE_K_MAX_WARPS * 32,
        Some(DECODE_WHOLE_K_CTAS_PER_SM),
    )
}

macro_rules! grouped_decode_table {
    ($gated:ident $gated_nvfp4:ident $plain:ident) => {
        /// The grouped decode-size kernels (`grouped_decode_entries!`): `DECODE_WARPS` warps,
        /// [`GROUPED_DECODE_CTAS_PER_SM`] CTAs per SM.
        pub const GROUPED_DECODE: GroupedEntries<GroupedDecodeArgs> = GroupedEntries {
            gated: decode_size_kernel(stringify!($gated), GROUPED_DECODE_CTAS_PER_SM),
            gated_nvfp4: decode_size_kernel(stringify!($gated_nvfp4), GROUPED_DECODE_CTAS_PER_SM),
            plain: decode_size_kernel(stringify!($plain), GROUPED_DECODE_CTAS_PER_SM),
        };
    };
}
grouped_decode_entries!(grouped_decode_table);

/// CTAs of the decode-size dual GEMM per SM (`.minnctapersm`): 32 warps.
pub const DECODE_CTAS_PER_SM: u32 = 4;
/// CTAs per SM the wide decode-size entries are compiled for: twice the warps of the standard
/// entries' CTAs at the same 64 registers a thread.
pub const DECODE_WIDE_CTAS_PER_SM: u32 = DECODE_CTAS_PER_SM / 2;

/// CTAs of the grouped decode-size kernels per SM (`.minnctapersm`): 24 warps. Their chunk and
/// window state beside the dense kernel's stream spilled at 64 registers a thread, the dense
/// kernel's 4 CTAs (ptxas: 4–56 bytes, by variant).
pub const GROUPED_DECODE_CTAS_PER_SM: u32 = 3;

macro_rules! single_kernel {
    ($name:ident) => {
        stringify!($name)
    };
}

/// Token pre-decoding for the dual GEMM's large tiles (`sm90::tokens`).
pub const PREDECODE_TOKENS: Kernel<PredecodeArgs> =
    Kernel::new(predecode_tokens_entry!(single_kernel), 256, None);

/// The preparation pass of the grouped kernels (`sm90::grouped`).
pub const GROUPED_PREPARE: Kernel<GroupedPrepareArgs> =
    Kernel::new(grouped_prepare_entry!(single_kernel), 256, None);

/// The same pass with a separate-convention table in its parameters (`sm90::grouped`).
pub const GROUPED_PREPARE_SEPARATE: Kernel<SeparatePrepareArgs> =
    Kernel::new(grouped_prepare_separate_entry!(single_kernel), 256, None);

const fn count_tiles(grouped_only: bool) -> usize {
    let (mut i, mut count) = (0, 0);
    while i < TILED.len() {
        if !grouped_only || TILED[i].grouped.is_some() {
            count += 1;
        }
        i += 1;
    }
    count
}

const fn tiles<const N: usize>(grouped_only: bool) -> [Tile; N] {
    let mut out = [Tile { tokens: 0 }; N];
    let (mut i, mut j) = (0, 0);
    while i < TILED.len() {
        if !grouped_only || TILED[i].grouped.is_some() {
            out[j] = TILED[i].tile;
            j += 1;
        }
        i += 1;
    }
    assert!(j == N, "tile count");
    out
}

/// The tiles of the dense dual GEMM, smallest first.
pub const TILES: [Tile; count_tiles(false)] = tiles(false);

/// The tiles of the grouped kernels, smallest first.
pub const GROUPED_TILES: [Tile; count_tiles(true)] = tiles(true);

/// The widest tile of the dense dual GEMM, which its plan may pick by cost.
pub const WIDEST_TILE: Tile = TILES[TILES.len() - 1];

const _: () = {
    let mut i = 1;
    while i < TILED.len() {
        assert!(
            TILED[i - 1].tile.tokens < TILED[i].tile.tokens,
            "tiles are listed smallest first, each once"
        );
        i += 1;
    }
    assert!(!GROUPED_TILES.is_empty(), "the grouped kernels need a tile");
    let mut t = 0;
    while t < TILES.len() {
        check_tile(TILES[t]);
        t += 1;
    }
};

/// The grouped tile for `groups` groups of about `m` tokens: from
/// [`FITTED_MIN_TOKENS_PER_GROUP`] to [`FITTED_MAX_TOKENS`] the widest grouped tile, which fits
/// its tiles to each group (`Tile::fits_groups`: groups of a plan differ, and a fixed 128-token
/// tile computes two tiles for a group of 129 where a fitted one computes one of 144), and up to
/// [`FITTED_TWO_TILE_MAX_TOKENS`] where the launch has at least [`FITTED_TWO_TILE_MIN_GROUPS`]
/// groups; else the smallest tile that covers `m` in one tile, or the 128-token one. Groups
/// of 257–288 tokens take two fitted tiles of at most 144 tokens instead of three of 128, which
/// pays where the launch runs many waves of tiles (Qwen3-30B-A3B's prefill, 128 groups of
/// 256 ± 16: 5.8 % faster, perf log entry 176), not where fewer, wider tiles leave SMs idle in
/// one wave (two groups of about 256: 1.2–1.6× slower, entries 112 and 176). (The dense plan
/// weighs [`WIDEST_TILE`] by cost: `host/dual_gemm/sm90_plan.rs`.)
pub const fn grouped_tile_for(m: u32, groups: u32) -> Tile {
    let widest = GROUPED_TILES[GROUPED_TILES.len() - 1];
    let max_fitted = if groups >= FITTED_TWO_TILE_MIN_GROUPS {
        FITTED_TWO_TILE_MAX_TOKENS
    } else {
        FITTED_MAX_TOKENS
    };
    if FITTED_MIN_TOKENS_PER_GROUP <= m && m <= max_fitted && widest.fits_groups() {
        widest
    } else {
        covering_tile_for(m)
    }
}

/// The narrowest tile of fixed width (with decoder warpgroups, so with grouped kernels too)
/// that covers `m` tokens, else the widest such tile (128 tokens): the dense plan's first
/// candidate.
pub const fn covering_tile_for(m: u32) -> Tile {
    let mut i = 0;
    let mut widest = GROUPED_TILES[0];
    while i < GROUPED_TILES.len() {
        let tile = GROUPED_TILES[i];
        if !tile.fits_groups() {
            if tile.tokens >= m {
                return tile;
            }
            widest = tile;
        }
        i += 1;
    }
    widest
}

/// Tokens per group from which grouped plans take the fitted tile ([`grouped_tile_for`]).
pub const FITTED_MIN_TOKENS_PER_GROUP: u32 = 65;

/// Tokens per group up to which grouped plans of at least [`FITTED_TWO_TILE_MIN_GROUPS`] groups
/// take the fitted tile ([`grouped_tile_for`]): two tiles of the narrowest fitted width above
/// 128 tokens (144).
pub const FITTED_TWO_TILE_MAX_TOKENS: u32 = {
    assert!(FITTED_WIDTHS[1] == 128);
    2 * FITTED_WIDTHS[2]
};

/// Groups from which grouped plans take the fitted tile for up to
/// [`FITTED_TWO_TILE_MAX_TOKENS`] tokens a group ([`grouped_tile_for`]): an MoE layer's experts
/// (Qwen3-30B-A3B's 128 gained); two groups (GPU MODE's cases) lost. Between them the boundary
/// is not measured: 32 groups of two token tiles are at least 4 waves of tiles for 132 SMs at
/// any layer of 1024 or more outputs.
pub const FITTED_TWO_TILE_MIN_GROUPS: u32 = 32;

/// The registry entry of `tile`, if the module has that tile.
pub const fn tiled(tile: Tile) -> Option<&'static TiledEntries> {
    let mut i = 0;
    while i < TILED.len() {
        if TILED[i].tile.tokens == tile.tokens {
            return Some(&TILED[i]);
        }
        i += 1;
    }
    None
}

/// Kernels per dense tile, per grouped tile and per decode-size entry.
const DENSE_PER_TILE: usize = TILED[0].dense_kernels().len();
const GROUPED_PER_TILE: usize = 3;
const DECODE_PER_ENTRY: usize = DECODE[0].kernels().len();
const GROUPED_DECODE_KERNELS: usize = GROUPED_DECODE.kernels().len();

const fn entry_count() -> usize {
    DENSE_PER_TILE * TILED.len()
        + GROUPED_PER_TILE * GROUPED_TILES.len()
        + DECODE_PER_ENTRY * DECODE.len()
        + DECODE_PER_ENTRY
        + DECODE_PAIRED.len()
        + DECODE_WHOLE_K.len()
        + DECODE_WHOLE_K_SMALL.len()
        + GROUPED_DECODE_KERNELS
        + 3
}

/// Writes the entry points of `kernels` into `out` from `n` on; returns the next free index.
const fn put<A>(out: &mut [EntryPoint], n: usize, kernels: &[Kernel<A>]) -> usize {
    let mut k = 0;
    while k < kernels.len() {
        out[n + k] = kernels[k].entry;
        k += 1;
    }
    n + kernels.len()
}

const fn entry_points() -> [EntryPoint; entry_count()] {
    let mut out = [PREDECODE_TOKENS.entry; entry_count()];
    let mut n = 0;
    let mut i = 0;
    while i < TILED.len() {
        n = put(&mut out, n, &TILED[i].dense_kernels());
        if let Some(g) = TILED[i].grouped {
            let grouped: [Kernel<GroupedArgs>; GROUPED_PER_TILE] = [g.gated, g.gated_nvfp4, g.plain];
            n = put(&mut out, n, &grouped);
        }
        i += 1;
    }
    i = 0;
    while i < DECODE.len() {
        n = put(&mut out, n, &DECODE[i].kernels());
        i += 1;
    }
    n = put(&mut out, n, &DECODE_WIDE.kernels());
    n = put(&mut out, n, &DECODE_PAIRED);
    n = put(&mut out, n, &DECODE_WHOLE_K);
    n = put(&mut out, n, &DECODE_WHOLE_K_SMALL);
    n = put(&mut out, n, &GROUPED_DECODE.kernels());
    out[n] = PREDECODE_TOKENS.entry;
    out[n + 1] = GROUPED_PREPARE.entry;
    out[n + 2] = GROUPED_PREPARE_SEPARATE.entry;
    assert!(n + 3 == out.len(), "entry count");
    out
}

/// Every entry point of the sm_90a module but the common ones (`crate::registry`).
pub const ENTRY_POINTS: [EntryPoint; entry_count()] = entry_points();
