//! The SwiGLU MLP block on the GPU, `out = (silu(x·W1ᵀ) ⊙ (x·W3ᵀ)) · W2ᵀ` from f32 / f16 /
//! bf16 activations, as one op over the library's three kernels: the quantizer (x to NVFP4
//! with a static global scale), the dual GEMM writing `h` as NVFP4 (`crate::dual_gemm`), the
//! plain GEMM (`crate::gemm`). The result is bit for bit the three calls made one by one.
//!
//! What the op adds over those calls: on Hopper, a dense GEMM with token tiles reads its tokens
//! decoded to fp16 (`nvfp4_kernel::sm90::tokens`), which a separate call makes with a
//! pre-decoding pass (≈ 2–4 µs a call at 64–256 tokens, perf log). Here the kernel that
//! produces each token matrix writes its decoded operand too: the quantizer writes x's into the
//! dual GEMM's buffer, the dual GEMM's NVFP4 epilogue writes h's into the down projection's,
//! and neither pass runs. (The decode-size kernels read NVFP4 tokens themselves: at those
//! token counts the op is the three calls.) By default each operand is handed on up to the
//! token count [`X_HAND_ON_MAX_TOKENS`] and [`H_HAND_ON_MAX_TOKENS`] give for its rows'
//! length, where that was measured to pay ([`MlpPlan::set_token_hand_on`] chooses otherwise);
//! larger calls run the pass. The plan owns x's and h's NVFP4 buffers.

use cudarc::driver::{CudaSlice, DevicePtr};
use half::f16;

use crate::dual_gemm::{DenseOut, DensePlan, TokenChain};
use crate::error::{Error, Result};
use crate::gpu::{DeviceNvFp4Matrix, F16Mut, Gpu, NvFp4Mut, NvFp4Ref};
use crate::problem::DualGemmShape;
use crate::quantize::{DeviceQuantizeInput, Element, GlobalScale, QuantizeChecks, refuse_auto};

/// The shape of a SwiGLU MLP block: `tokens × hidden` in and out, `intermediate` outputs of the
/// gate and up projections (W1, W3: `intermediate × hidden`; W2: `hidden × intermediate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MlpShape {
    /// Rows of x and of the output.
    pub tokens: usize,
    /// Columns of x and of the output.
    pub hidden: usize,
    /// Columns of h.
    pub intermediate: usize,
}

/// Up to how many tokens the dual GEMM's epilogue writes h's decoded operand by default, by the
/// length of its rows (`intermediate`, the down projection's K): the first entry whose row
/// length is at least h's. The epilogue writes each 16-byte chunk of the operand in two 8-byte
/// halves (a 64-output tile holds two of a chunk's four scale blocks,
/// `nvfp4_kernel::sm90::config::stage_block`; lane pairs store 16 bytes of a sector at once,
/// `nvfp4_kernel::sm90::tokens::store_decoded_block_pair`), where the pass writes whole lines,
/// so the hand-on pays where the pass's fixed cost outweighs that. Measured on an H200 with
/// the variants replayed in turn (`benches/mlp`, perf log entry 144), h and x handed on
/// against x alone: 0.2–8 µs saved a layer at 64–4096 tokens for 8192-value rows
/// (Llama-3.2-1B), 0.7–3.3 µs at 64–512 tokens for 14336 and 18432 (Llama-3-8B, DeepSeek-V3;
/// level at DeepSeek-V3's 256), 5–15 µs lost at 1024 tokens and more at 4096.
pub const H_HAND_ON_MAX_TOKENS: [(usize, usize); 2] = [(8192, usize::MAX), (usize::MAX, 512)];

/// Up to how many tokens the quantizer writes x's decoded operand by default, by the length of
/// its rows (`hidden`), as [`H_HAND_ON_MAX_TOKENS`]: at every token count. Measured on an H200
/// with the variants replayed in turn (`benches/mlp`, perf log entry 144): x handed on saves
/// 0.5–1.7 µs a layer at 64–256 tokens (DeepSeek-V3's 256 level) and 1–3 µs at 512–4096 for
/// all three sizes; nowhere slower beyond the run's spread.
pub const X_HAND_ON_MAX_TOKENS: [(usize, usize); 1] = [(usize::MAX, usize::MAX)];

/// The token limit of `table` ([`H_HAND_ON_MAX_TOKENS`], [`X_HAND_ON_MAX_TOKENS`]) for rows of
/// `row_length` values.
fn hand_on_max_tokens(table: &[(usize, usize)], row_length: usize) -> usize {
    table
        .iter()
        .find(|&&(longest, _)| row_length <= longest)
        .map_or(0, |&(_, tokens)| tokens)
}

/// Which decoded token operands an MLP launch hands on (see the module doc); the other GEMMs
/// run their pre-decoding pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenHandOn {
    /// The quantizer writes x's operand for the dual GEMM.
    pub x: bool,
    /// The dual GEMM's epilogue writes h's operand for the down projection.
    pub h: bool,
}

