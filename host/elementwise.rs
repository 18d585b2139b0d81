//! Element-wise ops on the GPU: `silu(gate) ⊙ up` on fp16 / bf16 vectors, the last step of the
//! unfused gate/up projection that the benchmarks compare against.

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use half::{bf16, f16};
use nvfp4_kernel::common::SiluMulArgs;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, LoadedKernel};

impl Gpu {
    /// `out = silu(gate) ⊙ up` element-wise on fp16 buffers of one length (a multiple of 8),
    /// stream-ordered: the last step of an unfused gate/up projection.
    pub fn silu_mul_f16(
        &self,
        gate: &CudaSlice<f16>,
        up: &CudaSlice<f16>,
        out: &mut CudaSlice<f16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.kernels.silu_mul_f16, gate, up, out)
    }

    /// `out = silu(gate) ⊙ up` element-wise on bf16 buffers (see [`Self::silu_mul_f16`]).
    pub fn silu_mul_bf16(
        &self,
        gate: &CudaSlice<bf16>,
        up: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.kernels.silu_mul_bf16, gate, up, out)
    }

    fn launch_silu_mul<T: cudarc::driver::DeviceRepr>(
        &self,
        kernel: &LoadedKernel<SiluMulArgs>,
        gate: &CudaSlice<T>,
        up: &CudaSlice<T>,
        out: &mut CudaSlice<T>,
    ) -> Result<()> {
        let len = gate.len();
        if up.len() != len {
            return Err(Error::BufferLength {
                arg: "up",
                expected: len,
                got: up.len(),
            });
        }
        if out.len() != len {
            return Err(Error::BufferLength {
                arg: "out",
                expected: len,
                got: out.len(),
            });
        }
        if !len.is_multiple_of(8) || len >= 1 << 31 {
            return Err(Error::invalid("len", "must be a multiple of 8 below 2^31", len));
        }
        let stream = self.stream();
        let (gate, _gate) = gate.device_ptr(stream);
        let (up, _up) = up.device_ptr(stream);
        let (out, _out) = out.device_ptr_mut(stream);
        let args = SiluMulArgs {
            gate: gate as *const u32,
            up: up as *const u32,
            out: out as *mut u32,
            len: len as u32,
        };
        // SAFETY: the three buffers hold `len` elements (checked), allocations are 256-aligned.
        unsafe {
            kernel.launch(
                stream,
                self.grid_stride_blocks(kernel, (len / 8) as u32),
                0,
                &args,
                false,
            )
        }
    }
}
