//! TMA tensor maps (`cuTensorMapEncodeTiled`), kept in device global memory.
//!
//! A kernel parameter cannot carry a 128-byte tensor map from Rust (rustc copies by-value
//! structs to local memory, which TMA cannot read), so each map is encoded on the host, copied to
//! a 128-byte device buffer, and the kernel receives its address.

use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::error::{Error, Result};

/// Token rows per box of the activation map (`nvfp4_kernel::sm90::config::TOKEN_BOX_ROWS`).
const BOX_ROWS: u32 = nvfp4_kernel::sm90::config::TOKEN_BOX_ROWS;
/// Bytes per box row: 256 fp4 values, the span of the 128-byte swizzle.
const BOX_ROW_BYTES: u32 = 128;

/// Encodes the map the sm_90a kernel reads activations through: packed fp4 bytes as UINT8,
/// dims `{k/2, rows}`, box `{128, 64}`, 128-byte swizzle, zeros outside the matrix. Returns the
/// device buffer holding it.
pub(crate) fn packed_rows_map(
    stream: &std::sync::Arc<CudaStream>,
    data: &CudaSlice<u8>,
    rows: usize,
    k: usize,
) -> Result<CudaSlice<u8>> {
    let (address, _sync) = data.device_ptr(stream);
    let map = packed_rows_map_bytes(address, rows, k)?;
    Ok(stream.clone_htod(&map)?)
}

/// The bytes of [`packed_rows_map`]'s map over `rows × k` packed fp4 at device `address` (for
/// callers that place several maps in one buffer).
pub(crate) fn packed_rows_map_bytes(address: u64, rows: usize, k: usize) -> Result<[u8; MAP_BYTES]> {
    let row_bytes = k / 2;
    if !row_bytes.is_multiple_of(16) {
        return Err(Error::invalid(
            "k",
            "must be a multiple of 32 for a TMA tensor map (16-byte row pitch)",
            k,
        ));
    }
    encode_2d_sw128(
        address,
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        [row_bytes as u64, rows as u64],
        row_bytes as u64,
        [BOX_ROW_BYTES, BOX_ROWS],
    )
}

/// Encodes the map the sm_90a kernel reads pre-decoded tokens through
/// (`nvfp4_kernel::sm90::tokens`): `rows × k` fp16 as FLOAT16, dims `{k, rows}`, box
/// `{K_PER_SLICE, box_rows}` (one decoded slice of a `box_rows`-token tile), 128-byte swizzle,
/// zeros outside the matrix. `k` must be a multiple of `K_PER_SLICE` (the kernel's rule).
pub(crate) fn predecoded_tokens_map(
    stream: &std::sync::Arc<CudaStream>,
    tokens: &CudaSlice<u16>,
    rows: usize,
    k: usize,
    box_rows: u32,
) -> Result<CudaSlice<u8>> {
    let (address, _sync) = tokens.device_ptr(stream);
    let map = encode_2d_sw128(
        address,
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        [k as u64, rows as u64],
        2 * k as u64,
        [nvfp4_kernel::sm90::config::K_PER_SLICE, box_rows],
    )?;
    Ok(stream.clone_htod(&map)?)
}

/// Bytes of one tensor map (`CUtensorMap`); device copies must be 64-byte aligned.
pub(crate) const MAP_BYTES: usize = 128;

/// A 2-D, 128-byte-swizzled map of `dims` (innermost first) elements of `data_type` at
/// `address`, rows `row_pitch` bytes apart, boxes of `boxes` elements, zeros outside.
fn encode_2d_sw128(
    address: u64,
    data_type: CUtensorMapDataType,
    dims: [u64; 2],
    row_pitch: u64,
    boxes: [u32; 2],
) -> Result<[u8; MAP_BYTES]> {
    let strides = [row_pitch];
    let element_strides = [1u32, 1];
    let mut map = CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer refers to a live local array of the rank the call states; the caller
    // passes a device allocation that covers `dims` with rows `row_pitch` bytes apart.
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            2,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    status.result()?;
    let mut bytes = [0u8; MAP_BYTES];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque.iter()) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Ok(bytes)
}
