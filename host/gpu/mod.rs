//! The GPU runtime: opening a device, loading the kernel module of its architecture from its
//! registry, the library's device memory, NVFP4 matrices in device memory and views of
//! caller-owned memory, tensor maps, and launching. The ops live above it (`crate::quantize`,
//! `crate::dequantize`, `crate::elementwise`, `crate::dual_gemm`, `crate::gemm`,
//! `crate::grouped`) and this module calls none of them.
//!
//! Everything goes through `cudarc`'s driver API with dynamic loading, so the library builds and
//! its CPU paths run on machines without a GPU or driver; [`Gpu::open`] reports those cases as
//! typed errors.

pub(crate) mod buffer;
mod matrix;
pub(crate) mod tensor_map;
pub use tensor_map::driver_version;
mod views;

pub use matrix::DeviceNvFp4Matrix;
pub use views::{F16Mut, NvFp4Mut, NvFp4Ref};

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute::{
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use nvfp4_kernel::common::{
    AmaxArgs, CombineArgs, DequantizeArgs, GatherGroupedArgs, OccupyArgs, QuantizeArgs, RouteArgs,
    SiluMulArgs,
};
use nvfp4_kernel::grouped::{GroupedPrepareArgs, SeparatePrepareArgs};
use nvfp4_kernel::launch::Kernel;
use nvfp4_kernel::registry;
use nvfp4_kernel::sm90::config::{self as sm90, Tile};
use nvfp4_kernel::sm90::registry::{self as sm90_registry, TileEpilogue};
use nvfp4_kernel::sm100::config as sm100;
use nvfp4_kernel::sm100::registry as sm100_registry;

use crate::error::{Error, Result};
use crate::kernels::{PTX_SM90A, PTX_SM100F};

/// The GPU architectures this library has kernels for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Hopper, compute capability 9.0 (H100, H200): wgmma on fp16 with in-kernel fp4 decoding.
    /// PTX target `sm_90a`.
    Sm90a,
    /// Blackwell data-center GPUs, compute capability 10.0 (B200, GB200) and 10.3 (B300,
    /// GB300): tcgen05 block-scaled fp4 MMA. PTX target `sm_100f`, the family target that the
    /// driver compiles for both (never run here: no Blackwell GPU was available).
    Sm100f,
}

impl Arch {
    /// The PTX target the module for this architecture is built for.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Sm90a => "sm_90a",
            Arch::Sm100f => "sm_100f",
        }
    }

    /// The architecture for a compute capability, or [`Error::UnsupportedGpu`].
    pub fn from_compute_capability(name: &str, major: i32, minor: i32) -> Result<Self> {
        match (major, minor) {
            (9, 0) => Ok(Arch::Sm90a),
            (10, 0) | (10, 3) => Ok(Arch::Sm100f),
            _ => Err(Error::UnsupportedGpu {
                name: name.to_string(),
                major,
                minor,
            }),
        }
    }

    /// The PTX module for this architecture.
    pub fn ptx(self) -> &'static str {
        match self {
            Arch::Sm90a => PTX_SM90A,
            Arch::Sm100f => PTX_SM100F,
        }
    }
}

/// Whether a CUDA driver library can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen libcuda by its usual names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The typed error for a step that a CUDA graph capture cannot hold.
fn capturing(what: &'static str) -> Error {
    Error::invalid(
        what,
        "allocates or waits for the stream, which a CUDA graph capture cannot hold: do it once before capturing",
        "a stream being captured",
    )
}

