//! The registry of the kernels both modules share, and the entry list of each module.
//!
//! As in `sm90::registry` and `sm100::registry`: each list is a macro that hands its entries to
//! a callback macro; the kernel files pass the macros that define their entry functions, and
//! this module builds the [`Kernel`] constants the host loads. [`entry_points`] is the one list
//! of a module's entries that `build.rs` (launch bounds) and the PTX tests read.
//!
//! Pure: compiled for the host too.

use crate::common::{
    AmaxArgs, CombineArgs, DequantizeArgs, GatherGroupedArgs, OccupyArgs, QuantizeArgs, ROUTE_THREADS,
    RouteArgs, SiluMulArgs,
};
use crate::launch::{EntryPoint, Kernel};
use crate::{sm90, sm100};

/// NVFP4 → fp16 / bf16 dequantization (`crate::dequant`): `element entry;`.
macro_rules! dequantize_entries {
    ($callback:ident) => {
        $callback! {
            F16 nvfp4_dequantize_f16;
            Bf16 nvfp4_dequantize_bf16;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use dequantize_entries;

/// `silu(gate) · up` on fp16 / bf16 vectors (`crate::elementwise`): `element entry;`.
macro_rules! silu_mul_entries {
    ($callback:ident) => {
        $callback! {
            F16 nvfp4_silu_mul_f16;
            Bf16 nvfp4_silu_mul_bf16;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use silu_mul_entries;

/// The Mixture-of-Experts combine of fp16 expert rows into fp16 / bf16 tokens
/// (`crate::elementwise`): `output_element entry;`.
macro_rules! combine_entries {
    ($callback:ident) => {
        $callback! {
            F16 nvfp4_moe_combine_f16;
            Bf16 nvfp4_moe_combine_bf16;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use combine_entries;

/// Quantization and amax of f32 / f16 / bf16 values (`crate::quantize`):
/// `element quantize_entry amax_entry;`.
macro_rules! quantize_entries {
    ($callback:ident) => {
        $callback! {
            F32 nvfp4_quantize_f32 nvfp4_amax_f32;
            F16 nvfp4_quantize_f16 nvfp4_amax_f16;
            Bf16 nvfp4_quantize_bf16 nvfp4_amax_bf16;
        }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use quantize_entries;

/// The grouped-layout gather of an NVFP4 matrix's rows (`crate::gather`).
macro_rules! gather_grouped_entry {
    ($callback:ident) => {
        $callback! { nvfp4_gather_grouped }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use gather_grouped_entry;

/// The Mixture-of-Experts routing (`crate::route`).
macro_rules! route_entry {
    ($callback:ident) => {
        $callback! { nvfp4_moe_route }
    };
}
/// The counting pass of a routing launch of more than one CTA (`crate::route`).
macro_rules! route_count_entry {
    ($callback:ident) => {
        $callback! { nvfp4_moe_route_count }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use route_count_entry;
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use route_entry;

/// The test-support kernel that occupies multiprocessors (`crate::testing`).
macro_rules! occupy_entry {
    ($callback:ident) => {
        $callback! { nvfp4_test_occupy }
    };
}
#[allow(unused_imports)] // the kernel files (device only) call it
pub(crate) use occupy_entry;

/// Threads per block of the grid-stride kernels below.
const BLOCK_THREADS: u32 = 256;

macro_rules! pair_table {
    ($args:ty, $doc:literal, $const:ident; $($element:ident $name:ident;)*) => {
        #[doc = $doc]
        pub const $const: [Kernel<$args>; [$(stringify!($name)),*].len()] =
            [$(Kernel::new(stringify!($name), BLOCK_THREADS, None)),*];
    };
}

macro_rules! dequantize_table {
    ($($t:tt)*) => {
        pair_table!(DequantizeArgs, "Dequantization to fp16, bf16 (in that order).", DEQUANTIZE; $($t)*);
    };
}
dequantize_entries!(dequantize_table);

macro_rules! silu_mul_table {
    ($($t:tt)*) => {
        pair_table!(SiluMulArgs, "`silu(gate) · up` on fp16, bf16 (in that order).", SILU_MUL; $($t)*);
    };
}
silu_mul_entries!(silu_mul_table);

macro_rules! combine_table {
    ($($t:tt)*) => {
        pair_table!(CombineArgs, "The Mixture-of-Experts combine into fp16, bf16 (in that order).", COMBINE; $($t)*);
    };
}
combine_entries!(combine_table);

macro_rules! quantize_table {
    ($($element:ident $quantize:ident $amax:ident;)*) => {
        /// Quantization of f32, f16, bf16 values (in that order).
        pub const QUANTIZE: [Kernel<QuantizeArgs>; [$(stringify!($quantize)),*].len()] =
            [$(Kernel::new(stringify!($quantize), BLOCK_THREADS, None)),*];
        /// The largest magnitude of f32, f16, bf16 values (in that order).
        pub const AMAX: [Kernel<AmaxArgs>; [$(stringify!($amax)),*].len()] =
            [$(Kernel::new(stringify!($amax), BLOCK_THREADS, None)),*];
    };
}
quantize_entries!(quantize_table);

macro_rules! single_kernel {
    ($name:ident) => {
        stringify!($name)
    };
}

/// The grouped-layout gather (`crate::gather`).
pub const GATHER_GROUPED: Kernel<GatherGroupedArgs> =
    Kernel::new(gather_grouped_entry!(single_kernel), BLOCK_THREADS, None);

/// The Mixture-of-Experts routing (`crate::route`): one CTA per
/// [`ROUTE_SLOTS_PER_CTA`](crate::common::ROUTE_SLOTS_PER_CTA) slots.
pub const ROUTE: Kernel<RouteArgs> = Kernel::new(route_entry!(single_kernel), ROUTE_THREADS, None);
/// The routing's counting pass (`crate::route`), before a routing launch of more than one CTA.
pub const ROUTE_COUNT: Kernel<RouteArgs> =
    Kernel::new(route_count_entry!(single_kernel), ROUTE_THREADS, None);

/// Test support: one block per multiprocessor it is given spins until released, to make SMs
/// unavailable to other kernels.
pub const OCCUPY: Kernel<OccupyArgs> = Kernel::new(occupy_entry!(single_kernel), 32, None);

const COMMON_COUNT: usize =
    DEQUANTIZE.len() + SILU_MUL.len() + COMBINE.len() + QUANTIZE.len() + AMAX.len() + 4;

const fn common_entry_points() -> [EntryPoint; COMMON_COUNT] {
    let mut out = [OCCUPY.entry; COMMON_COUNT];
    let mut n = 0;
    let mut i = 0;
    while i < DEQUANTIZE.len() {
        out[n] = DEQUANTIZE[i].entry;
        n += 1;
        i += 1;
    }
    i = 0;
    while i < SILU_MUL.len() {
        out[n] = SILU_MUL[i].entry;
        n += 1;
        i += 1;
    }
    i = 0;
    while i < COMBINE.len() {
        out[n] = COMBINE[i].entry;
        n += 1;
        i += 1;
    }
    i = 0;
    while i < QUANTIZE.len() {
        out[n] = QUANTIZE[i].entry;
        out[n + 1] = AMAX[i].entry;
        n += 2;
        i += 1;
    }
    out[n] = GATHER_GROUPED.entry;
    out[n + 1] = ROUTE.entry;
    out[n + 2] = ROUTE_COUNT.entry;
    n += 3;
    assert!(n + 1 == COMMON_COUNT, "entry count");
    out
}

/// Entry points of both modules.
pub const COMMON_ENTRY_POINTS: [EntryPoint; COMMON_COUNT] = common_entry_points();

/// The PTX targets the library builds a module for, and their registries.
pub const ARCHES: [&str; 2] = ["sm_90a", "sm_100f"];

/// Every entry point of the module for `arch` (one of [`ARCHES`]; none for any other name).
pub fn entry_points(arch: &str) -> impl Iterator<Item = &'static EntryPoint> {
    let specific: &'static [EntryPoint] = match arch {
        "sm_90a" => &sm90::registry::ENTRY_POINTS,
        "sm_100f" => &sm100::registry::ENTRY_POINTS,
        _ => &[],
    };
    COMMON_ENTRY_POINTS.iter().chain(specific)
}
