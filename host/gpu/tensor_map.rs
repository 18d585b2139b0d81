//! TMA tensor maps (`cuTensorMapEncodeTiled`): encoded on the host, a host-only driver call.
//!
//! A map reaches a kernel in one of two ways: inside its arguments
//! ([`TensorMap`](nvfp4_kernel::launch::TensorMap) fields, read by TMA in parameter space; no
//! device memory and no copy, so the launch can be captured in a graph), or, where a launch needs
//! more maps than its arguments hold (the separate convention's per-group maps), copied to
//! device memory with the launch's group table ([`bytes_of`]).

use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use nvfp4_kernel::launch::TensorMap;

use crate::error::{Error, Result};

/// Token rows per box of the activation map (`nvfp4_kernel::sm90::config::TOKEN_BOX_ROWS`).
const BOX_ROWS: u32 = nvfp4_kernel::sm90::config::TOKEN_BOX_ROWS;
/// Bytes per box row: 256 fp4 values, the span of the 128-byte swizzle.
const BOX_ROW_BYTES: u32 = 128;

/// Bytes of one tensor map (`CUtensorMap`); device copies must be 64-byte aligned.
pub(crate) const MAP_BYTES: usize = std::mem::size_of::<TensorMap>();

/// The map the kernels read packed fp4 rows through (activations on both architectures,
/// weights on Blackwell): `rows × k` packed bytes at device `address` as UINT8, dims
/// `{k/2, rows}`, box `{128, 64}`, 128-byte swizzle, zeros outside the matrix.
pub(crate) fn packed_rows(address: u64, rows: usize, k: usize) -> Result<TensorMap> {
    packed_rows_map(
        address,
        rows,
        k,
        [BOX_ROW_BYTES, BOX_ROWS],
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    )
}

/// The map the sm_90a grouped kernels read packed fp4 weight rows through (their weight ring):
/// as [`packed_rows`], but box `{WEIGHT_BOX_BYTES, WEIGHT_BOX_ROWS}` (one chunk of 64 rows'
/// stage) without swizzle.
pub(crate) fn sm90_weight_rows(address: u64, rows: usize, k: usize) -> Result<TensorMap> {
    use nvfp4_kernel::sm90::config::{WEIGHT_BOX_BYTES, WEIGHT_BOX_ROWS};
    packed_rows_map(
        address,
        rows,
        k,
        [WEIGHT_BOX_BYTES, WEIGHT_BOX_ROWS],
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
    )
}

/// `rows × k` packed fp4 bytes at `address` as UINT8, dims `{k/2, rows}`, boxes of `boxes`
/// stored with `swizzle`, zeros outside the matrix.
fn packed_rows_map(
    address: u64,
    rows: usize,
    k: usize,
    boxes: [u32; 2],
    swizzle: CUtensorMapSwizzle,
) -> Result<TensorMap> {
    let row_bytes = k / 2;
    if !row_bytes.is_multiple_of(16) {
        return Err(Error::invalid(
            "k",
            "must be a multiple of 32 for a TMA tensor map (16-byte row pitch)",
            k,
        ));
    }
    encode_2d(
        address,
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        1,
        [row_bytes as u64, rows as u64],
        row_bytes as u64,
        boxes,
        swizzle,
    )
}

/// The map the sm_90a kernels read pre-decoded tokens through (`nvfp4_kernel::sm90::tokens`):
/// `rows × k` fp16 at device `address` as FLOAT16, dims `{k, rows}`, box `{K_PER_SLICE,
/// box_rows}` (one decoded slice of a `box_rows`-token tile), 128-byte swizzle, zeros outside
/// the matrix. `k` must be a multiple of `K_PER_SLICE` (the kernel's rule).
pub(crate) fn predecoded_tokens(address: u64, rows: usize, k: usize, box_rows: u32) -> Result<TensorMap> {
    encode_2d(
        address,
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        2,
        [k as u64, rows as u64],
        2 * k as u64,
        [nvfp4_kernel::sm90::config::K_PER_SLICE, box_rows],
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    )
}

/// The bytes of `maps`, back to back.
pub(crate) fn bytes_of(maps: &[TensorMap]) -> Vec<u8> {
    maps.iter()
        .flat_map(|map| map.0.iter().flat_map(|word| word.to_le_bytes()))
        .collect()
}

/// A 2-D map of `dims` (innermost first) elements of `data_type` (`element_bytes` each) at
/// `address`, rows `row_pitch` bytes apart, boxes of `boxes` elements stored with `swizzle`,
/// zeros outside; with CUTLASS's driver workaround applied ([`TensorMap::with_driver_workaround`]).
fn encode_2d(
    address: u64,
    data_type: CUtensorMapDataType,
    element_bytes: u64,
    dims: [u64; 2],
    row_pitch: u64,
    boxes: [u32; 2],
    swizzle: CUtensorMapSwizzle,
) -> Result<TensorMap> {
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
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    status.result()?;
    let span = TensorMap::span_bytes_2d(dims, row_pitch, element_bytes);
    Ok(TensorMap(map.opaque).with_driver_workaround(driver_version()?, span))
}

/// The driver's CUDA version (`cuDriverGetVersion`: 1000 · major + 10 · minor), asked once.
pub fn driver_version() -> Result<i32> {
    static VERSION: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(*version);
    }
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(*VERSION.get_or_init(|| version))
}
