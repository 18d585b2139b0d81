//! The GPU quantizer: row-major f32 / f16 / bf16 values in device memory → a
//! [`DeviceNvFp4Matrix`], bit-identical to [`NvFp4Matrix::quantize`](crate::NvFp4Matrix::quantize)
//! (the kernels share the host's codec; see `nvfp4_kernel::quantize`).

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr};
use half::{bf16, f16};
use nvfp4_kernel::launch::{AmaxArgs, QuantizeArgs};
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K};

use super::{DeviceNvFp4Matrix, Gpu};
use crate::codec::{E2M1_MAX, E4M3_MAX};
use crate::error::{Error, Result};
use crate::matrix::{validate_global_scale, validate_shape};
use crate::quantize::{GlobalScale, QuantizeInput};

mod sealed {
    /// Which kernels read the type: 0 f32, 1 f16, 2 bf16.
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
pub trait DeviceQuantizeInput: QuantizeInput + DeviceRepr + sealed::Element {}

impl DeviceQuantizeInput for f32 {}
impl DeviceQuantizeInput for f16 {}
impl DeviceQuantizeInput for bf16 {}

impl Gpu {
    /// Quantizes the row-major `rows × k` matrix `values` on the GPU, with the same result, bit
    /// for bit, as [`NvFp4Matrix::quantize`](crate::NvFp4Matrix::quantize) on the same values
    /// and global scale (`Auto` included), and the same errors: shapes and lengths before
    /// launch; a NaN or infinite value gives `Error::NonFinite` with the first such index.
    ///
    /// Waits for the stream once at the end (to read the non-finite check and, for `Auto`, the
    /// global scale the GPU chose). Memory-bound: one read of the values (two for `Auto`).
    pub fn quantize<T: DeviceQuantizeInput>(
        &self,
        rows: usize,
        k: usize,
        values: &CudaSlice<T>,
        global: GlobalScale,
    ) -> Result<DeviceNvFp4Matrix> {
        validate_shape(rows, k)?;
        if values.len() != rows * k {
            return Err(Error::BufferLength {
                arg: "values",
                expected: rows * k,
                got: values.len(),
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
        let fixed = match global {
            GlobalScale::None => None,
            GlobalScale::Fixed(g) => {
                validate_global_scale(Some(g))?;
                Some(g)
            }
            GlobalScale::Auto => None,
        };
        let stream = self.stream();
        let layout = BlockedScales::new(rows, k);
        let mut data = stream.alloc_zeros::<u8>(rows * k / 2)?;
        let mut scales = stream.alloc_zeros::<u8>(layout.len())?;
        let mut status = stream.clone_htod(&[u64::MAX])?;
        let mut amax = stream.alloc_zeros::<u32>(1)?;
        let (values_ptr, _values) = values.device_ptr(stream);
        let auto = global == GlobalScale::Auto;
        if auto {
            let (amax_ptr, _amax) = amax.device_ptr_mut(stream);
            let kernel = &self.kernels.amax[T::KERNEL];
            let args = AmaxArgs {
                values: values_ptr as *const u8,
                amax: amax_ptr as *mut u32,
                blocks: blocks as u32,
            };
            // SAFETY: `values` holds `blocks · 16` elements (checked) in a 256-aligned
            // allocation; `amax` is one zeroed word.
            unsafe {
                kernel.launch(
                    stream,
                    self.grid_stride_blocks(&kernel.kernel, blocks as u32),
                    0,
                    &args,
                    false,
                )?
            };
        }
        {
            let (data_ptr, _data) = data.device_ptr_mut(stream);
            let (scales_ptr, _scales) = scales.device_ptr_mut(stream);
            let (status_ptr, _status) = status.device_ptr_mut(stream);
            let (amax_ptr, _amax) = amax.device_ptr(stream);
            let kernel = &self.kernels.quantize[T::KERNEL];
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
            };
            // SAFETY: every buffer is sized for `rows × k` (allocated above or checked), in
            // 256-aligned allocations; the amax kernel ran first on the same stream.
            unsafe {
                kernel.launch(
                    stream,
                    self.grid_stride_blocks(&kernel.kernel, blocks as u32),
                    0,
                    &args,
                    false,
                )?
            };
        }
        let first_bad = stream.clone_dtoh(&status)?[0];
        if first_bad != u64::MAX {
            let index = first_bad as usize;
            let value = stream.clone_dtoh(&values.slice(index..index + 1))?[0];
            return Err(Error::NonFinite {
                arg: "values",
                index,
                value: value.to_f32(),
            });
        }
        let global_scale = if auto {
            let amax = f32::from_bits(stream.clone_dtoh(&amax)?[0]);
            // As the kernel (and the host quantizer) compute it.
            Some(if amax > 0.0 {
                amax / (E2M1_MAX * E4M3_MAX)
            } else {
                1.0
            })
        } else {
            fixed
        };
        self.device_matrix(rows, k, data, scales, global_scale)
    }
}
