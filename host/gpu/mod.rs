//! GPU runtime: opening a device, choosing the kernels for its architecture, NVFP4 matrices in
//! device memory, and the dequantization kernel.
//!
//! Everything goes through `cudarc`'s driver API with dynamic loading, so the library builds and
//! its CPU paths run on machines without a GPU or driver; [`Gpu::open`] reports those cases as
//! typed errors.

mod matrix;
pub(crate) mod tensor_map;

pub use matrix::DeviceNvFp4Matrix;

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use half::{bf16, f16};
use nvfp4_kernel::launch::{
    DEQUANTIZE_BF16, DEQUANTIZE_F16, EntryPoint, SILU_MUL_BF16, SILU_MUL_F16, SM90_PREDECODE_TOKENS,
    sm90_dual_gemm as sm90_dual_gemm_entry, sm100_dual_gemm as sm100_dual_gemm_entry,
};
use nvfp4_kernel::layout::SCALE_BLOCK_K;
use nvfp4_kernel::sm90::config::{self as sm90, Tile};

use crate::error::{Error, Result};
use crate::kernels::{PTX_SM90A, PTX_SM100A};

/// The GPU architectures this library has kernels for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Hopper, compute capability 9.0 (H100, H200): wgmma on fp16 with in-kernel fp4 decoding.
    Sm90a,
    /// Blackwell, compute capability 10.x (B200, B300): tcgen05 block-scaled fp4 MMA.
    Sm100a,
}

impl Arch {
    /// The architecture for a compute capability, or [`Error::UnsupportedGpu`].
    pub fn from_compute_capability(name: &str, major: i32, minor: i32) -> Result<Self> {
        match (major, minor) {
            (9, 0) => Ok(Arch::Sm90a),
            (10, _) => Ok(Arch::Sm100a),
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
            Arch::Sm100a => PTX_SM100A,
        }
    }
}

/// Whether a CUDA driver library can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen libcuda by its usual names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// One kernel argument for [`Gpu::launch_ex`], in the low bytes of a word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelArg(u64);

impl KernelArg {
    /// A device address (8 bytes).
    pub(crate) fn address(address: u64) -> Self {
        Self(address)
    }

    /// A 32-bit unsigned integer.
    pub(crate) fn u32(value: u32) -> Self {
        Self(u64::from(value))
    }

    /// A 32-bit float.
    pub(crate) fn f32(value: f32) -> Self {
        Self(u64::from(value.to_bits()))
    }
}