/// A validated MLP block for one shape on one GPU: the dual GEMM's and the GEMM's plans, the
/// NVFP4 buffers of x and h, the quantizer's check words. Launches must be stream-ordered.
pub struct MlpPlan {
    shape: MlpShape,
    gate_up: DensePlan,
    down: DensePlan,
    x: DeviceNvFp4Matrix,
    h: DeviceNvFp4Matrix,
    checks: QuantizeChecks,
    hand_on: TokenHandOn,
}

impl Gpu {
    /// Plans the MLP block for `shape` on this GPU (the rules of the dual GEMM for
    /// `tokens × intermediate × hidden` and of the GEMM for `tokens × hidden × intermediate`).
    pub fn plan_mlp(&self, shape: MlpShape) -> Result<MlpPlan> {
        self.check_not_capturing("planning an MLP")?;
        let MlpShape {
            tokens,
            hidden,
            intermediate,
        } = shape;
        let mut plan = MlpPlan {
            shape,
            gate_up: self.plan_dense(
                DualGemmShape {
                    m: tokens,
                    n: intermediate,
                    k: hidden,
                },
                true,
            )?,
            down: self.plan_dense(
                DualGemmShape {
                    m: tokens,
                    n: hidden,
                    k: intermediate,
                },
                false,
            )?,
            x: self.alloc_nvfp4(tokens, hidden)?,
            h: self.alloc_nvfp4(tokens, intermediate)?,
            checks: self.quantize_checks()?,
            hand_on: TokenHandOn { x: false, h: false },
        };
        plan.hand_on = plan.default_hand_on();
        Ok(plan)
    }
}

impl MlpPlan {
    /// The planned shape.
    pub fn shape(&self) -> MlpShape {
        self.shape
    }

    /// The token operands launches hand on ([`MlpPlan::set_token_hand_on`]).
    pub fn token_hand_on(&self) -> TokenHandOn {
        self.hand_on
    }

    /// The operands the planned kernels can hand on: x where the dual GEMM runs its tiled
    /// kernel, h where the GEMM does too (the decode-size kernels read NVFP4 tokens).
    pub fn possible_hand_on(&self) -> TokenHandOn {
        TokenHandOn {
            x: self.gate_up.decoded_tokens().is_some(),
            h: self.gate_up.writes_decoded_output() && self.down.decoded_tokens().is_some(),
        }
    }

    /// The plan's choice: x and h where the tokens are within [`X_HAND_ON_MAX_TOKENS`] and
    /// [`H_HAND_ON_MAX_TOKENS`] for their rows' length.
    fn default_hand_on(&self) -> TokenHandOn {
        let possible = self.possible_hand_on();
        let MlpShape {
            tokens,
            hidden,
            intermediate,
        } = self.shape;
        TokenHandOn {
            x: possible.x && tokens <= hand_on_max_tokens(&X_HAND_ON_MAX_TOKENS, hidden),
            h: possible.h && tokens <= hand_on_max_tokens(&H_HAND_ON_MAX_TOKENS, intermediate),
        }
    }

    /// Chooses which token operands launches hand on (by default as [`X_HAND_ON_MAX_TOKENS`]
    /// and [`H_HAND_ON_MAX_TOKENS`] say); asking for one the kernels cannot
    /// ([`MlpPlan::possible_hand_on`]) is an error. The results are the same bits either way;
    /// only the time differs.
    pub fn set_token_hand_on(&mut self, hand_on: TokenHandOn) -> Result<()> {
        let possible = self.possible_hand_on();
        if hand_on.x && !possible.x || hand_on.h && !possible.h {
            return Err(Error::invalid(
                "token hand-on",
                format!("the planned kernels can hand on {possible:?}"),
                format!("{hand_on:?}"),
            ));
        }
        self.hand_on = hand_on;
        Ok(())
    }

    /// Enqueues the block on `gpu`'s stream: `x` (`tokens × hidden`, row-major) quantized with
    /// `x_scale` (`None` or `Fixed`, as [`Gpu::quantize_into`]), `h` quantized in the dual
    /// GEMM's epilogue with the static `h_scale` (values beyond `6 · 448 · h_scale`
    /// saturate), `out` (`tokens × hidden` fp16 or bf16) written by the GEMM. Each product is
    /// scaled by its operands' global scales (the weights' as their views carry them).
    /// Non-finite values in `x` are reported by [`MlpPlan::first_non_finite`], not here.
    #[allow(clippy::too_many_arguments)]
    pub fn launch<T: DeviceQuantizeInput>(
        &mut self,
        gpu: &Gpu,
        x: &CudaSlice<T>,
        x_scale: GlobalScale,
        w1: &DeviceNvFp4Matrix,
        w3: &DeviceNvFp4Matrix,
        w2: &DeviceNvFp4Matrix,
        h_scale: f32,
        out: &mut CudaSlice<f16>,
    ) -> Result<()> {
        let stream = gpu.stream().clone();
        let expected = self.shape.tokens * self.shape.hidden;
        if x.len() != expected {
            return Err(Error::BufferLength {
                arg: "x",
                expected,
                got: x.len(),
            });
        }
        let (x_address, _x) = x.device_ptr(&stream);
        // SAFETY: `x` holds `tokens × hidden` elements of `T` (checked), alive for the call's
        // stream-ordered work (the slice's own event tracking).
        unsafe {
            self.launch_raw(
                gpu,
                T::ELEMENT,
                x_address,
                x_scale,
                w1.view(&stream),
                w3.view(&stream),
                w2.view(&stream),
                h_scale,
                F16Mut::of(out, &stream),
            )
        }
    }

