//! Launch contract of every kernel entry point: the PTX name the host looks up, the block size,
//! and the one definition of its arguments. The entries themselves are listed in the registries
//! (`crate::registry`, `sm90::registry`, `sm100::registry`).
//!
//! Every kernel takes a single parameter, a `#[repr(C)]` struct passed by value, and the host
//! fills that same struct: a [`Kernel<A>`] can only be launched with an `A`, so the argument
//! list cannot disagree between the two sides (order, count or types). The PTX test checks
//! that every entry declares one parameter of `size_of::<A>()` bytes.
//!
//! Rust cannot express launch bounds, so the host crate's `build.rs` reads the registries and writes
//! `.maxntid` (and `.minnctapersm`, which `setmaxnreg` needs) into the PTX after each entry's
//! parameter list; the host launches with the same `threads_per_block`.

use core::marker::PhantomData;

/// One kernel entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Exported PTX name (`#[unsafe(no_mangle)]` function name).
    pub name: &'static str,
    /// Threads per block; written as `.maxntid threads_per_block, 1, 1`.
    pub threads_per_block: u32,
    /// Written as `.minnctapersm` when present (required for `setmaxnreg` to take effect).
    pub min_blocks_per_sm: Option<u32>,
    /// Bytes of the entry's one by-value parameter (its arguments struct).
    pub param_bytes: u32,
}

/// An entry point whose one parameter is an `A`.
#[derive(Debug)]
pub struct Kernel<A> {
    /// Name, block size and launch bounds.
    pub entry: EntryPoint,
    args: PhantomData<fn(A)>,
}

impl<A> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for Kernel<A> {}

impl<A> Kernel<A> {
    /// The entry `name` with `threads_per_block` threads and an optional `.minnctapersm`.
    pub const fn new(name: &'static str, threads_per_block: u32, min_blocks_per_sm: Option<u32>) -> Self {
        Self {
            entry: EntryPoint {
                name,
                threads_per_block,
                min_blocks_per_sm,
                param_bytes: core::mem::size_of::<A>() as u32,
            },
            args: PhantomData,
        }
    }
}

/// A TMA tensor map (`CUtensorMap`: 128 opaque bytes) carried inside a kernel's arguments. The
/// host encodes it for each launch (a host-only driver call: no device memory, no copy, so a
/// launch can be captured in a CUDA graph); the kernel passes TMA the map's generic address in
/// parameter space (`ptx::kernel_param_address!`), as CUDA C++ does for a
/// `__grid_constant__ CUtensorMap`.
///
/// TMA needs the map 64-byte aligned. rustc's nvptx backend rejects parameter types aligned
/// above 16 bytes, so: the type is 16-byte aligned, every arguments struct puts its maps at
/// offsets that are multiples of [`PARAM_ALIGN`] (checked where the struct is defined), and the
/// build declares every entry's parameter `.align PARAM_ALIGN` in the PTX.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorMap(pub [u64; 16]);

impl TensorMap {
    /// Tensors spanning fewer bytes than this get [`Self::with_driver_workaround`]'s bit cleared.
    pub const SMALL_TENSOR_BYTES: u64 = 128 * 1024;
    /// The newest driver (CUDA 13.1, as `cuDriverGetVersion` reports it) that needs the
    /// workaround.
    pub const LAST_AFFECTED_DRIVER: i32 = 13010;

    /// The map as CUTLASS leaves it after encoding (since 4.3.4, `cute/atom/
    /// copy_traits_sm90_tma.hpp`, `make_tma_copy_desc`; its changelog: a driver bug "which will
    /// cause occasionally errors on Blackwell when the tensor's backing memory allocation is less
    /// than 128KB"): with a driver of CUDA 13.1 or older, a map over a tensor whose memory span is
    /// under 128 KiB has bit 21 of its 64-bit word 1 cleared. Both architectures' maps get it,
    /// as CUTLASS does (it checks no architecture).
    pub const fn with_driver_workaround(mut self, driver_version: i32, span_bytes: u64) -> Self {
        if driver_version <= Self::LAST_AFFECTED_DRIVER && span_bytes < Self::SMALL_TENSOR_BYTES {
            self.0[1] &= !(1u64 << 21);
        }
        self
    }

    /// Bytes a 2-D tensor of `dims` (innermost first) spans with rows `row_pitch` bytes apart:
    /// from its first element to the end of its last (CuTe's `cosize` × element bytes).
    pub const fn span_bytes_2d(dims: [u64; 2], row_pitch: u64, element_bytes: u64) -> u64 {
        if dims[0] == 0 || dims[1] == 0 {
            0
        } else {
            (dims[1] - 1) * row_pitch + dims[0] * element_bytes
        }
    }
}

/// Alignment of every kernel's parameter in the PTX (`.param .align 64`; see [`TensorMap`]).
pub const PARAM_ALIGN: usize = 64;