/// Whether `raw` is being captured into a CUDA graph.
///
/// # Safety
/// `raw` is a valid `CUstream` (or 0, the legacy stream of the thread's current context).
unsafe fn raw_stream_is_capturing(raw: cudarc::driver::sys::CUstream) -> Result<bool> {
    use cudarc::driver::sys;
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: the caller's contract; `status` is a valid out-pointer.
    unsafe { sys::cuStreamIsCapturing(raw, &mut status) }.result()?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Refuses `what` while the stream `raw` of device `ordinal` (a stream of its primary context,
/// as PyTorch's are, or 0) is being captured into a CUDA graph: for steps that precede a
/// [`Gpu`] handle, such as [`Gpu::open`], which loads the kernels and allocates.
///
/// # Safety
/// `raw` is a valid `CUstream` of device `ordinal`'s primary context, or 0.
pub unsafe fn check_stream_not_capturing(ordinal: usize, raw: u64, what: &'static str) -> Result<()> {
    if !driver_available() {
        return Err(Error::NoDriver);
    }
    // Held through the query: dropping it releases the primary context, which destroys it
    // when no one else (PyTorch) retains it yet, and the query would then fail.
    let context = CudaContext::new(ordinal)?;
    context.bind_to_thread()?;
    // SAFETY: the caller's contract.
    let capturing_now = unsafe { raw_stream_is_capturing(raw as cudarc::driver::sys::CUstream) }?;
    drop(context);
    if capturing_now {
        Err(capturing(what))
    } else {
        Ok(())
    }
}

/// A kernel of the loaded module, launchable only with its own arguments struct `A`
/// ([`nvfp4_kernel::launch::Kernel`]).
pub(crate) struct LoadedKernel<A> {
    function: CudaFunction,
    pub(crate) kernel: Kernel<A>,
    /// Blocks of the entry's size (no dynamic shared memory) that fit on one SM at once, as
    /// the driver's occupancy calculator says (registers, static shared memory, block limits).
    resident_per_sm: u32,
}

impl<A> LoadedKernel<A> {
    fn load(module: &Arc<CudaModule>, kernel: Kernel<A>) -> Result<Self> {
        let function = module.load_function(kernel.entry.name)?;
        let resident_per_sm = function.occupancy_max_active_blocks_per_multiprocessor(
            kernel.entry.threads_per_block,
            0,
            None,
        )?;
        Ok(Self {
            function,
            kernel,
            resident_per_sm: resident_per_sm.max(1),
        })
    }

    /// Blocks of the entry's size with `shared_bytes` of dynamic shared memory that fit on one
    /// SM at once (driver occupancy; 0 when one does not fit).
    pub(crate) fn resident_per_sm_with(&self, shared_bytes: u32) -> Result<u32> {
        self.resident_per_sm_of(self.kernel.entry.threads_per_block, shared_bytes)
    }

    /// Blocks of `threads` threads (at most the entry's size) with `shared_bytes` of dynamic
    /// shared memory that fit on one SM at once (driver occupancy; 0 when one does not fit).
    pub(crate) fn resident_per_sm_of(&self, threads: u32, shared_bytes: u32) -> Result<u32> {
        Ok(self.function.occupancy_max_active_blocks_per_multiprocessor(
            threads,
            shared_bytes as usize,
            None,
        )?)
    }

    /// [`LoadedKernel::load`], allowing up to `shared_bytes` of dynamic shared memory per block
    /// (the most any launch of it asks for).
    fn load_with_shared(module: &Arc<CudaModule>, kernel: Kernel<A>, shared_bytes: u32) -> Result<Self> {
        let loaded = Self::load(module, kernel)?;
        loaded.allow_shared_bytes(shared_bytes)?;
        Ok(loaded)
    }

    /// Allows up to `bytes` of dynamic shared memory per block.
    fn allow_shared_bytes(&self, bytes: u32) -> Result<()> {
        self.function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )?;
        Ok(())
    }

    /// Enqueues the kernel on `stream` with `blocks` blocks of the entry's block size and
    /// `shared_bytes` of dynamic shared memory, through `cuLaunchKernelEx`. With `dependent`, as a
    /// programmatic dependent launch: its CTAs may start while the stream's previous kernel
    /// finishes, so the kernel must execute `griddepcontrol.wait` before it touches memory that
    /// earlier work writes (every kernel of this library that is launched that way does).
    ///
    /// # Safety
    /// `args` must satisfy the kernel's contract: every pointer alive and valid for what the
    /// kernel reads and writes.
    pub(crate) unsafe fn launch(
        &self,
        stream: &CudaStream,
        blocks: u32,
        shared_bytes: u32,
        args: &A,
        dependent: bool,
    ) -> Result<()> {
        let threads = self.kernel.entry.threads_per_block;
        // SAFETY: forwarded.
        unsafe { self.launch_blocks_of(stream, [blocks, threads], shared_bytes, args, dependent) }
    }

    /// [`LoadedKernel::launch`] with blocks of `threads` threads (at most the entry's size; for
    /// kernels that take their block size from the launch).
    ///
    /// # Safety
    /// As [`LoadedKernel::launch`], and the kernel's contract allows `threads` threads a block.
    pub(crate) unsafe fn launch_blocks_of(
        &self,
        stream: &CudaStream,
        [blocks, threads]: [u32; 2],
        shared_bytes: u32,
        args: &A,
        dependent: bool,
    ) -> Result<()> {
        use cudarc::driver::sys;
        debug_assert!(threads <= self.kernel.entry.threads_per_block);
        // The kernel's one parameter is an `A` by value: the driver copies its bytes.
        let mut params = [(args as *const A).cast_mut().cast::<std::ffi::c_void>()];
        // SAFETY: a plain C union; all-zero is a valid value of every member.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        let mut attribute = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        };
        let config = sys::CUlaunchConfig {
            gridDimX: blocks,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: shared_bytes,
            hStream: stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(dependent),
        };
        stream.context().bind_to_thread()?;
        // SAFETY: the config, the attribute and the argument bytes outlive the call (the driver
        // copies them); the caller guarantees that the arguments satisfy the kernel's contract,
        // and `A` is the kernel's parameter type by construction.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()?;
        Ok(())
    }
}

/// An open GPU: its context, a stream, and the kernel module for its architecture.
pub struct Gpu {
    stream: Arc<CudaStream>,
    arch: Arch,
    name: String,
    multiprocessors: u32,
    shared_bytes_per_block: u32,
    pub(crate) kernels: Kernels,
    _module: Arc<CudaModule>,
}

/// 16-bit float formats (the dequantizer's outputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HalfFormat {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

/// Loads every kernel of a registry list, in its order.
fn load_all<A>(module: &Arc<CudaModule>, kernels: &[Kernel<A>]) -> Result<Vec<LoadedKernel<A>>> {
    kernels
        .iter()
        .map(|&kernel| LoadedKernel::load(module, kernel))
        .collect()
}

/// The loaded kernels of the module.
pub(crate) struct Kernels {
    pub dequantize_f16: LoadedKernel<DequantizeArgs>,
    pub dequantize_bf16: LoadedKernel<DequantizeArgs>,
    pub silu_mul_f16: LoadedKernel<SiluMulArgs>,
    pub silu_mul_bf16: LoadedKernel<SiluMulArgs>,
    /// The Mixture-of-Experts combine into fp16 and bf16 (in that order).
    pub combine: [LoadedKernel<CombineArgs>; 2],
    /// The grouped-layout gather.
    pub gather_grouped: LoadedKernel<GatherGroupedArgs>,
    /// The Mixture-of-Experts routing, and its counting pass.
    pub route: LoadedKernel<RouteArgs>,
    pub route_count: LoadedKernel<RouteArgs>,
    /// Quantization and amax kernels for f32, f16 and bf16 input (in that order).
    pub quantize: Vec<LoadedKernel<QuantizeArgs>>,
    pub amax: Vec<LoadedKernel<AmaxArgs>>,
    pub occupy: LoadedKernel<OccupyArgs>,
    pub sm90: Option<Sm90Kernels>,
    pub sm100: Option<Sm100Kernels>,
}

/// A tile's kernels as loaded; `T` is the architecture's tile, `D` and `G` its dense and
/// grouped arguments.
pub(crate) struct LoadedTile<T, D, G> {
    tile: T,
    dense: LoadedKernel<D>,
    /// The dense dual GEMM writing NVFP4, where the architecture has one.
    dense_nvfp4: Option<LoadedKernel<D>>,
    /// The dense plain GEMM, where the architecture has one.
    dense_plain: Option<LoadedKernel<D>>,
    /// The dense dual GEMM and plain GEMM writing bf16, where the architecture has them.
    dense_bf16: Option<[LoadedKernel<D>; 2]>,
    /// Gated (dual), plain, then (where the architecture has one) gated writing NVFP4; absent
    /// for a tile without grouped kernels.
    grouped: Option<Vec<LoadedKernel<G>>>,
}

impl<T, D, G> LoadedTile<T, D, G> {
    /// The dense kernel of `epilogue`, where the architecture has it.
    fn dense_of(&self, epilogue: TileEpilogue) -> Option<&LoadedKernel<D>> {
        match epilogue {
            TileEpilogue::Gated => Some(&self.dense),
            TileEpilogue::GatedNvfp4 => self.dense_nvfp4.as_ref(),
            TileEpilogue::Plain => self.dense_plain.as_ref(),
            TileEpilogue::GatedBf16 => self.dense_bf16.as_ref().map(|k| &k[0]),
            TileEpilogue::PlainBf16 => self.dense_bf16.as_ref().map(|k| &k[1]),
        }
    }
}

/// The grouped kernel of `epilogue` (its name, and its index in [`LoadedTile`]'s grouped
/// kernels; None for bf16 output, which no grouped kernel writes).
fn grouped_kernel_index(epilogue: TileEpilogue) -> (&'static str, Option<usize>) {
    match epilogue {
        TileEpilogue::Gated => ("grouped dual GEMM", Some(0)),
        TileEpilogue::Plain => ("grouped GEMM", Some(1)),
        TileEpilogue::GatedNvfp4 => ("grouped dual GEMM with NVFP4 output", Some(2)),
        TileEpilogue::GatedBf16 => ("grouped dual GEMM with bf16 output", None),
        TileEpilogue::PlainBf16 => ("grouped GEMM with bf16 output", None),
    }
}

/// Finds the loaded kernel of `tile`, or names what is missing.
fn find_tiled<'a, T: PartialEq + std::fmt::Debug, D, G, K>(
    tiles: &'a [LoadedTile<T, D, G>],
    tile: T,
    arch: Arch,
    what: &str,
    pick: impl Fn(&'a LoadedTile<T, D, G>) -> Option<&'a K>,
) -> Result<&'a K> {
    tiles
        .iter()
        .find(|loaded| loaded.tile == tile)
        .and_then(pick)
        .ok_or_else(|| Error::MissingKernel {
            kernel: format!("{what} for {tile:?}"),
            arch: arch.name(),
        })
}

