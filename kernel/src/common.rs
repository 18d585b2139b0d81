//! Arguments of the kernels both modules share (dequantization, `silu · up`, quantization, amax,
//! and the test-support occupier), one `#[repr(C)]` struct per kernel family that the host
//! fills and the kernel takes by value. Their entries are listed in `crate::registry`.

/// Global scales of a dense launch's operands that live in device memory: each is the address
/// of one f32 (finite, positive) or null for none. The GEMM kernels multiply the products' α
/// (which carry the host-side global scales) by them when they finish a tile, so that a scale a
/// previous kernel wrote, or one a CUDA graph's caller updates between replays, needs no host
/// round trip. Read after the kernel's dependency wait (`griddepcontrol.wait`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceGlobalScales {
    /// A's (the tokens').
    pub a: *const f32,
    /// B1's (the gate weights', or the plain GEMM's B).
    pub b1: *const f32,
    /// B2's (the up weights'; null for the plain GEMM).
    pub b2: *const f32,
}

impl DeviceGlobalScales {
    /// No scale in device memory.
    pub const NONE: Self = Self {
        a: core::ptr::null(),
        b1: core::ptr::null(),
        b2: core::ptr::null(),
    };

    /// The factors of the gate (`A·B1`) and up (`A·B2`) products' α: the product of their
    /// operands' scales, 1 for a null one.
    ///
    /// # Safety
    /// Each non-null address holds an f32 the kernel may read.
    #[inline(always)]
    pub unsafe fn factors(&self) -> (f32, f32) {
        // SAFETY: the caller's.
        let read = |p: *const f32| if p.is_null() { 1.0 } else { unsafe { p.read() } };
        let a = read(self.a);
        (a * read(self.b1), a * read(self.b2))
    }
}

/// Arguments of the dequantization kernels: an NVFP4 matrix to row-major fp16/bf16.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DequantizeArgs {
    /// Packed e2m1 data, `rows × k/2` bytes, 8-byte aligned.
    pub data: *const u8,
    /// Blocked e4m3 scales.
    pub scales: *const u8,
    /// Output, `rows × k` elements, 16-byte aligned.
    pub out: *mut u16,
    /// Rows.
    pub rows: u32,
    /// K (a multiple of 16).
    pub k: u32,
    /// The matrix's global scale (1 for none).
    pub global_scale: f32,
}

/// Arguments of the `silu(gate) · up` kernels on fp16/bf16 vectors.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiluMulArgs {
    /// Gate values, `len` elements, 16-byte aligned.
    pub gate: *const u32,
    /// Up values, `len` elements, 16-byte aligned.
    pub up: *const u32,
    /// Output, `len` elements, 16-byte aligned.
    pub out: *mut u32,
    /// Elements (a multiple of 8, below 2³¹).
    pub len: u32,
}

/// Arguments of the Mixture-of-Experts combine (`crate::elementwise`): `out[t] = Σ_j
/// weights[t·top_k + j] · rows[sources[t·top_k + j]]` for `j` in `0..top_k`, in that order, in
/// f32.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CombineArgs {
    /// The experts' output rows (fp16), `row_count × width`, 16-byte aligned.
    pub rows: *const u32,
    /// The source row of each (token, slot), `tokens × top_k` (i32); one outside
    /// `0..row_count` (−1 for a slot whose expert ran elsewhere) contributes nothing.
    pub sources: *const i32,
    /// The router weight of each (token, slot), `tokens × top_k`, in the format
    /// `weight_format` names ([`COMBINE_WEIGHTS_F32`], [`COMBINE_WEIGHTS_F16`] or
    /// [`COMBINE_WEIGHTS_BF16`]; each widened to f32 exactly).
    pub weights: *const u8,
    /// Output, `tokens × width` (fp16 or bf16, as the entry's name says), 16-byte aligned.
    pub out: *mut u32,
    /// Rows in `rows`.
    pub row_count: u32,
    /// Tokens (output rows).
    pub tokens: u32,
    /// Slots per token.
    pub top_k: u32,
    /// Values per row (a multiple of 8; `tokens · width / 8` below 2³¹).
    pub width: u32,
    /// The weights' format: one of the `COMBINE_WEIGHTS_*` codes.
    pub weight_format: u32,
}

/// [`CombineArgs::weight_format`]: f32 weights (4-byte aligned).
pub const COMBINE_WEIGHTS_F32: u32 = 0;
/// [`CombineArgs::weight_format`]: fp16 weights (2-byte aligned).
pub const COMBINE_WEIGHTS_F16: u32 = 1;
/// [`CombineArgs::weight_format`]: bf16 weights (2-byte aligned).
pub const COMBINE_WEIGHTS_BF16: u32 = 2;

