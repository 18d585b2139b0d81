//! [`DeviceBuffer`]: the library's own device memory (plans' workspaces and tables, the
//! quantizer's check words), used only by its kernels and copies, in stream order. Its address
//! is taken once, when it is made, and launches use that address: no cudarc stream bookkeeping
//! in the launch path, which would make a launch on another stream (a borrowed one, for
//! example PyTorch's current stream) wait for events recorded elsewhere, and would break a
//! graph capture. Also the alignment rule of device addresses ([`check_alignment`]).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};

use crate::error::{Error, Result};

/// A device allocation of `len` elements made on, and synchronized with, one stream; then used
/// through its address only.
pub(crate) struct DeviceBuffer<T> {
    // Owns the allocation (freed on drop); never used through cudarc after creation.
    _slice: CudaSlice<T>,
    address: u64,
    len: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits> DeviceBuffer<T> {
    /// `len` (at least 1) zeroed elements; waits for the zeroing, so that any stream may use the
    /// buffer next.
    pub fn zeros(stream: &Arc<CudaStream>, len: usize) -> Result<Self> {
        let slice = stream.alloc_zeros::<T>(len.max(1))?;
        Self::made(stream, slice)
    }

    /// A copy of `values`; waits for the copy.
    pub fn from_host(stream: &Arc<CudaStream>, values: &[T]) -> Result<Self> {
        let slice = stream.clone_htod(values)?;
        Self::made(stream, slice)
    }

    fn made(stream: &Arc<CudaStream>, slice: CudaSlice<T>) -> Result<Self> {
        let (address, len) = (slice.device_ptr(stream).0, slice.len());
        stream.synchronize()?;
        Ok(Self {
            _slice: slice,
            address,
            len,
        })
    }

    /// Device address of the first element.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Enqueues zeroing the first `len` elements on `stream`.
    pub fn zero_on(&self, stream: &CudaStream, len: usize) -> Result<()> {
        stream.context().bind_to_thread()?;
        let bytes = len.min(self.len) * std::mem::size_of::<T>();
        // SAFETY: inside the allocation; stream-ordered like every other use.
        unsafe { cudarc::driver::result::memset_d8_async(self.address, 0, bytes, stream.cu_stream())? };
        Ok(())
    }

    /// Copies `values` to the start of the buffer on `stream` (from pageable memory: the call
    /// returns once `values` may be reused). `values` must fit.
    pub fn upload_on(&self, stream: &CudaStream, values: &[T]) -> Result<()> {
        assert!(values.len() <= self.len, "upload past the buffer");
        stream.context().bind_to_thread()?;
        // SAFETY: inside the allocation; the source is a live host slice of that many elements.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(self.address, values, stream.cu_stream())?;
        }
        Ok(())
    }

    /// The first `len` elements, copied back (waits for the stream).
    pub fn download_on(&self, stream: &CudaStream, len: usize) -> Result<Vec<T>>
    where
        T: Default + Clone,
    {
        stream.context().bind_to_thread()?;
        let mut out = vec![T::default(); len.min(self.len)];
        // SAFETY: inside the allocation; `out` has room for that many elements.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut out, self.address, stream.cu_stream())?;
        }
        stream.synchronize()?;
        Ok(out)
    }
}

/// Checks a caller's device address that a launch reads or writes: not null, and `bytes`-byte
/// aligned ([`check_alignment`]).
pub(crate) fn check_device_address(arg: &'static str, address: u64, bytes: u64) -> Result<()> {
    if address == 0 {
        return Err(Error::invalid(arg, "must be a device address", "null"));
    }
    check_alignment(arg, address, bytes)
}

/// Checks that a device address is `bytes`-aligned.
pub(crate) fn check_alignment(arg: &'static str, address: u64, bytes: u64) -> Result<()> {
    if address.is_multiple_of(bytes) {
        Ok(())
    } else {
        Err(Error::invalid(
            arg,
            format!("device address must be {bytes}-byte aligned"),
            format!("{address:#x}"),
        ))
    }
}