/// A decode-size entry's kernel of `epilogue` in its five kernels (`DecodeEntry::kernels`'
/// order: dual GEMM, NVFP4, plain GEMM, dual bf16, plain bf16).
fn decode_index(epilogue: TileEpilogue) -> usize {
    match epilogue {
        TileEpilogue::Gated => 0,
        TileEpilogue::GatedNvfp4 => 1,
        TileEpilogue::Plain => 2,
        TileEpilogue::GatedBf16 => 3,
        TileEpilogue::PlainBf16 => 4,
    }
}

/// The kernel of `epilogue` among the dual GEMM's three of a paired or small-CTA decode-size
/// entry (fp16, NVFP4, bf16 output); none for the plain GEMM.
fn gated_decode_index(epilogue: TileEpilogue) -> Option<usize> {
    match epilogue {
        TileEpilogue::Gated => Some(0),
        TileEpilogue::GatedNvfp4 => Some(1),
        TileEpilogue::GatedBf16 => Some(2),
        TileEpilogue::Plain | TileEpilogue::PlainBf16 => None,
    }
}

/// Which of the decode-size kernel's entries a split launches (`nvfp4_kernel::sm90::decode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecodeForm {
    /// `DECODE_WARPS_PER_MATRIX` warps on each matrix, one step an iteration.
    Standard,
    /// The one-tile dual GEMM's entries with two steps an iteration
    /// (`sm90::DECODE_PAIRED_MIN_STEPS`).
    Paired,
    /// Two token tiles, `DECODE_WIDE_WARPS_PER_MATRIX` warps on each matrix: twice the outputs a
    /// CTA.
    Wide,
}

