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

/// Page-locked host memory that small per-launch uploads (a separate-convention group table) are
/// staged in, in turns over `slots` slots. A copy from pageable memory is staged by the driver,
/// which can make the host wait for the stream; a copy from page-locked memory is asynchronous.
/// Before a slot is rewritten the host waits for that slot's previous copy, which `slots - 1`
/// later uploads follow in the stream, so the host runs ahead of the GPU by that many launches.
pub(crate) struct StagingRing {
    slots: Vec<StagingSlot>,
    bytes: usize,
    next: usize,
    context: Arc<cudarc::driver::CudaContext>,
}

struct StagingSlot {
    host: *mut u8,
    /// Recorded after the slot's last copy.
    copied: cudarc::driver::CudaEvent,
    used: bool,
}

// SAFETY: the slots' host memory is owned by the ring and only touched through `&mut self`.
unsafe impl Send for StagingRing {}

impl StagingRing {
    /// `slots` slots of `bytes` bytes each in the stream's context.
    pub fn new(stream: &Arc<CudaStream>, bytes: usize, slots: usize) -> Result<Self> {
        let context = stream.context();
        context.bind_to_thread()?;
        let mut ring = Self {
            slots: Vec::with_capacity(slots),
            bytes: bytes.max(1),
            next: 0,
            context: context.clone(),
        };
        for _ in 0..slots.max(1) {
            // The event first: a failure then leaves no host memory behind (the slots already
            // made are freed by the ring's drop).
            let copied = context.new_event(None)?;
            // SAFETY: a fresh allocation of `bytes` bytes, freed on drop.
            let host = unsafe { cudarc::driver::result::malloc_host(ring.bytes, 0)? }.cast::<u8>();
            ring.slots.push(StagingSlot {
                host,
                copied,
                used: false,
            });
        }
        Ok(ring)
    }

    /// Enqueues copying `values` to device address `destination` on `stream` through the next
    /// slot (waiting on the host for that slot's previous copy only).
    pub fn upload(&mut self, stream: &CudaStream, destination: u64, values: &[u8]) -> Result<()> {
        assert!(values.len() <= self.bytes, "staged upload past the slot");
        let index = self.next;
        self.next = (index + 1) % self.slots.len();
        let slot = &mut self.slots[index];
        if slot.used {
            slot.copied.synchronize()?;
        }
        stream.context().bind_to_thread()?;
        // SAFETY: the slot holds `bytes ≥ values.len()` bytes and its last copy has completed;
        // the copy reads it in stream order, and the slot is not rewritten before `copied`.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), slot.host, values.len());
            let staged = std::slice::from_raw_parts(slot.host.cast_const(), values.len());
            cudarc::driver::result::memcpy_htod_async(destination, staged, stream.cu_stream())?;
        }
        slot.used = true;
        if let Err(error) = slot.copied.record(stream) {
            // The copy is queued but its event is not: wait for the stream, so that the slot is
            // free when it is next rewritten.
            let _ = stream.synchronize();
            return Err(error.into());
        }
        Ok(())
    }
}

impl Drop for StagingRing {
    fn drop(&mut self) {
        let _ = self.context.bind_to_thread();
        for slot in &self.slots {
            // A copy still queued reads the slot: wait for it before freeing (errors cannot be
            // reported from a drop; the memory is freed regardless).
            if slot.used {
                let _ = slot.copied.synchronize();
            }
            // SAFETY: allocated by `malloc_host` in `new`, freed once.
            let _ = unsafe { cudarc::driver::result::free_host(slot.host.cast()) };
        }
    }
}
