//! Device code of the NVFP4 GEMMs (dual GEMM, GEMM, their grouped forms, quantization), written
//! in `no_std` Rust for rustc's nvptx backend.
//!
//! The crate is compiled in two ways:
//! * for the host (any target, stable Rust): the pure modules (layouts, codecs, descriptor
//!   encoders, schedules, tile configurations, argument structs and the kernel registries),
//!   which the host library and its tests call, so that every fact has one definition;
//! * for `nvptx64-nvidia-cuda` by the host crate's `build.rs`, once per GPU architecture, with
//!   `--cfg nvfp4_arch="sm_90a"` or `"sm_100f"`: the pure modules plus `ptx` (one wrapper per PTX
//!   instruction) and the kernels.
//!
//! Layers, each calling only the ones before it: [`launch`] (the launch contract: entry points,
//! typed kernels, tensor maps) → the pure shared logic ([`layout`], [`codec`], [`fp4`], [`desc`],
//! [`schedule`], [`ring`], [`grouped`]) → per-architecture configurations ([`sm90::config`],
//! [`sm100::config`], and [`common`] for the kernels both modules share) → the registries
//! ([`sm90::registry`], [`sm100::registry`], [`registry`]), which declare every kernel entry
//! once and from which the entry lists, launch bounds and host loaders are derived → the
//! kernels (device only).
//!
//! Kernels, by module (names in the registries):
//! * `dequant`, `elementwise`, `quantize`, `gather`, `route`, `testing` (both modules): NVFP4
//!   → fp16/bf16, `silu(gate) · up` and the Mixture-of-Experts combine, the GPU quantizer and
//!   amax, the grouped ops' token layout from an NVFP4 matrix, the Mixture-of-Experts routing,
//!   and a test-support kernel.
//! * `sm90` (sm_90a only): the dense dual GEMM per token tile, its token pre-decoder, the
//!   decode-size dual GEMM, and the grouped GEMM / grouped dual GEMM per tile with their
//!   preparation pass.
//! * `sm100` (sm_100f only, never run: no Blackwell GPU here): the dense dual GEMM and the
//!   grouped kernels per tile (tcgen05, block-scaled fp4) and their preparation pass.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)
)]

pub mod codec;
pub mod common;
pub mod desc;
pub mod fp4;
pub mod grouped;
pub mod launch;
pub mod layout;
pub mod registry;
pub mod ring;
pub mod schedule;
pub mod sm100;
pub mod sm90;

#[cfg(target_arch = "nvptx64")]
pub mod ptx;

#[cfg(target_arch = "nvptx64")]
pub mod dequant;

#[cfg(target_arch = "nvptx64")]
pub mod elementwise;

#[cfg(target_arch = "nvptx64")]
pub mod epilogue;

#[cfg(target_arch = "nvptx64")]
pub mod gather;

#[cfg(target_arch = "nvptx64")]
pub mod route;

#[cfg(target_arch = "nvptx64")]
pub(crate) mod prepare;

#[cfg(target_arch = "nvptx64")]
pub mod quantize;

#[cfg(target_arch = "nvptx64")]
pub mod testing;

/// Design documents of the kernels, here because the kernel modules compile for the GPU only.
#[cfg(not(target_arch = "nvptx64"))]
pub mod design {
    #[doc = include_str!("../../docs/sm90-kernels.md")]
    pub mod sm90 {}

    #[doc = include_str!("../../docs/sm100-kernels.md")]
    pub mod sm100 {}
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; nothing after it runs.
    unsafe { core::arch::nvptx::trap() }
}