impl DecodeForm {
    /// Warps on each matrix of the form's CTAs.
    pub(crate) const fn warps_per_matrix(self) -> u32 {
        match self {
            Self::Standard | Self::Paired => sm90::DECODE_WARPS_PER_MATRIX,
            Self::Wide => sm90::DECODE_WIDE_WARPS_PER_MATRIX,
        }
    }
}

/// The Hopper module's kernels, loaded from its registry (`nvfp4_kernel::sm90::registry`).
pub(crate) struct Sm90Kernels {
    tiled: Vec<LoadedTile<Tile, sm90::DualGemmArgs, sm90::GroupedArgs>>,
    pub predecode_tokens: LoadedKernel<sm90::PredecodeArgs>,
    /// The decode-size kernels per count of 8-token tiles: the dual GEMM, the dual GEMM
    /// writing NVFP4, the plain GEMM, the dual and plain GEMM writing bf16.
    decode: Vec<(u32, [LoadedKernel<sm90::DecodeArgs>; 5])>,
    /// The one-tile dual GEMM's paired decode-size entries: fp16, NVFP4 and bf16 output.
    decode_paired: [LoadedKernel<sm90::DecodeArgs>; 3],
    /// The two-tile wide decode-size entries, in [`TileEpilogue`] order as `decode`.
    decode_wide: [LoadedKernel<sm90::DecodeArgs>; 5],
    /// The whole-K decode-size kernels (one token tile), in [`TileEpilogue`] order as `decode`.
    decode_whole_k: [LoadedKernel<sm90::DecodeArgs>; 5],
    /// The whole-K dual GEMM's small-CTA entries: fp16, NVFP4 and bf16 output.
    decode_whole_k_small: [LoadedKernel<sm90::DecodeArgs>; 3],
    /// The grouped decode-size kernels: dual GEMM, dual GEMM writing NVFP4, plain GEMM.
    grouped_decode: [LoadedKernel<sm90::GroupedDecodeArgs>; 3],
    pub grouped_prepare: LoadedKernel<GroupedPrepareArgs>,
    /// The preparation pass of a separate-convention launch with its table in its parameters.
    pub grouped_prepare_separate: LoadedKernel<SeparatePrepareArgs>,
}