/// Arguments of the grouped-layout gather (`crate::gather`): row `i` of the output is row
/// `source_rows[i]` of an NVFP4 matrix (packed codes and scale codes, bytes unchanged), and each
/// group's scale rows start at its `scale_offsets` entry — the layout the grouped ops take.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GatherGroupedArgs {
    /// The source matrix's packed rows, `source_count × k / 2` bytes, 8-byte aligned.
    pub data: *const u8,
    /// Its blocked scales (the `source_count × k` layout), 4-byte aligned.
    pub scales: *const u8,
    /// The source row of each output row (`rows` u32); null: row `i` is source row `i`. A
    /// source at or past `source_count` gives a row of zeros.
    pub source_rows: *const u32,
    /// `groups + 1` row offsets (non-decreasing; group `g` is output rows
    /// `row_offsets[g] .. row_offsets[g + 1]`).
    pub row_offsets: *const u32,
    /// `groups + 1` scale offsets: group `g`'s first scale row (rows of no group are zeros).
    pub scale_offsets: *const u32,
    /// Packed output rows, `rows × k / 2` bytes, 8-byte aligned.
    pub out_data: *mut u8,
    /// Blocked output scales (the `scale_rows × k` layout), 4-byte aligned.
    pub out_scales: *mut u8,
    /// Rows of the source matrix.
    pub source_count: u32,
    /// Output rows.
    pub rows: u32,
    /// Groups (at least 1).
    pub groups: u32,
    /// Rows of the output scale layout.
    pub scale_rows: u32,
    /// K (a multiple of 16; both layouts' bytes and `rows · k / 16` below 2³¹).
    pub k: u32,
}

/// Arguments of the Mixture-of-Experts routing kernel (`crate::route`): the routed slots
/// (token `t`'s `j`-th expert is slot `t·top_k + j`) sorted by expert, stably (slot order within
/// an expert), as the grouped ops and the combine take them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RouteArgs {
    /// The expert of each slot, `slots` int64 (PyTorch's `topk` indices), 8-byte aligned; one
    /// outside `0..experts` (an expert on another GPU) sorts after every expert's slots and is
    /// in no group.
    pub expert_of: *const u32,
    /// Out: the token of each sorted row (`slots` u32: slot / top_k).
    pub token_rows: *mut u32,
    /// Out: the sorted row of each slot (`slots` u32), u32::MAX for a slot of no expert (the
    /// combine skips it).
    pub sources: *mut u32,
    /// Out: `experts + 1` row offsets (expert `e`'s rows start at entry `e`; the last is the
    /// number of slots with an expert).
    pub row_offsets: *mut u32,
    /// Out: `experts + 1` scale offsets: each expert's rows rounded up to 128, summed.
    pub scale_offsets: *mut u32,
    /// Routed slots (tokens × top_k, below 2³¹).
    pub slots: u32,
    /// Slots per token (at least 1).
    pub top_k: u32,
    /// Experts (1 ..= `ROUTE_MAX_EXPERTS`).
    pub experts: u32,
    /// A launch of more than one CTA ([`route_ctas`]): each CTA's count of each bin (the
    /// experts and one of no expert), [`route_count_words`] u32 written by the counting kernel
    /// before the routing kernel reads them. Not read by a launch of one CTA (may be null).
    pub counts: *mut u32,
}

/// The most experts the routing kernel sorts by (its shared-memory tables).
pub const ROUTE_MAX_EXPERTS: u32 = 256;
/// Threads of a routing kernel's CTA: the slots it places per round.
pub const ROUTE_THREADS: u32 = 1024;
/// Slots of each CTA of a routing launch of more than one CTA: four rounds (a round of 1024
/// slots took ≈ 3.6 µs in one CTA on an H100, so 32768 slots in one CTA took longer than
/// PyTorch's sort).
pub const ROUTE_SLOTS_PER_CTA: u32 = 4 * ROUTE_THREADS;

/// CTAs of the routing launch for `slots` slots: each takes [`ROUTE_SLOTS_PER_CTA`] of them in
/// slot order (one CTA for all, up to that many).
pub const fn route_ctas(slots: u32) -> u32 {
    if slots <= ROUTE_SLOTS_PER_CTA {
        1
    } else {
        slots.div_ceil(ROUTE_SLOTS_PER_CTA)
    }
}

/// Words of [`RouteArgs::counts`] for `slots` slots and `experts` experts (0 for one CTA).
pub const fn route_count_words(slots: u32, experts: u32) -> u64 {
    let ctas = route_ctas(slots);
    if ctas == 1 {
        0
    } else {
        ctas as u64 * (experts as u64 + 1)
    }
}

/// Shared memory of the routing kernel for `experts` experts: per expert bin (the experts and
/// one of no expert) its count, its next row and one word per warp.
pub const fn route_shared_bytes(experts: u32) -> u32 {
    4 * (experts + 1) * (2 + ROUTE_THREADS / 32)
}

