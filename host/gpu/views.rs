//! Views of device memory that ops launch on: an NVFP4 matrix ([`NvFp4Ref`]), an fp16 output
//! ([`F16Mut`]) and an NVFP4 output ([`NvFp4Mut`]), either the library's own ([`DeviceNvFp4Matrix::view`], [`F16Mut::of`]) or the
//! caller's (`from_raw`: addresses from another framework, e.g. PyTorch's `data_ptr()`). A view
//! holds addresses, a shape and a global scale; it neither owns nor frees the memory, and
//! launching on it allocates nothing, copies nothing between host and device and does not
//! synchronize, so the launch can be captured in a CUDA graph.

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::f16;
use nvfp4_kernel::layout::BlockedScales;

use super::buffer::check_device_address;
use crate::error::{Error, Result};
use crate::gpu::{DeviceNvFp4Matrix, HalfFormat};
use crate::matrix::{validate_global_scale, validate_shape};

/// An NVFP4 matrix in device memory: `rows × k/2` bytes of packed e2m1 (row-major, two values
/// a byte, low nibble first), its blocked e4m3 scales (`BlockedScales::new(rows, k).len()`
/// bytes), and its optional global scale: a host value, and optionally a second factor in device
/// memory ([`NvFp4Ref::with_device_global_scale`]). Both addresses are 16-byte aligned.
#[derive(Clone, Copy, Debug)]
pub struct NvFp4Ref<'a> {
    data: u64,
    scales: u64,
    rows: usize,
    k: usize,
    global_scale: Option<f32>,
    /// Address of an f32 in device memory that multiplies `global_scale`, or 0.
    device_global_scale: u64,
    memory: PhantomData<&'a ()>,
}

impl NvFp4Ref<'static> {
    /// A view of caller-owned device memory. Checks the shape (`rows ≥ 1`, `k` a positive
    /// multiple of 16), the global scale (finite, positive), that neither address is null, and
    /// the alignments.
    ///
    /// # Safety
    /// `data` and `scales` are device addresses in the GPU's context with at least `rows·k/2` and
    /// `BlockedScales::new(rows, k).len()` bytes, which stay allocated, and are not written by
    /// other work, until every launch that reads them has completed.
    pub unsafe fn from_raw(
        data: u64,
        scales: u64,
        rows: usize,
        k: usize,
        global_scale: Option<f32>,
    ) -> Result<Self> {
        check_raw_matrix(data, scales, rows, k, global_scale)?;
        Ok(Self {
            data,
            scales,
            rows,
            k,
            global_scale,
            device_global_scale: 0,
            memory: PhantomData,
        })
    }
}

impl NvFp4Ref<'_> {
    /// This view with a global-scale factor that lives in device memory: the f32 at `scale`
    /// multiplies the matrix's values on top of [`Self::global_scale`], read by the kernel when
    /// it runs (after the previous kernel of the stream), so a scale that a previous kernel
    /// writes, or that a caller updates between CUDA graph replays, needs no host round trip.
    /// The dense dual GEMM and GEMM take such views; the other ops refuse them with a typed
    /// error. The value must be finite and positive, as a host global scale, and keep a dual
    /// GEMM's gate and up scales within the host rule on their product (at most `2¹²⁶` with the
    /// kernels' operand rescale): it is not checked (the kernels never read it back to the
    /// host), and a NaN or infinity there makes the results so. Checks that `scale` is not null
    /// and is 4-byte aligned.
    ///
    /// # Safety
    /// `scale` is a device address in the GPU's context holding an f32 that stays allocated
    /// until every launch that reads it has completed.
    pub unsafe fn with_device_global_scale(self, scale: u64) -> Result<Self> {
        check_device_address("device global scale", scale, 4)?;
        Ok(Self {
            device_global_scale: scale,
            ..self
        })
    }

    /// The address of the global-scale factor in device memory, if any
    /// ([`Self::with_device_global_scale`]).
    pub fn device_global_scale(&self) -> Option<u64> {
        (self.device_global_scale != 0).then_some(self.device_global_scale)
    }

    /// Refuses a view with a device global scale for an op that does not read one.
    pub(crate) fn expect_host_global_scale(&self, name: &'static str, op: &str) -> Result<()> {
        match self.device_global_scale() {
            None => Ok(()),
            Some(address) => Err(Error::invalid(
                name,
                format!("{op} takes host global scales only (device ones: the dense dual GEMM and GEMM)"),
                format!("a device global scale at {address:#x}"),
            )),
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// K (fp4 elements per row).
    pub fn k(&self) -> usize {
        self.k
    }

    /// The global scale, if any.
    pub fn global_scale(&self) -> Option<f32> {
        self.global_scale
    }

    /// Device address of the packed data.
    pub fn data_address(&self) -> u64 {
        self.data
    }

    /// Device address of the blocked scales.
    pub fn scales_address(&self) -> u64 {
        self.scales
    }

    /// Bytes of the blocked scales.
    pub fn scale_bytes(&self) -> usize {
        BlockedScales::new(self.rows, self.k).len()
    }

    /// Checks the shape against `(rows, k)`, naming the operand.
    pub(crate) fn expect_shape(&self, name: &str, rows: usize, k: usize) -> Result<()> {
        expect_matrix_shape(name, (self.rows, self.k), (rows, k))
    }
}

impl DeviceNvFp4Matrix {
    /// The matrix as a view on `stream` (the stream the launch that reads it runs on: with
    /// cudarc's event tracking, the view's address is taken in that stream's order).
    pub fn view<'a>(&'a self, stream: &CudaStream) -> NvFp4Ref<'a> {
        NvFp4Ref {
            data: self.data.device_ptr(stream).0,
            scales: self.scales.device_ptr(stream).0,
            rows: self.rows(),
            k: self.k(),
            global_scale: self.global_scale,
            device_global_scale: 0,
            memory: PhantomData,
        }
    }
}