impl Sm90Kernels {
    fn load(module: &Arc<CudaModule>, shared_bytes_per_block: u32) -> Result<Self> {
        let mut tiled = Vec::new();
        for entries in sm90_registry::TILED {
            let tile = entries.tile;
            let load = |kernel| LoadedKernel::load_with_shared(module, kernel, tile.shared().total);
            let (dense, dense_nvfp4, dense_plain) = (
                load(entries.dense)?,
                load(entries.dense_nvfp4)?,
                load(entries.dense_plain)?,
            );
            let dense_bf16 = [load(entries.dense_bf16)?, load(entries.dense_plain_bf16)?];
            let grouped = match entries.grouped {
                Some(grouped) => {
                    let load =
                        |kernel| LoadedKernel::load_with_shared(module, kernel, tile.grouped_shared().total);
                    Some(vec![
                        load(grouped.gated)?,
                        load(grouped.plain)?,
                        load(grouped.gated_nvfp4)?,
                    ])
                }
                None => None,
            };
            tiled.push(LoadedTile {
                tile,
                dense,
                dense_nvfp4: Some(dense_nvfp4),
                dense_plain: Some(dense_plain),
                dense_bf16: Some(dense_bf16),
                grouped,
            });
        }
        // The most the plans ask for: 16 token rows of the longest split, and their copy.
        let load_rows = |kernel, nvfp4, warps_per_matrix| {
            let shared = sm90::decode_shared_bytes(
                sm90::DECODE_MAX_TOKENS,
                sm90::DECODE_MAX_STEPS_PER_SPLIT,
                nvfp4,
                true,
                warps_per_matrix,
            );
            LoadedKernel::load_with_shared(module, kernel, shared)
        };
        let load = |kernel, nvfp4| load_rows(kernel, nvfp4, sm90::DECODE_WARPS_PER_MATRIX);
        // An entry's five kernels in `decode_index` order, the NVFP4 one with its staging.
        let load_entry = |entry: sm90_registry::DecodeEntry, warps_per_matrix| -> Result<_> {
            Ok([
                load_rows(entry.kernel, false, warps_per_matrix)?,
                load_rows(entry.nvfp4, true, warps_per_matrix)?,
                load_rows(entry.plain, false, warps_per_matrix)?,
                load_rows(entry.bf16, false, warps_per_matrix)?,
                load_rows(entry.plain_bf16, false, warps_per_matrix)?,
            ])
        };
        let mut decode = Vec::new();
        for entry in sm90_registry::DECODE {
            decode.push((
                entry.token_tiles,
                load_entry(entry, sm90::DECODE_WARPS_PER_MATRIX)?,
            ));
        }
        let [paired, paired_nvfp4, paired_bf16] = sm90_registry::DECODE_PAIRED;
        let decode_paired = [
            load(paired, false)?,
            load(paired_nvfp4, true)?,
            load(paired_bf16, false)?,
        ];
        let decode_wide = load_entry(sm90_registry::DECODE_WIDE, sm90::DECODE_WIDE_WARPS_PER_MATRIX)?;
        // Token rows over all of K: as much as a block may have (the plans check the fit).
        let load_whole_k = |kernel| LoadedKernel::load_with_shared(module, kernel, shared_bytes_per_block);
        let [a, b, c, d, e] = sm90_registry::DECODE_WHOLE_K.map(load_whole_k);
        let decode_whole_k = [a?, b?, c?, d?, e?];
        let [a, b, c] = sm90_registry::DECODE_WHOLE_K_SMALL.map(load_whole_k);
        let decode_whole_k_small = [a?, b?, c?];
        // The token buffers of the longest window.
        let load_grouped_decode = |kernel, nvfp4| {
            let shared = sm90::grouped_decode_shared_bytes(sm90::GROUPED_DECODE_MAX_WINDOW_STEPS, nvfp4);
            LoadedKernel::load_with_shared(module, kernel, shared)
        };
        let entries = sm90_registry::GROUPED_DECODE;
        let grouped_decode = [
            load_grouped_decode(entries.gated, false)?,
            load_grouped_decode(entries.gated_nvfp4, true)?,
            load_grouped_decode(entries.plain, false)?,
        ];
        Ok(Self {
            tiled,
            predecode_tokens: LoadedKernel::load(module, sm90_registry::PREDECODE_TOKENS)?,
            decode,
            decode_paired,
            decode_wide,
            decode_whole_k,
            decode_whole_k_small,
            grouped_decode,
            grouped_prepare: LoadedKernel::load(module, sm90_registry::GROUPED_PREPARE)?,
            grouped_prepare_separate: LoadedKernel::load(module, sm90_registry::GROUPED_PREPARE_SEPARATE)?,
        })
    }

