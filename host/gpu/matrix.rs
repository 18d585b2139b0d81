//! [`DeviceNvFp4Matrix`]: an NVFP4 matrix in device memory.

use cudarc::driver::CudaSlice;

use super::{Gpu, tensor_map};
use crate::error::Result;
use crate::matrix::NvFp4Matrix;

/// An NVFP4 matrix in device memory, with the same layout as [`NvFp4Matrix`], and (when K is a
/// multiple of 32) the TMA tensor map through which kernels read it as activations.
pub struct DeviceNvFp4Matrix {
    rows: usize,
    k: usize,
    pub(super) data: CudaSlice<u8>,
    pub(super) scales: CudaSlice<u8>,
    pub(super) global_scale: Option<f32>,
    packed_rows_map: Option<CudaSlice<u8>>,
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

    /// The 128-byte TMA tensor map of the packed data (box 128 bytes × 64 rows, 128-byte
    /// swizzle) in device memory; `None` when K is not a multiple of 32.
    pub fn packed_rows_map(&self) -> Option<&CudaSlice<u8>> {
        self.packed_rows_map.as_ref()
    }
}

impl Gpu {
    /// Copies `m` to the device (stream-ordered).
    pub fn upload(&self, m: &NvFp4Matrix) -> Result<DeviceNvFp4Matrix> {
        let data = self.stream().clone_htod(m.data())?;
        let scales = self.stream().clone_htod(m.scales())?;
        self.device_matrix(m.rows(), m.k(), data, scales, m.global_scale())
    }

    /// A device matrix over `data` and `scales` (sized for `rows × k` by the caller), with its
    /// tensor map when K is a multiple of 32.
    pub(crate) fn device_matrix(
        &self,
        rows: usize,
        k: usize,
        data: CudaSlice<u8>,
        scales: CudaSlice<u8>,
        global_scale: Option<f32>,
    ) -> Result<DeviceNvFp4Matrix> {
        let packed_rows_map = if k.is_multiple_of(32) {
            Some(tensor_map::packed_rows_map(self.stream(), &data, rows, k)?)
        } else {
            None
        };
        Ok(DeviceNvFp4Matrix {
            rows,
            k,
            data,
            scales,
            global_scale,
            packed_rows_map,
        })
    }

    /// Copies `m` back to the host (waits for the stream).
    pub fn download(&self, m: &DeviceNvFp4Matrix) -> Result<NvFp4Matrix> {
        let data = self.stream().clone_dtoh(&m.data)?;
        let scales = self.stream().clone_dtoh(&m.scales)?;
        NvFp4Matrix::from_parts(m.rows, m.k, data, scales, m.global_scale)
    }
}
