//! The GPU quantizer: row-major f32 / f16 / bf16 values in device memory → a
//! [`DeviceNvFp4Matrix`], bit-identical to [`NvFp4Matrix::quantize`](crate::NvFp4Matrix::quantize)
//! (the kernels share the host's codec; see `nvfp4_kernel::quantize`).

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr};
use half::{bf16, f16};
use nvfp4_kernel::common::{
    AmaxArgs, QUANTIZE_COUNT_BITS, QUANTIZE_STATUS_WORDS, QuantizeArgs, QuantizeStatus,
};
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K, ScalePadding};

use super::{GlobalScale, QuantizeInput};
use crate::codec::auto_global_scale;
use crate::error::{Error, Result};
use crate::gpu::buffer::{DeviceBuffer, check_device_address};
use crate::gpu::{DeviceNvFp4Matrix, Gpu};
use crate::matrix::{validate_global_scale, validate_shape};

mod sealed {
    /// Which kernels read the type: 0 f32, 1 f16, 2 bf16 (as `Element`).
    pub trait Element {
        const KERNEL: usize;
    }
    impl Element for f32 {
        const KERNEL: usize = 0;
    }
    impl Element for half::f16 {
        const KERNEL: usize = 1;
    }
    impl Element for half::bf16 {
        const KERNEL: usize = 2;
    }
}

/// Element types the GPU quantizer reads: `f32`, `f16` and `bf16`.
pub trait DeviceQuantizeInput: QuantizeInput + DeviceRepr + sealed::Element {
    /// The type as the raw quantizer names it.
    const ELEMENT: Element;
}

impl DeviceQuantizeInput for f32 {
    const ELEMENT: Element = Element::F32;
}
impl DeviceQuantizeInput for f16 {
    const ELEMENT: Element = Element::F16;
}
impl DeviceQuantizeInput for bf16 {
    const ELEMENT: Element = Element::Bf16;
}

/// The device words of a GPU quantization's checks: the first non-finite input index and,
/// for `GlobalScale::Auto`, the tensor's largest magnitude. Reusable across calls on one stream.
pub struct QuantizeChecks {
    status: DeviceBuffer<u64>,
    amax: DeviceBuffer<u32>,
}

/// The enqueue-only quantizers take `None` or `Fixed`: `Auto` needs the tensor's amax on the host
/// for the matrix's global scale, so only [`Gpu::quantize`] takes it.
pub(crate) fn refuse_auto(global: GlobalScale) -> Result<()> {
    if global == GlobalScale::Auto {
        return Err(Error::invalid(
            "global",
            "must be None or Fixed here (Auto: use `quantize`, which reads the scale back)",
            "Auto",
        ));
    }
    Ok(())
}

/// Element types the GPU quantizer reads, for [`Gpu::quantize_raw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Element {
    /// IEEE binary32.
    F32 = 0,
    /// IEEE binary16.
    F16 = 1,
    /// bfloat16.
    Bf16 = 2,
}

impl QuantizeChecks {
    /// Waits for the stream and returns the index of the first non-finite input of the last
    /// quantization enqueued with these checks, or `None`.
    pub fn first_non_finite(&self, gpu: &Gpu) -> Result<Option<usize>> {
        gpu.check_not_capturing("checking for non-finite values")?;
        let status =
            self.status.download_on(gpu.stream(), QUANTIZE_STATUS_WORDS)?[QuantizeStatus::Result as usize];
        Ok((status != 0).then(|| (u64::MAX - status) as usize))
    }

    /// Waits for the stream and returns the outcome of the last quantization enqueued with these
    /// checks: `Error::NonFinite` (with the first such index and its value, as the CPU
    /// quantizer reports it) or `Ok`.
    pub fn result<T: DeviceQuantizeInput>(&self, gpu: &Gpu, values: &CudaSlice<T>) -> Result<()> {
        gpu.check_not_capturing("checking for non-finite values")?;
        let stream = gpu.stream();
        let status = self.status.download_on(stream, QUANTIZE_STATUS_WORDS)?[QuantizeStatus::Result as usize];
        if status == 0 {
            return Ok(());
        }
        let index = (u64::MAX - status) as usize;
        let value = stream.clone_dtoh(&values.slice(index..index + 1))?[0];
        Err(Error::NonFinite {
            arg: "values",
            index,
            value: value.to_f32(),
        })
    }
}