/// `len` 16-bit floats in device memory, 16-byte aligned, that an op writes: fp16, or bf16
/// for a view made by [`F16Mut::from_raw_bf16`] or [`F16Mut::of_bf16`] (which the dense dual
/// GEMM and GEMM write; the other ops refuse it with a typed error).
#[derive(Debug)]
pub struct F16Mut<'a> {
    ptr: u64,
    len: usize,
    format: HalfFormat,
    memory: PhantomData<&'a mut ()>,
}

impl F16Mut<'static> {
    /// A view of caller-owned device memory (checks the alignment).
    ///
    /// # Safety
    /// `ptr` is a device address in the GPU's context with at least `len` fp16 values, which
    /// stay allocated, and are neither read nor written by other work, until every launch that
    /// writes them has completed.
    pub unsafe fn from_raw(ptr: u64, len: usize) -> Result<Self> {
        check_device_address("out", ptr, 16)?;
        Ok(Self {
            ptr,
            len,
            format: HalfFormat::F16,
            memory: PhantomData,
        })
    }

    /// [`Self::from_raw`] for `len` bf16 values.
    ///
    /// # Safety
    /// As [`Self::from_raw`], for bf16 values.
    pub unsafe fn from_raw_bf16(ptr: u64, len: usize) -> Result<Self> {
        // SAFETY: the caller's.
        let view = unsafe { Self::from_raw(ptr, len) }?;
        Ok(Self {
            format: HalfFormat::Bf16,
            ..view
        })
    }
}

impl<'a> F16Mut<'a> {
    /// `slice` as an output view on `stream` (see [`DeviceNvFp4Matrix::view`]).
    pub fn of(slice: &'a mut CudaSlice<f16>, stream: &CudaStream) -> Self {
        Self {
            len: slice.len(),
            ptr: slice.device_ptr_mut(stream).0,
            format: HalfFormat::F16,
            memory: PhantomData,
        }
    }

    /// A bf16 `slice` as an output view on `stream`.
    pub fn of_bf16(slice: &'a mut CudaSlice<half::bf16>, stream: &CudaStream) -> Self {
        Self {
            len: slice.len(),
            ptr: slice.device_ptr_mut(stream).0,
            format: HalfFormat::Bf16,
            memory: PhantomData,
        }
    }

    /// The values' format.
    pub fn format(&self) -> HalfFormat {
        self.format
    }