/// The words of the quantizer's non-finite check, in this order (u64 each): the running value
/// (`u64::MAX − i` for the smallest index `i` of a non-finite input seen, 0 for none), the last
/// launch's result in the same code, and the count of CTAs that finished (in the low half,
/// with those that reported one: [`QUANTIZE_COUNT_BITS`]).
/// The last CTA of a launch moves the running value into the result and zeroes it and the
/// count, so that no launch needs the words cleared first (no memset node in a graph).
#[derive(Clone, Copy, Debug)]
pub enum QuantizeStatus {
    /// The running smallest-index code.
    Running = 0,
    /// The last launch's code.
    Result = 1,
    /// CTAs of the running launch that finished, and (above [`QUANTIZE_COUNT_BITS`]) those of
    /// them that reported a non-finite input.
    Arrivals = 2,
}

/// u64 words of [`QuantizeArgs::status`].
pub const QUANTIZE_STATUS_WORDS: usize = 3;

/// Low bits of the [`QuantizeStatus::Arrivals`] word that count a launch's finished CTAs (the
/// bits above them count those that reported a non-finite input): a quantization launch has
/// fewer than `2^QUANTIZE_COUNT_BITS` CTAs.
pub const QUANTIZE_COUNT_BITS: u32 = 16;

/// Arguments of the quantization kernels (`crate::quantize`): row-major f32 / f16 / bf16
/// values to an NVFP4 matrix.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QuantizeArgs {
    /// `rows × k` input elements, 16-byte aligned.
    pub values: *const u8,
    /// Packed e2m1 output, `rows × k / 2` bytes, 8-byte aligned.
    pub data: *mut u8,
    /// Blocked e4m3 scales, padding included (written as zeros, like the host's).
    pub scales: *mut u8,
    /// The tensor's largest magnitude as f32 bits (the amax kernel's result), from which the
    /// kernel derives the global scale as the host's `GlobalScale::Auto` does; null: use
    /// `global_scale`.
    pub amax: *const u32,
    /// The non-finite check's [`QUANTIZE_STATUS_WORDS`] words, zero when first used (see
    /// [`QuantizeStatus`]); every launch leaves them so but for its result.
    pub status: *mut u64,
    /// Rows.
    pub rows: u32,
    /// K (a multiple of 16; `rows · k / 16 < 2^31`).
    pub k: u32,
    /// The global scale when `amax` is null (1 for none).
    pub global_scale: f32,
    /// The sm_90a decoded token operand of the output (`sm90::tokens`: `rows ×
    /// padded_k(k)` fp16, 16-byte aligned, its padding past K zero), written beside the NVFP4
    /// matrix for the dense GEMM that reads it next; null: not written.
    pub decoded: *mut u32,
}

/// Arguments of the amax kernels: the largest magnitude of `blocks · 16` elements.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmaxArgs {
    /// The elements, 16-byte aligned.
    pub values: *const u8,
    /// Running maximum of the magnitudes' f32 bits (the caller zeroes it first).
    pub amax: *mut u32,
    /// 16-element blocks (below 2^31).
    pub blocks: u32,
}

/// Arguments of the test-support kernel that occupies multiprocessors (`registry::OCCUPY`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OccupyArgs {
    /// Each block spins until this word is non-zero.
    pub release: *const u32,
    /// Each block adds 1 here when it starts.
    pub started: *mut u32,
}

/// Outputs of one tile of a GEMM epilogue that writes NVFP4 (`crate::epilogue::Nvfp4Tile`):
/// the Hopper gated tiles' and decode row groups' width, four scale blocks.
pub const NVFP4_TILE_COLUMNS: u32 = 64;

/// Bytes between token rows of an NVFP4 epilogue's shared staging: the row's 64 fp16 values,
/// its eight 16-byte chunks XOR-swizzled by the token row (chunk `c` of row `r` at `c ^ (r mod
/// 8)`), so that neither the writers (four token rows per warp instruction) nor the block
/// encoders (16-byte reads of eight blocks per phase) meet bank conflicts. The same bytes as a
/// Hopper decoded token slice (`tokens × 128`), which the tiled kernels stage into.
pub const NVFP4_STAGING_PITCH: u32 = 2 * NVFP4_TILE_COLUMNS;

/// Shared-memory bytes of an NVFP4 epilogue's staging for `tokens` token rows.
pub const fn nvfp4_staging_bytes(tokens: u32) -> u32 {
    tokens * NVFP4_STAGING_PITCH
}

/// Byte offset in an NVFP4 staging of the 16-byte chunk `chunk` (outputs `8·chunk..8·chunk +
/// 8`) of token row `token` (see [`NVFP4_STAGING_PITCH`]).
#[inline(always)]
pub const fn nvfp4_staging_chunk(token: u32, chunk: u32) -> u32 {
    token * NVFP4_STAGING_PITCH + 16 * (chunk ^ (token % 8))
}

/// Largest product `α_gate · α_up` (as the kernels take them, each op's operand rescale included)
/// that the gated epilogues' folded SiLU product keeps exact: its divisor holds the product's
/// reciprocal, a normal f32 up to `2¹²⁶`.
pub const GATED_ALPHA_PRODUCT_LIMIT: f32 = (1u128 << 126) as f32;