    /// The dense kernel of `epilogue` for `tile`.
    pub fn dense(&self, tile: Tile, epilogue: TileEpilogue) -> Result<&LoadedKernel<sm90::DualGemmArgs>> {
        find_tiled(&self.tiled, tile, Arch::Sm90a, epilogue.operation(), |t| {
            t.dense_of(epilogue)
        })
    }

    /// The grouped kernel of `epilogue` for `tile`.
    pub fn grouped(&self, tile: Tile, epilogue: TileEpilogue) -> Result<&LoadedKernel<sm90::GroupedArgs>> {
        let (what, index) = grouped_kernel_index(epilogue);
        find_tiled(&self.tiled, tile, Arch::Sm90a, what, |t| {
            t.grouped.as_ref().zip(index).and_then(|(g, i)| g.get(i))
        })
    }

    /// The grouped decode-size kernel of `epilogue`.
    pub fn grouped_decode(&self, epilogue: TileEpilogue) -> Result<&LoadedKernel<sm90::GroupedDecodeArgs>> {
        let index = match epilogue {
            TileEpilogue::Gated => Some(0),
            TileEpilogue::GatedNvfp4 => Some(1),
            TileEpilogue::Plain => Some(2),
            TileEpilogue::GatedBf16 | TileEpilogue::PlainBf16 => None,
        };
        index
            .map(|i| &self.grouped_decode[i])
            .ok_or_else(|| Error::MissingKernel {
                kernel: format!("grouped decode-size {}", epilogue.operation()),
                arch: Arch::Sm90a.name(),
            })
    }

    /// The whole-K decode-size kernel of `epilogue` (one token tile); `small`: the dual GEMM's
    /// small-CTA entry (`sm90::DECODE_WHOLE_K_SMALL_WARPS` warps, more CTAs an SM).
    pub fn decode_whole_k(
        &self,
        epilogue: TileEpilogue,
        small: bool,
    ) -> Result<&LoadedKernel<sm90::DecodeArgs>> {
        if !small {
            return Ok(&self.decode_whole_k[decode_index(epilogue)]);
        }
        gated_decode_index(epilogue)
            .map(|i| &self.decode_whole_k_small[i])
            .ok_or_else(|| Error::MissingKernel {
                kernel: format!("small-CTA whole-K decode-size {}", epilogue.operation()),
                arch: Arch::Sm90a.name(),
            })
    }

    /// The decode-size kernel of `epilogue` for `token_tiles` 8-token tiles in `form`.
    pub fn decode(
        &self,
        token_tiles: u32,
        epilogue: TileEpilogue,
        form: DecodeForm,
    ) -> Result<&LoadedKernel<sm90::DecodeArgs>> {
        if form == DecodeForm::Wide {
            return if token_tiles == 2 {
                Ok(&self.decode_wide[decode_index(epilogue)])
            } else {
                Err(Error::MissingKernel {
                    kernel: format!(
                        "wide decode-size {} for {token_tiles} token tiles",
                        epilogue.operation()
                    ),
                    arch: Arch::Sm90a.name(),
                })
            };
        }
        if form == DecodeForm::Paired {
            return gated_decode_index(epilogue)
                .filter(|_| token_tiles == 1)
                .map(|i| &self.decode_paired[i])
                .ok_or_else(|| Error::MissingKernel {
                    kernel: format!(
                        "paired decode-size {} for {token_tiles} token tiles",
                        epilogue.operation()
                    ),
                    arch: Arch::Sm90a.name(),
                });
        }
        self.decode
            .iter()
            .find(|(tiles, _)| *tiles == token_tiles)
            .map(|(_, kernels)| &kernels[decode_index(epilogue)])
            .ok_or_else(|| Error::MissingKernel {
                kernel: format!(
                    "decode-size {} for {token_tiles} token tiles",
                    epilogue.operation()
                ),
                arch: Arch::Sm90a.name(),
            })
    }
}

/// The Blackwell module's kernels, loaded from its registry (`nvfp4_kernel::sm100::registry`).
pub(crate) struct Sm100Kernels {
    tiled: Vec<LoadedTile<sm100::Tile, sm100::DualGemmArgs, sm100::GroupedArgs>>,
    pub grouped_prepare: LoadedKernel<GroupedPrepareArgs>,
}