/// An open GPU: its context, a stream, and the kernel module for its architecture.
pub struct Gpu {
    stream: Arc<CudaStream>,
    arch: Arch,
    name: String,
    multiprocessors: u32,
    dequantize_f16: CudaFunction,
    dequantize_bf16: CudaFunction,
    silu_mul_f16: CudaFunction,
    silu_mul_bf16: CudaFunction,
    sm90_dual_gemm: Vec<(Tile, CudaFunction)>,
    sm90_predecode_tokens: Option<CudaFunction>,
    sm100_dual_gemm: Vec<(nvfp4_kernel::sm100::config::Tile, CudaFunction)>,
    _module: Arc<CudaModule>,
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
        let multiprocessors = context
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
        let module = context.load_module(cudarc::nvrtc::Ptx::from_src(arch.ptx()))?;
        let load = |entry: EntryPoint| module.load_function(entry.name);
        let mut sm90_dual_gemm = Vec::new();
        let mut sm90_predecode_tokens = None;
        if arch == Arch::Sm90a {
            sm90_predecode_tokens = Some(load(SM90_PREDECODE_TOKENS)?);
            for tile in sm90::TILES {
                let function = load(sm90_dual_gemm_entry(tile))?;
                function.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    crate::dual_gemm::sm90_max_shared_bytes(tile) as i32,
                )?;
                sm90_dual_gemm.push((tile, function));
            }
        }
        let mut sm100_dual_gemm = Vec::new();
        if arch == Arch::Sm100a {
            for tile in nvfp4_kernel::sm100::config::TILES {
                let function = load(sm100_dual_gemm_entry(tile))?;
                function.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    tile.shared_bytes() as i32,
                )?;
                sm100_dual_gemm.push((tile, function));
            }
        }
        Ok(Self {
            stream: context.default_stream(),
            arch,
            name,
            multiprocessors,
            dequantize_f16: load(DEQUANTIZE_F16)?,
            dequantize_bf16: load(DEQUANTIZE_BF16)?,
            silu_mul_f16: load(SILU_MUL_F16)?,
            silu_mul_bf16: load(SILU_MUL_BF16)?,
            sm90_dual_gemm,
            sm90_predecode_tokens,
            sm100_dual_gemm,
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

    /// The stream this handle issues work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Dequantizes `m` to a new row-major fp16 buffer (`rows × k`), stream-ordered.
    pub fn dequantize_f16(&self, m: &DeviceNvFp4Matrix) -> Result<CudaSlice<f16>> {
        // SAFETY: every element is written by the kernel before the buffer can be read.
        let mut out = unsafe { self.stream.alloc::<f16>(m.rows() * m.k()) }?;
        self.dequantize_f16_into(m, &mut out)?;
        Ok(out)
    }

    /// Dequantizes `m` into `out` (`rows × k` fp16, row-major), stream-ordered.
    pub fn dequantize_f16_into(&self, m: &DeviceNvFp4Matrix, out: &mut CudaSlice<f16>) -> Result<()> {
        self.launch_dequantize(&self.dequantize_f16, DEQUANTIZE_F16, m, out)
    }

    /// Dequantizes `m` to a new row-major bf16 buffer (`rows × k`), stream-ordered.
    pub fn dequantize_bf16(&self, m: &DeviceNvFp4Matrix) -> Result<CudaSlice<bf16>> {
        // SAFETY: every element is written by the kernel before the buffer can be read.
        let mut out = unsafe { self.stream.alloc::<bf16>(m.rows() * m.k()) }?;
        self.dequantize_bf16_into(m, &mut out)?;
        Ok(out)
    }

    /// Dequantizes `m` into `out` (`rows × k` bf16, row-major), stream-ordered.
    pub fn dequantize_bf16_into(&self, m: &DeviceNvFp4Matrix, out: &mut CudaSlice<bf16>) -> Result<()> {
        self.launch_dequantize(&self.dequantize_bf16, DEQUANTIZE_BF16, m, out)
    }

    /// `out = silu(gate) ⊙ up` element-wise on fp16 buffers of one length (a multiple of 8),
    /// stream-ordered: the last step of an unfused gate/up projection.
    pub fn silu_mul_f16(
        &self,
        gate: &CudaSlice<f16>,
        up: &CudaSlice<f16>,
        out: &mut CudaSlice<f16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.silu_mul_f16, SILU_MUL_F16, gate, up, out)
    }

    /// `out = silu(gate) ⊙ up` element-wise on bf16 buffers (see [`Self::silu_mul_f16`]).
    pub fn silu_mul_bf16(
        &self,
        gate: &CudaSlice<bf16>,
        up: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        self.launch_silu_mul(&self.silu_mul_bf16, SILU_MUL_BF16, gate, up, out)
    }

    fn launch_silu_mul<T: cudarc::driver::DeviceRepr>(
        &self,
        function: &CudaFunction,
        entry: EntryPoint,
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
        let config = self.grid_stride_config(entry, (len / 8) as u32);
        let len32 = len as u32;
        let mut launch = self.stream.launch_builder(function);
        launch.arg(gate).arg(up).arg(out).arg(&len32);
        // SAFETY: parameter order and types match `nvfp4_kernel::elementwise`; lengths checked.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    pub(crate) fn sm100_dual_gemm_function(
        &self,
        tile: nvfp4_kernel::sm100::config::Tile,
    ) -> Result<CudaFunction> {
        self.sm100_dual_gemm
            .iter()
            .find(|(t, _)| *t == tile)
            .map(|(_, f)| f.clone())
            .ok_or(Error::KernelUnavailable {
                operation: "dual-GEMM",
                arch: "sm_100a",
            })
    }

    pub(crate) fn sm90_dual_gemm_function(&self, tile: Tile) -> Result<CudaFunction> {
        self.sm90_dual_gemm
            .iter()
            .find(|(t, _)| *t == tile)
            .map(|(_, f)| f.clone())
            .ok_or(Error::KernelUnavailable {
                operation: "dual-GEMM",
                arch: "sm_100a",
            })
    }

    /// Launch configuration of a grid-stride kernel over `items` work items, one per thread:
    /// enough blocks for every item, at most 16 per SM, at least one.
    pub(crate) fn grid_stride_config(&self, entry: EntryPoint, items: u32) -> LaunchConfig {
        let threads = entry.threads_per_block;
        LaunchConfig {
            grid_dim: (items.div_ceil(threads).clamp(1, self.multiprocessors * 16), 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Enqueues `function` on this GPU's stream with `cuLaunchKernelEx`. With `dependent`, as a
    /// programmatic dependent launch: its CTAs may start while the stream's previous kernel
    /// finishes, so the kernel must execute `griddepcontrol.wait` before it touches memory that
    /// earlier work writes (the sm_90a dual-GEMM kernels and the token pre-decoder do).
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in order and size, with every buffer alive and
    /// large enough for what the kernel reads and writes.
    pub(crate) unsafe fn launch_ex(
        &self,
        function: &CudaFunction,
        config: LaunchConfig,
        args: &[KernelArg],
        dependent: bool,
    ) -> Result<()> {
        use cudarc::driver::sys;
        let mut words: Vec<u64> = args.iter().map(|arg| arg.0).collect();
        let mut params: Vec<*mut std::ffi::c_void> =
            words.iter_mut().map(|w| (w as *mut u64).cast()).collect();
        // SAFETY: a plain C union; all-zero is a valid value of every member.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        let mut attribute = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        };
        let launch_config = sys::CUlaunchConfig {
            gridDimX: config.grid_dim.0,
            gridDimY: config.grid_dim.1,
            gridDimZ: config.grid_dim.2,
            blockDimX: config.block_dim.0,
            blockDimY: config.block_dim.1,
            blockDimZ: config.block_dim.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(dependent),
        };
        self.stream.context().bind_to_thread()?;
        // SAFETY: the config, the attribute and every parameter word outlive the call (the
        // driver copies them); the caller guarantees that the arguments match the kernel.
        unsafe {
            sys::cuLaunchKernelEx(
                &launch_config,
                function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()?;
        Ok(())
    }

    /// The sm_90a token pre-decoding kernel.
    pub(crate) fn sm90_predecode_tokens_function(&self) -> Result<&CudaFunction> {
        self.sm90_predecode_tokens
            .as_ref()
            .ok_or(Error::KernelUnavailable {
                operation: "token pre-decoding",
                arch: "sm_100a",
            })
    }

    fn launch_dequantize<T: cudarc::driver::DeviceRepr>(
        &self,
        function: &CudaFunction,
        entry: EntryPoint,
        m: &DeviceNvFp4Matrix,
        out: &mut CudaSlice<T>,
    ) -> Result<()> {
        if out.len() != m.rows() * m.k() {
            return Err(Error::BufferLength {
                arg: "out",
                expected: m.rows() * m.k(),
                got: out.len(),
            });
        }
        let blocks = m.rows() * m.k() / SCALE_BLOCK_K;
        if blocks >= 1 << 31 {
            return Err(Error::invalid(
                "rows × k / 16",
                "must be below 2^31 for the dequantization kernel",
                blocks,
            ));
        }
        let config = self.grid_stride_config(entry, blocks as u32);
        let (rows, k) = (m.rows() as u32, m.k() as u32);
        let global_scale = m.global_scale().unwrap_or(1.0);
        let mut launch = self.stream.launch_builder(function);
        launch
            .arg(m.data_buffer())
            .arg(m.scales_buffer())
            .arg(out)
            .arg(&rows)
            .arg(&k)
            .arg(&global_scale);
        // SAFETY: parameter order and types match `nvfp4_kernel::dequant`; the buffers have the
        // lengths the kernel reads and writes (checked by DeviceNvFp4Matrix and the allocation).
        unsafe { launch.launch(config) }?;
        Ok(())
    }
}