    /// [`MlpPlan::launch`] on caller-owned memory: `x` the device address of `tokens × hidden`
    /// values of `element`, the weights and the output as views.
    ///
    /// # Safety
    /// `x` is a device address of this GPU's context holding `tokens · hidden` values of
    /// `element`, 16-byte aligned, not written by other work until the launch has run.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch_raw(
        &mut self,
        gpu: &Gpu,
        element: Element,
        x: u64,
        x_scale: GlobalScale,
        w1: NvFp4Ref,
        w3: NvFp4Ref,
        w2: NvFp4Ref,
        h_scale: f32,
        out: F16Mut,
    ) -> Result<()> {
        let MlpShape {
            tokens,
            hidden,
            intermediate,
        } = self.shape;
        // Every operand before the first kernel, so that a bad call enqueues nothing.
        w1.expect_shape("w1", intermediate, hidden)?;
        w3.expect_shape("w3", intermediate, hidden)?;
        w2.expect_shape("w2", hidden, intermediate)?;
        out.expect_len("out", tokens * hidden)?;
        crate::gpu::buffer::check_device_address("x", x, 16)?;
        refuse_auto(x_scale)?;
        let stream = gpu.stream().clone();
        let x_tokens = self.gate_up.decoded_tokens().filter(|_| self.hand_on.x);
        let h_tokens = self.down.decoded_tokens().filter(|_| self.hand_on.h);
        let (x_data, x_scales) = {
            let x_out = NvFp4Mut::of(&mut self.x, &stream, 1.0)?;
            (x_out.data_address(), x_out.scales_address())
        };
        gpu.enqueue_quantize_at(
            element as usize,
            x,
            tokens * hidden,
            tokens,
            hidden,
            x_data,
            x_scales,
            x_scale,
            &mut self.checks,
            x_tokens.unwrap_or(0),
        )?;
        self.x.global_scale = match x_scale {
            GlobalScale::Fixed(g) => Some(g),
            _ => None,
        };
        let h_out = NvFp4Mut::of(&mut self.h, &stream, h_scale)?;
        self.gate_up.launch_chained(
            gpu,
            self.x.view(&stream),
            w1,
            Some(w3),
            DenseOut::NvFp4(h_out),
            TokenChain {
                tokens_written: x_tokens.is_some(),
                decoded_out: h_tokens.unwrap_or(0),
            },
        )?;
        self.down.launch_chained(
            gpu,
            self.h.view(&stream),
            w2,
            None,
            DenseOut::F16(out),
            TokenChain {
                tokens_written: h_tokens.is_some(),
                decoded_out: 0,
            },
        )
    }

    /// Chooses whether the GEMMs are enqueued as programmatic dependent launches (the default on
    /// Hopper; see [`crate::dual_gemm::DualGemmPlan::set_programmatic_launch`]).
    pub fn set_programmatic_launch(&mut self, enabled: bool) -> Result<()> {
        self.gate_up.set_programmatic_launch(enabled)?;
        self.down.set_programmatic_launch(enabled)
    }

    /// x as the last launch quantized it (the plan's buffer; stream-ordered after the launch).
    pub fn quantized_input(&self) -> &DeviceNvFp4Matrix {
        &self.x
    }

    /// h, the gated product as the last launch's dual GEMM wrote it in NVFP4 (the plan's
    /// buffer; stream-ordered after the launch).
    pub fn hidden_activations(&self) -> &DeviceNvFp4Matrix {
        &self.h
    }

    /// Waits for the stream and returns the index (in x) of the first non-finite value of the
    /// last launch's x, or `None`.
    pub fn first_non_finite(&self, gpu: &Gpu) -> Result<Option<usize>> {
        self.checks.first_non_finite(gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_on_limits_follow_the_row_length_tables() {
        let h = |row| hand_on_max_tokens(&H_HAND_ON_MAX_TOKENS, row);
        let x = |row| hand_on_max_tokens(&X_HAND_ON_MAX_TOKENS, row);
        // Llama-3.2-1B, Llama-3-8B, DeepSeek-V3 (dense): h's rows are the intermediate size.
        assert_eq!([h(8192), h(14336), h(18432)], [usize::MAX, 512, 512]);
        assert_eq!([h(64), h(8193), h(1 << 20)], [usize::MAX, 512, 512]);
        // x's rows are the hidden size.
        assert_eq!([x(2048), x(4096), x(7168)], [usize::MAX; 3]);
        // Each table ends with an entry for every row length.
        for table in [&H_HAND_ON_MAX_TOKENS[..], &X_HAND_ON_MAX_TOKENS[..]] {
            assert_eq!(table.last().map(|&(longest, _)| longest), Some(usize::MAX));
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1));
        }
    }
}
