//! Dequantization on the GPU: NVFP4 matrices (the library's or caller-owned) to row-major fp16
//! or bf16, bit-identical to the CPU decoder (`NvFp4Matrix::dequantize`); it feeds the
//! baselines the benchmarks compare against.

use cudarc::driver::{CudaSlice, DevicePtrMut};
use half::{bf16, f16};
use nvfp4_kernel::common::DequantizeArgs;
use nvfp4_kernel::layout::SCALE_BLOCK_K;

use crate::error::{Error, Result};
use crate::gpu::buffer::check_device_address;
use crate::gpu::{DeviceNvFp4Matrix, Gpu, HalfFormat, LoadedKernel, NvFp4Ref};

impl Gpu {
    /// Dequantizes `m` to a new row-major fp16 buffer (`rows × k`), stream-ordered.
    pub fn dequantize_f16(&self, m: &DeviceNvFp4Matrix) -> Result<CudaSlice<f16>> {
        // SAFETY: every element is written by the kernel before the buffer can be read.
        let mut out = unsafe { self.stream().alloc::<f16>(m.rows() * m.k()) }?;
        self.dequantize_f16_into(m, &mut out)?;
        Ok(out)
    }

    /// Dequantizes `m` into `out` (`rows × k` fp16, row-major), stream-ordered.
    pub fn dequantize_f16_into(&self, m: &DeviceNvFp4Matrix, out: &mut CudaSlice<f16>) -> Result<()> {
        self.launch_dequantize(&self.kernels.dequantize_f16, m, out)
    }

    /// Dequantizes `m` to a new row-major bf16 buffer (`rows × k`), stream-ordered.
    pub fn dequantize_bf16(&self, m: &DeviceNvFp4Matrix) -> Result<CudaSlice<bf16>> {
        // SAFETY: every element is written by the kernel before the buffer can be read.
        let mut out = unsafe { self.stream().alloc::<bf16>(m.rows() * m.k()) }?;
        self.dequantize_bf16_into(m, &mut out)?;
        Ok(out)
    }

    /// Dequantizes `m` into `out` (`rows × k` bf16, row-major), stream-ordered.
    pub fn dequantize_bf16_into(&self, m: &DeviceNvFp4Matrix, out: &mut CudaSlice<bf16>) -> Result<()> {
        self.launch_dequantize(&self.kernels.dequantize_bf16, m, out)
    }

    fn launch_dequantize<T: cudarc::driver::DeviceRepr>(
        &self,
        kernel: &LoadedKernel<DequantizeArgs>,
        m: &DeviceNvFp4Matrix,
        out: &mut CudaSlice<T>,
    ) -> Result<()> {
        if out.len() != m.rows() * m.k() {
            return Err(Error::BufferLength {
                arg: "out",
                expected: m.rows() * m.k(),
                got: out.len(),
            });
        }
        let (out, _out) = out.device_ptr_mut(self.stream());
        self.launch_dequantize_at(kernel, m.view(self.stream()), out)
    }

    /// Dequantizes `m` into caller-owned `out` (`rows × k` values of `format`, row-major),
    /// stream-ordered.
    ///
    /// # Safety
    /// `out` is a 16-byte aligned device address of this GPU's context with `rows · k` values of
    /// `format`, not used by other work until the kernel completes.
    pub unsafe fn dequantize_raw(&self, m: NvFp4Ref, format: HalfFormat, out: u64) -> Result<()> {
        check_device_address("out", out, 16)?;
        let kernel = match format {
            HalfFormat::F16 => &self.kernels.dequantize_f16,
            HalfFormat::Bf16 => &self.kernels.dequantize_bf16,
        };
        self.launch_dequantize_at(kernel, m, out)
    }

    fn launch_dequantize_at(
        &self,
        kernel: &LoadedKernel<DequantizeArgs>,
        m: NvFp4Ref,
        out: u64,
    ) -> Result<()> {
        m.expect_host_global_scale("m", "dequantization")?;
        let blocks = m.rows() * m.k() / SCALE_BLOCK_K;
        if blocks >= 1 << 31 {
            return Err(Error::invalid(
                "rows × k / 16",
                "must be below 2^31 for the dequantization kernel",
                blocks,
            ));
        }
        let stream = self.stream();
        let args = DequantizeArgs {
            data: m.data_address() as *const u8,
            scales: m.scales_address() as *const u8,
            out: out as *mut u16,
            rows: m.rows() as u32,
            k: m.k() as u32,
            global_scale: m.global_scale().unwrap_or(1.0),
        };
        // SAFETY: the buffers have the lengths the kernel reads and writes (the view's contract
        // and the callers').
        unsafe {
            kernel.launch(
                stream,
                self.grid_stride_blocks(kernel, blocks as u32),
                0,
                &args,
                false,
            )
        }
    }
}