impl Sm100Kernels {
    fn load(module: &Arc<CudaModule>) -> Result<Self> {
        let mut tiled = Vec::new();
        for entries in sm100_registry::TILED {
            let tile = entries.tile;
            let shared = tile.shared_bytes();
            tiled.push(LoadedTile {
                tile,
                dense: LoadedKernel::load_with_shared(module, entries.dense, shared)?,
                dense_nvfp4: Some(LoadedKernel::load_with_shared(
                    module,
                    entries.dense_nvfp4,
                    shared,
                )?),
                dense_plain: Some(LoadedKernel::load_with_shared(
                    module,
                    entries.dense_plain,
                    shared,
                )?),
                dense_bf16: None,
                grouped: Some(
                    [
                        entries.grouped_gated,
                        entries.grouped_plain,
                        entries.grouped_gated_nvfp4,
                    ]
                    .into_iter()
                    .map(|kernel| LoadedKernel::load_with_shared(module, kernel, shared))
                    .collect::<Result<_>>()?,
                ),
            });
        }
        Ok(Self {
            tiled,
            grouped_prepare: LoadedKernel::load(module, sm100_registry::GROUPED_PREPARE)?,
        })
    }

    /// The dense kernel of `epilogue` for `tile`.
    pub fn dense(
        &self,
        tile: sm100::Tile,
        epilogue: TileEpilogue,
    ) -> Result<&LoadedKernel<sm100::DualGemmArgs>> {
        find_tiled(&self.tiled, tile, Arch::Sm100f, epilogue.operation(), |t| {
            t.dense_of(epilogue)
        })
    }

    /// The grouped kernel for `tile` and `epilogue`.
    pub fn grouped(
        &self,
        tile: sm100::Tile,
        epilogue: TileEpilogue,
    ) -> Result<&LoadedKernel<sm100::GroupedArgs>> {
        let (what, index) = grouped_kernel_index(epilogue);
        find_tiled(&self.tiled, tile, Arch::Sm100f, what, |t| {
            t.grouped.as_ref().zip(index).and_then(|(g, i)| g.get(i))
        })
    }
}

impl Gpu {
    /// Opens device `ordinal`, checks its architecture and loads the matching kernels.
    pub fn open(ordinal: usize) -> Result<Self> {
        if !driver_available() {
            return Err(Error::NoDriver);
        }
        let context = CudaContext::new(ordinal)?;
        let name = context.name()?;
        let (major, minor) = context.compute_capability()?;
        let arch = Arch::from_compute_capability(&name, major, minor)?;
        let attribute = |a| context.attribute(a).map(|v| v as u32);
        let multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let shared_bytes_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let module = context.load_module(cudarc::nvrtc::Ptx::from_src(arch.ptx()))?;
        let kernels = Kernels {
            dequantize_f16: LoadedKernel::load(&module, registry::DEQUANTIZE[0])?,
            dequantize_bf16: LoadedKernel::load(&module, registry::DEQUANTIZE[1])?,
            silu_mul_f16: LoadedKernel::load(&module, registry::SILU_MUL[0])?,
            silu_mul_bf16: LoadedKernel::load(&module, registry::SILU_MUL[1])?,
            combine: [
                LoadedKernel::load(&module, registry::COMBINE[0])?,
                LoadedKernel::load(&module, registry::COMBINE[1])?,
            ],
            gather_grouped: LoadedKernel::load(&module, registry::GATHER_GROUPED)?,
            route: LoadedKernel::load(&module, registry::ROUTE)?,
            route_count: LoadedKernel::load(&module, registry::ROUTE_COUNT)?,
            quantize: load_all(&module, &registry::QUANTIZE)?,
            amax: load_all(&module, &registry::AMAX)?,
            occupy: LoadedKernel::load(&module, registry::OCCUPY)?,
            sm90: match arch {
                Arch::Sm90a => Some(Sm90Kernels::load(&module, shared_bytes_per_block)?),
                Arch::Sm100f => None,
            },
            sm100: match arch {
                Arch::Sm100f => Some(Sm100Kernels::load(&module)?),
                Arch::Sm90a => None,
            },
        };
        kernels.occupy.allow_shared_bytes(shared_bytes_per_block)?;
        Ok(Self {
            stream: context.default_stream(),
            arch,
            name,
            multiprocessors,
            shared_bytes_per_block,
            kernels,
            _module: module,
        })
    }

    /// The device's architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The device's name as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming multiprocessors on the device.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// Dynamic shared memory one block may have on the device (opt-in maximum).
    pub(crate) fn shared_bytes_per_block(&self) -> u32 {
        self.shared_bytes_per_block
    }