impl Gpu {
    /// Device words for [`Gpu::quantize_into`]'s checks.
    pub fn quantize_checks(&self) -> Result<QuantizeChecks> {
        self.check_not_capturing("allocating quantizer checks")?;
        Ok(QuantizeChecks {
            // Zero once: every launch leaves them so (`nvfp4_kernel::common::QuantizeStatus`).
            status: DeviceBuffer::zeros(self.stream(), QUANTIZE_STATUS_WORDS)?,
            amax: DeviceBuffer::zeros(self.stream(), 1)?,
        })
    }

    /// Quantizes the row-major `values` (`out.rows() × out.k()`) on the GPU, with the same result, bit
    /// for bit, as [`NvFp4Matrix::quantize`](crate::NvFp4Matrix::quantize) on the same values
    /// and global scale (`Auto` included), and the same errors: shapes and lengths before
    /// launch; a NaN or infinite value gives `Error::NonFinite` with the first such index.
    ///
    /// Waits for the stream once at the end (to read the non-finite check and, for `Auto`, the
    /// global scale the GPU chose); [`Gpu::quantize_into`] does not wait. Memory-bound: one
    /// read of the values (two for `Auto`).
    pub fn quantize<T: DeviceQuantizeInput>(
        &self,
        rows: usize,
        k: usize,
        values: &CudaSlice<T>,
        global: GlobalScale,
    ) -> Result<DeviceNvFp4Matrix> {
        self.check_not_capturing("quantizing with allocation and a wait (use quantize_into)")?;
        let mut out = self.alloc_nvfp4(rows, k)?;
        let mut checks = self.quantize_checks()?;
        self.enqueue_quantize(values, &mut out, global, &mut checks)?;
        checks.result(self, values)?;
        out.global_scale = match global {
            GlobalScale::Auto => {
                let amax = f32::from_bits(checks.amax.download_on(self.stream(), 1)?[0]);
                // As the kernel (and the host quantizer) compute it.
                Some(auto_global_scale(amax))
            }
            GlobalScale::Fixed(g) => Some(g),
            GlobalScale::None => None,
        };
        Ok(out)
    }

    /// Enqueues the quantization of `values` into `out` without waiting (stream-ordered; no
    /// allocation and no host-device copy: only kernels and a memset of the check words, so a
    /// CUDA graph can capture it), bit-identical to
    /// [`Gpu::quantize`]. `global` is `None` or `Fixed`: `Auto` needs the tensor's amax on
    /// the host for `out`'s global scale, so only [`Gpu::quantize`] takes it. Non-finite
    /// input is reported by `checks.result` (until then `out` must not be trusted).
    pub fn quantize_into<T: DeviceQuantizeInput>(
        &self,
        values: &CudaSlice<T>,
        out: &mut DeviceNvFp4Matrix,
        global: GlobalScale,
        checks: &mut QuantizeChecks,
    ) -> Result<()> {
        refuse_auto(global)?;
        self.enqueue_quantize(values, out, global, checks)?;
        out.global_scale = match global {
            GlobalScale::Fixed(g) => Some(g),
            _ => None,
        };
        Ok(())
    }