    /// Refuses a bf16 view for an op that writes fp16 only.
    pub(crate) fn expect_f16(&self, arg: &'static str, op: &str) -> Result<()> {
        match self.format {
            HalfFormat::F16 => Ok(()),
            HalfFormat::Bf16 => Err(Error::invalid(
                arg,
                format!("{op} writes fp16 only (bf16: the dense dual GEMM and GEMM on sm_90a)"),
                "a bf16 view",
            )),
        }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device address of the first element.
    pub fn address(&self) -> u64 {
        self.ptr
    }

    /// Checks the length, naming the argument.
    pub(crate) fn expect_len(&self, arg: &'static str, expected: usize) -> Result<()> {
        if self.len == expected {
            Ok(())
        } else {
            Err(Error::BufferLength {
                arg,
                expected,
                got: self.len,
            })
        }
    }
}

/// An NVFP4 matrix in device memory that an op writes (the dual GEMM's NVFP4 output): the
/// packed data, the blocked scales (every byte written, padding as zeros) and the global scale
/// the op quantizes with, as [`NvFp4Ref`] describes them.
#[derive(Debug)]
pub struct NvFp4Mut<'a> {
    data: u64,
    scales: u64,
    rows: usize,
    k: usize,
    global_scale: f32,
    memory: PhantomData<&'a mut ()>,
}

impl NvFp4Mut<'static> {
    /// A view of caller-owned device memory. Checks the shape (`rows ≥ 1`, `k` a positive
    /// multiple of 16), the global scale (finite, positive), that neither address is null, and
    /// the alignments.
    ///
    /// # Safety
    /// `data` and `scales` are device addresses in the GPU's context with at least `rows·k/2` and
    /// `BlockedScales::new(rows, k).len()` bytes, which stay allocated, and are neither read nor
    /// written by other work, until every launch that writes them has completed.
    pub unsafe fn from_raw(data: u64, scales: u64, rows: usize, k: usize, global_scale: f32) -> Result<Self> {
        check_raw_matrix(data, scales, rows, k, Some(global_scale))?;
        Ok(Self {
            data,
            scales,
            rows,
            k,
            global_scale,
            memory: PhantomData,
        })
    }
}

impl<'a> NvFp4Mut<'a> {
    /// `matrix` as an output view on `stream` (see [`DeviceNvFp4Matrix::view`]) that an op
    /// writes with `global_scale`, which it also records as the matrix's (checked: finite and
    /// positive).
    pub fn of(matrix: &'a mut DeviceNvFp4Matrix, stream: &CudaStream, global_scale: f32) -> Result<Self> {
        validate_global_scale(Some(global_scale))?;
        matrix.global_scale = Some(global_scale);
        Ok(Self {
            rows: matrix.rows(),
            k: matrix.k(),
            data: matrix.data.device_ptr_mut(stream).0,
            scales: matrix.scales.device_ptr_mut(stream).0,
            global_scale,
            memory: PhantomData,
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// K (fp4 elements per row).
    pub fn k(&self) -> usize {
        self.k
    }

    /// The global scale the op quantizes with.
    pub fn global_scale(&self) -> f32 {
        self.global_scale
    }

    /// Device address of the packed data.
    pub fn data_address(&self) -> u64 {
        self.data
    }

    /// Device address of the blocked scales.
    pub fn scales_address(&self) -> u64 {
        self.scales
    }

    /// Checks the shape against `(rows, k)`, naming the operand.
    pub(crate) fn expect_shape(&self, name: &str, rows: usize, k: usize) -> Result<()> {
        expect_matrix_shape(name, (self.rows, self.k), (rows, k))
    }
}

/// The checks of an NVFP4 matrix in caller memory: shape, global scale, and both addresses
/// (not null, 16-byte aligned).
fn check_raw_matrix(data: u64, scales: u64, rows: usize, k: usize, global_scale: Option<f32>) -> Result<()> {
    validate_shape(rows, k)?;
    validate_global_scale(global_scale)?;
    check_device_address("data", data, 16)?;
    check_device_address("scales", scales, 16)
}

/// `Ok` when a view of shape `got` is the `wanted` one, else the mismatch naming `name`.
fn expect_matrix_shape(name: &str, got: (usize, usize), wanted: (usize, usize)) -> Result<()> {
    if got == wanted {
        Ok(())
    } else {
        Err(Error::ShapeMismatch(format!(
            "`{name}` is {} × {}, the plan needs {} × {}",
            got.0, got.1, wanted.0, wanted.1
        )))
    }
}
