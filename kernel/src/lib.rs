//! Device code of the NVFP4 dual GEMM, written in `no_std` Rust for rustc's nvptx backend.
//!
//! The crate is compiled in two ways:
//! * for the host (any target, stable Rust): only the pure modules ([`layout`], [`fp4`]), which
//!   the host library and its tests call, so that every layout or bit trick has one definition;
//! * for `nvptx64-nvidia-cuda` by the host crate's `build.rs`, once per GPU architecture, with
//!   `--cfg nvfp4_arch="sm_90a"` or `"sm_100f"`: the pure modules plus `ptx` (one wrapper per PTX
//!   instruction) and the kernel entry points.
//!
//! Kernels (exported PTX entry names):
//! * `nvfp4_dequantize_f16`, `nvfp4_dequantize_bf16` (`dequant`): NVFP4 matrix → row-major
//!   fp16/bf16, used to feed library baselines and to prove the toolchain end to end.
//! * `nvfp4_silu_mul_f16`, `nvfp4_silu_mul_bf16` (`elementwise`): `silu(gate) · up`, the
//!   last step of the unfused baseline the benchmarks compare against.
//! * `nvfp4_dual_gemm_sm90_t{8,16,32,64,128}` (`sm90::dual_gemm`, sm_90a only): the fused dual
//!   GEMM for Hopper, one entry per token-tile size ([`sm90::config`]).
//! * `nvfp4_predecode_tokens_sm90` (`sm90::tokens`, sm_90a only): A → the fp16 token operand of
//!   the large Hopper tiles, run by the host before the dual GEMM.
//! * `nvfp4_grouped_{gemm,dual_gemm}_sm90_t{8,…,128}` and `nvfp4_grouped_prepare_sm90`
//!   (`sm90::grouped`): the grouped kernels for Hopper and their preparation pass.
//! * `nvfp4_dual_gemm_sm100_n{64,128}`, `nvfp4_grouped_{gemm,dual_gemm}_sm100_n{64,128}` and
//!   `nvfp4_grouped_prepare_sm100` (`sm100`, sm_100f only, never run): the Blackwell kernels.
//! * `nvfp4_quantize_{f32,f16,bf16}`, `nvfp4_amax_*` (`quantize`): the GPU quantizer.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)
)]

pub mod codec;
pub mod desc;
pub mod fp4;
pub mod grouped;
pub mod launch;
pub mod layout;
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