    /// Enqueues the quantization of caller-owned values into caller-owned NVFP4 buffers (see
    /// [`Gpu::quantize_into`]: `global` is `None` or `Fixed`, nothing is allocated, copied or
    /// awaited; [`QuantizeChecks::first_non_finite`] reports non-finite input).
    ///
    /// # Safety
    /// `values` holds `rows · k` elements of `element`, `data` `rows · k / 2` bytes and `scales`
    /// `BlockedScales::new(rows, k).len()` bytes (padding written as zeros), all device addresses
    /// of this GPU's context, 16-byte aligned, not used by other work until the kernels complete.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn quantize_raw(
        &self,
        element: Element,
        values: u64,
        rows: usize,
        k: usize,
        data: u64,
        scales: u64,
        global: GlobalScale,
        checks: &mut QuantizeChecks,
    ) -> Result<()> {
        refuse_auto(global)?;
        for (arg, address) in [("values", values), ("data", data), ("scales", scales)] {
            check_device_address(arg, address, 16)?;
        }
        self.enqueue_quantize_at(
            element as usize,
            values,
            rows * k,
            rows,
            k,
            data,
            scales,
            global,
            checks,
            0,
        )
    }

    /// Validates, resets the checks and enqueues the amax (for `Auto`) and quantization kernels.
    fn enqueue_quantize<T: DeviceQuantizeInput>(
        &self,
        values: &CudaSlice<T>,
        out: &mut DeviceNvFp4Matrix,
        global: GlobalScale,
        checks: &mut QuantizeChecks,
    ) -> Result<()> {
        let stream = self.stream();
        let (rows, k) = (out.rows(), out.k());
        let (values_ptr, _values) = values.device_ptr(stream);
        let (data_ptr, _data) = out.data.device_ptr_mut(stream);
        let (scales_ptr, _scales) = out.scales.device_ptr_mut(stream);
        self.enqueue_quantize_at(
            T::KERNEL,
            values_ptr,
            values.len(),
            rows,
            k,
            data_ptr,
            scales_ptr,
            global,
            checks,
            0,
        )
    }

    /// [`Self::enqueue_quantize`] on addresses (`values_len` elements at `values`; `data` and
    /// `scales` sized for `rows × k`), writing also the sm_90a decoded token operand of the
    /// output at `decoded` unless it is 0 (`rows × padded_k(k)` fp16, its padding past K zero;
    /// see `nvfp4_kernel::common::QuantizeArgs::decoded`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn enqueue_quantize_at(
        &self,
        kernel_index: usize,
        values_ptr: u64,
        values_len: usize,
        rows: usize,
        k: usize,
        data_ptr: u64,
        scales_ptr: u64,
        global: GlobalScale,
        checks: &mut QuantizeChecks,
        decoded: u64,
    ) -> Result<()> {
        validate_shape(rows, k)?;
        for (arg, value) in [("rows", rows), ("k", k)] {
            if value > u32::MAX as usize {
                return Err(Error::invalid(
                    arg,
                    "must be below 2^32 for the GPU quantizer",
                    value,
                ));
            }
        }
        if values_len != rows * k {
            return Err(Error::BufferLength {
                arg: "values",
                expected: rows * k,
                got: values_len,
            });
        }
        let blocks = rows * k / SCALE_BLOCK_K;
        if blocks >= 1 << 31 {
            return Err(Error::invalid(
                "rows × k",
                "must be below 2^35 elements (2^31 blocks of 16)",
                rows * k,
            ));
        }
        let scale_bytes = BlockedScales::new(rows, k).checked_len().unwrap_or(usize::MAX);
        if scale_bytes > u32::MAX as usize {
            return Err(Error::invalid(
                "rows × k",
                "must give a blocked scale buffer below 4 GiB for the GPU quantizer (its offsets are 32-bit)",
                scale_bytes,
            ));
        }
        let fixed = match global {
            GlobalScale::Fixed(g) => {
                validate_global_scale(Some(g))?;
                Some(g)
            }
            GlobalScale::None | GlobalScale::Auto => None,
        };
        let stream = self.stream();
        let auto = global == GlobalScale::Auto;
        if auto {
            checks.amax.zero_on(stream, 1)?;
            let amax_ptr = checks.amax.address();
            let kernel = &self.kernels.amax[kernel_index];
            let args = AmaxArgs {
                values: values_ptr as *const u8,
                amax: amax_ptr as *mut u32,
                blocks: blocks as u32,
            };
            // SAFETY: `values` holds `blocks · 16` elements (checked), 16-byte aligned; `amax`
            // is one zeroed word.
            unsafe {
                kernel.launch(
                    stream,
                    self.grid_stride_blocks(kernel, blocks as u32),
                    0,
                    &args,
                    false,
                )?
            };
        }
        let (status_ptr, amax_ptr) = (checks.status.address(), checks.amax.address());
        let kernel = &self.kernels.quantize[kernel_index];
        let args = QuantizeArgs {
            values: values_ptr as *const u8,
            data: data_ptr as *mut u8,
            scales: scales_ptr as *mut u8,
            amax: if auto {
                amax_ptr as *const u32
            } else {
                std::ptr::null()
            },
            status: status_ptr as *mut u64,
            rows: rows as u32,
            k: k as u32,
            global_scale: fixed.unwrap_or(1.0),
            decoded: decoded as *mut u32,
        };
        // A thread for each block or each item of the scale padding, whichever are more (the
        // kernel's two grid-stride loops; both counts below 2^32, checked above), in fewer CTAs
        // than the status word counts (`QUANTIZE_COUNT_BITS`).
        let items = (blocks as u32).max(ScalePadding::new(rows as u32, k as u32).items());
        let grid = self
            .grid_stride_blocks(kernel, items)
            .min((1 << QUANTIZE_COUNT_BITS) - 1);
        // SAFETY: the output buffers are sized for `rows × k` (the callers' contracts) and
        // `values` was checked, all 16-byte aligned; the amax kernel ran first on the same stream;
        // the status words are the checks' own, zero between launches.
        unsafe { kernel.launch(stream, grid, 0, &args, false) }
    }
}
