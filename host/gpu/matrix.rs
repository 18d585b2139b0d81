//! [`DeviceNvFp4Matrix`]: an NVFP4 matrix in device memory.

use cudarc::driver::CudaSlice;

use super::Gpu;
use crate::error::Result;
use crate::matrix::{NvFp4Matrix, validate_shape};
use nvfp4_kernel::layout::BlockedScales;

/// An NVFP4 matrix in device memory, with the same layout as [`NvFp4Matrix`].
pub struct DeviceNvFp4Matrix {
    rows: usize,
    k: usize,
    pub(crate) data: CudaSlice<u8>,
    pub(crate) scales: CudaSlice<u8>,
    pub(crate) global_scale: Option<f32>,
}

impl DeviceNvFp4Matrix {
    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// fp4 elements per row (K).
    pub fn k(&self) -> usize {
        self.k
    }

    /// The fp32 global scale, if any.
    pub fn global_scale(&self) -> Option<f32> {
        self.global_scale
    }

    /// Packed e2m1 data, `rows × k/2` bytes.
    pub fn data_buffer(&self) -> &CudaSlice<u8> {
        &self.data
    }

    /// Scales in the blocked layout.
    pub fn scales_buffer(&self) -> &CudaSlice<u8> {
        &self.scales
    }
}

impl Gpu {
    /// Copies `m` to the device (stream-ordered).
    pub fn upload(&self, m: &NvFp4Matrix) -> Result<DeviceNvFp4Matrix> {
        let data = self.stream().clone_htod(m.data())?;
        let scales = self.stream().clone_htod(m.scales())?;
        self.device_matrix(m.rows(), m.k(), data, scales, m.global_scale())
    }

    /// A device matrix over `data` and `scales` (sized for `rows × k` by the caller).
    pub(crate) fn device_matrix(
        &self,
        rows: usize,
        k: usize,
        data: CudaSlice<u8>,
        scales: CudaSlice<u8>,
        global_scale: Option<f32>,
    ) -> Result<DeviceNvFp4Matrix> {
        Ok(DeviceNvFp4Matrix {
            rows,
            k,
            data,
            scales,
            global_scale,
        })
    }

    /// Copies `m` back to the host (waits for the stream).
    pub fn download(&self, m: &DeviceNvFp4Matrix) -> Result<NvFp4Matrix> {
        let data = self.stream().clone_dtoh(&m.data)?;
        let scales = self.stream().clone_dtoh(&m.scales)?;
        NvFp4Matrix::from_parts(m.rows, m.k, data, scales, m.global_scale)
    }
}

impl Gpu {
    /// A zero-filled NVFP4 matrix of `rows × k` in device memory (no global scale), for
    /// `Gpu::quantize_into`.
    pub fn alloc_nvfp4(&self, rows: usize, k: usize) -> Result<DeviceNvFp4Matrix> {
        validate_shape(rows, k)?;
        let stream = self.stream();
        let data = stream.alloc_zeros::<u8>(rows * k / 2)?;
        let scales = stream.alloc_zeros::<u8>(BlockedScales::new(rows, k).len())?;
        self.device_matrix(rows, k, data, scales, None)
    }
}