    /// The stream this handle issues work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Issues all further work on `stream` (of this GPU's context) instead: for example a
    /// non-blocking stream, which a CUDA graph can capture (the default stream, the legacy one,
    /// cannot be captured). Plans made before keep working; their launches must stay ordered
    /// on one stream at a time.
    pub fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<()> {
        if stream.context() != self.stream.context() {
            return Err(Error::invalid(
                "stream",
                "must belong to this GPU's context",
                "another context",
            ));
        }
        self.stream = stream;
        Ok(())
    }

    /// Issues all further work on a stream created by other code (for PyTorch:
    /// `torch.cuda.current_stream().cuda_stream`; 0 is the legacy default stream) in this GPU's
    /// context (the device's primary context, which PyTorch shares). The stream is borrowed:
    /// never destroyed here.
    ///
    /// # Safety
    /// `raw` is a valid `CUstream` of this GPU's context (or 0) and outlives every launch this
    /// handle issues on it.
    pub unsafe fn set_borrowed_stream(&mut self, raw: u64) -> Result<()> {
        let context = self.stream.context().clone();
        // SAFETY: the caller's contract.
        let stream = unsafe { context.wrap_borrowed_stream(raw as cudarc::driver::sys::CUstream) };
        self.set_stream(stream)
    }

    /// Whether this GPU's current stream is being captured into a CUDA graph.
    pub fn is_capturing(&self) -> Result<bool> {
        self.stream.context().bind_to_thread()?;
        // SAFETY: the stream handle is this GPU's live stream.
        unsafe { raw_stream_is_capturing(self.stream.cu_stream()) }
    }

    /// Refuses `what` (a step that allocates device memory or waits for the stream) while the
    /// GPU's current stream is being captured into a CUDA graph: either would invalidate the
    /// capture. The typed error says to do the step once before capturing (a plan, made once,
    /// then serves every launch of its shape inside a graph).
    pub fn check_not_capturing(&self, what: &'static str) -> Result<()> {
        if self.is_capturing()? {
            Err(capturing(what))
        } else {
            Ok(())
        }
    }

    /// The Hopper kernels, or the error that names the operation and this GPU's architecture.
    pub(crate) fn sm90_kernels(&self, operation: &'static str) -> Result<&Sm90Kernels> {
        self.kernels.sm90.as_ref().ok_or(Error::KernelUnavailable {
            operation,
            arch: self.arch.name(),
        })
    }

    /// The Blackwell kernels, or the error that names the operation and this GPU's architecture.
    pub(crate) fn sm100_kernels(&self, operation: &'static str) -> Result<&Sm100Kernels> {
        self.kernels.sm100.as_ref().ok_or(Error::KernelUnavailable {
            operation,
            arch: self.arch.name(),
        })
    }

    /// Blocks of a grid-stride kernel over `items` work items, one per thread: enough blocks
    /// for every item, at most one full wave (the blocks that are resident at once on all SMs,
    /// so that every thread loops over the same number of items, give or take one, and no
    /// partial last wave idles most SMs), at least one.
    pub(crate) fn grid_stride_blocks<A>(&self, kernel: &LoadedKernel<A>, items: u32) -> u32 {
        items
            .div_ceil(kernel.kernel.entry.threads_per_block)
            .clamp(1, self.multiprocessors * kernel.resident_per_sm)
    }
}

/// Test support: a kernel that keeps multiprocessors busy.
pub mod testing {
    use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
    use nvfp4_kernel::common::OccupyArgs;

    use super::Gpu;
    use crate::error::Result;

    impl Gpu {
        /// Enqueues on `stream` a kernel of `blocks` blocks that each take all of an SM's
        /// shared memory (so no other kernel's CTA that needs shared memory fits beside one),
        /// count themselves in `started[0]` and spin until `release[0]` is non-zero. For tests
        /// of behaviour on fewer SMs than the device has; the caller must eventually write
        /// `release`, or the GPU stays busy.
        ///
        /// # Safety
        /// `release` and `started` stay allocated until the kernel ends; nothing else may wait
        /// on `stream` for it before `release` is written.
        pub unsafe fn occupy_multiprocessors(
            &self,
            stream: &CudaStream,
            blocks: u32,
            release: &CudaSlice<u32>,
            started: &CudaSlice<u32>,
        ) -> Result<()> {
            let (release, _release) = release.device_ptr(stream);
            let (started, _started) = started.device_ptr(stream);
            let args = OccupyArgs {
                release: release as *const u32,
                started: started as *mut u32,
            };
            // SAFETY: the caller's contract; both words are device allocations.
            unsafe {
                self.kernels
                    .occupy
                    .launch(stream, blocks, self.shared_bytes_per_block, &args, false)
            }
        }
    }
}
