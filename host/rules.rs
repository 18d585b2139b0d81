//! The rules every GEMM op shares, below the ops and above the runtime: the kernels' index
//! limits and dimension rules, the sm_90a operand rescale that every α carries, the device state
//! of a stream-K plan, and the A-collector choice of the Blackwell plans.

use nvfp4_kernel::common::{DeviceGlobalScales, GATED_ALPHA_PRODUCT_LIMIT};
use nvfp4_kernel::sm90::config::{K_MULTIPLE, TILE_N};
use nvfp4_kernel::sm100::config as sm100;

use crate::error::{Error, Result};
use crate::gpu::buffer::DeviceBuffer;
use crate::gpu::{Arch, Gpu, NvFp4Ref};
use crate::problem::DualGemmShape;

/// The scale the sm_90a kernel's fp16 operands carry: each is `value · 2⁻¹⁴`, so each product
/// is `2⁻²⁸` too small and the epilogue multiplies by this.
pub(crate) const SM90_OPERAND_RESCALE: f32 = (1u64 << 28) as f32;

/// The scale a kernel multiplies its products by: the operands' global scales' `product` times
/// the architecture's operand `rescale` ([`SM90_OPERAND_RESCALE`] on sm_90a, 1 on sm_100f). Both
/// must be finite and positive in f32: a product that overflows there would turn exact zeros
/// into NaN (0 · ∞).
pub(crate) fn kernel_alpha(product: f32, rescale: f32) -> Result<f32> {
    let alpha = product * rescale;
    if product > 0.0 && product.is_finite() && alpha > 0.0 && alpha.is_finite() {
        Ok(alpha)
    } else {
        Err(Error::invalid(
            "global scales",
            format!(
                "their product times the kernels' operand rescale ({rescale}) must be finite and positive in f32"
            ),
            product,
        ))
    }
}

/// The scales `(α_gate, α_up)` of a launch's gate (or plain) and up products as the kernels take
/// them (see [`kernel_alpha`]); for a `gated` epilogue their product must also be at most
/// [`GATED_ALPHA_PRODUCT_LIMIT`] (`2¹²⁶`): the SiLU product divides by its reciprocal.
pub(crate) fn kernel_alphas(
    gate_product: f32,
    up_product: f32,
    rescale: f32,
    gated: bool,
) -> Result<(f32, f32)> {
    let (gate, up) = (
        kernel_alpha(gate_product, rescale)?,
        kernel_alpha(up_product, rescale)?,
    );
    if !gated || gate * up <= GATED_ALPHA_PRODUCT_LIMIT {
        Ok((gate, up))
    } else {
        Err(Error::invalid(
            "global scales",
            format!(
                "the gate's and the up product's, times the kernels' operand rescale ({rescale}) each, must multiply to at most 2^126"
            ),
            format!("{gate_product} and {up_product}"),
        ))
    }
}

/// Largest value of the kernels' 32-bit sizes and offsets.
pub(crate) const KERNEL_INDEX_LIMIT: u64 = (1 << 31) - 1;

/// Checks a dimension against `1..=KERNEL_INDEX_LIMIT` and a multiple.
pub(crate) fn check_dimension(arg: &'static str, value: usize, multiple: usize) -> Result<u32> {
    if value == 0 || !value.is_multiple_of(multiple) || value as u64 > KERNEL_INDEX_LIMIT {
        let rule = if multiple > 1 {
            format!("must be a positive multiple of {multiple}, at most {KERNEL_INDEX_LIMIT}")
        } else {
            format!("must be in 1..={KERNEL_INDEX_LIMIT}")
        };
        return Err(Error::invalid(arg, rule, value));
    }
    Ok(value as u32)
}

/// The shape rules of the dense GEMMs on both architectures: any M ≥ 1, N a multiple of 64,
/// K a multiple of 64, each within the kernels' 32-bit indices. Returns (M, N, K) as u32.
pub(crate) fn check_gemm_shape(shape: DualGemmShape) -> Result<(u32, u32, u32)> {
    const _: () = assert!(
        sm100::K_PER_MMA == K_MULTIPLE,
        "both architectures' kernels share the K rule"
    );
    Ok((
        check_dimension("m", shape.m, 1)?,
        check_dimension("n", shape.n, TILE_N as usize)?,
        check_dimension("k", shape.k, K_MULTIPLE as usize)?,
    ))
}

/// The device state of a plan's stream-K fix-ups: partial-sum slots, their publication flags
/// and the launch-ticket counter (see [`nvfp4_kernel::schedule::StreamK`]).
pub(crate) struct StreamKState {
    pub workspace: DeviceBuffer<u32>,
    pub flags: DeviceBuffer<u32>,
    pub tickets: DeviceBuffer<u64>,
}

impl StreamKState {
    /// Zeroed state for `workspace_words` of partial sums and `flag_words` flags.
    pub(crate) fn new(gpu: &Gpu, workspace_words: usize, flag_words: usize) -> Result<Self> {
        Ok(Self {
            workspace: DeviceBuffer::zeros(gpu.stream(), workspace_words)?,
            flags: DeviceBuffer::zeros(gpu.stream(), flag_words)?,
            tickets: DeviceBuffer::zeros(gpu.stream(), 1)?,
        })
    }
}

/// The shared rule of the plans' `set_a_collector_use`: any choice on Blackwell, only `Reuse`
/// (the no-op) elsewhere.
pub(crate) fn set_a_collector(
    slot: &mut sm100::ACollectorUse,
    blackwell: bool,
    collector: sm100::ACollectorUse,
) -> Result<()> {
    if !blackwell && collector != sm100::ACollectorUse::Reuse {
        return Err(Error::invalid(
            "A collector",
            "only the sm_100f kernels have an MMA collector to switch",
            format!("{collector:?}"),
        ));
    }
    *slot = collector;
    Ok(())
}

/// The scale the kernels' α carry besides the global scales: Hopper's fp16 operands are
/// rescaled (see `SM90_OPERAND_RESCALE`), Blackwell multiplies the fp4 values as they are.
pub(crate) fn operand_rescale(arch: Arch) -> f32 {
    match arch {
        Arch::Sm90a => SM90_OPERAND_RESCALE,
        Arch::Sm100f => 1.0,
    }
}

/// The device-memory global scales of a dense launch's operands (`b2`: the dual GEMM's up
/// weights; `None` for the plain GEMM).
pub(crate) fn device_globals(a: &NvFp4Ref, b1: &NvFp4Ref, b2: Option<&NvFp4Ref>) -> DeviceGlobalScales {
    let address = |x: Option<&NvFp4Ref>| {
        x.and_then(NvFp4Ref::device_global_scale)
            .map_or(std::ptr::null(), |p| p as *const f32)
    };
    DeviceGlobalScales {
        a: address(Some(a)),
        b1: address(Some(b1)),
        b2: address(b2),
    }
}
