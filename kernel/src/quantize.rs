//! NVFP4 quantization kernels: row-major f32 / f16 / bf16 values → packed e2m1 + blocked e4m3
//! scales, bit-identical to the host quantizer (`NvFp4Matrix::quantize`): the same f32
//! arithmetic on the same values, per 16-element block `scale = e4m3(amax / 6 / global)`, then
//! each value `e2m1(x / (scale · global))`. Three steps are computed another way that gives the
//! same bits, because the division-per-value form was instruction-bound at 44 % of the copy
//! bandwidth: the quotients by [`Divisor`] (three multiply-adds after one reciprocal per block;
//! proof in its doc, host test in `tests/codec.rs`), the e2m1 code by the codec's branch-free
//! encoder, the scale's e4m3 rounding and decoding by the hardware conversions (`cvt`; the GPU
//! test compares every block with the host quantizer, ties and subnormal scales included).
//!
//! One thread per block (64 or 32 input bytes, 8 data bytes, 1 scale byte) in a grid-stride
//! loop: memory-bound; then the same threads write the scale layout's padding as zeros, so that
//! a call is one kernel (no memset before it). A non-finite input is not quantized
//! meaningfully: the kernel records the smallest such element index `i` as `u64::MAX − i` (0:
//! none) in the status words, whose last CTA publishes the launch's result and clears the
//! running word for the next launch ([`QuantizeStatus`]), and the host turns it into the host
//! quantizer's error.
//! For `GlobalScale::Auto` an amax kernel runs first, and the quantization kernel derives the
//! global scale from its result on the GPU (`amax / (6 · 448)`, or 1 for an all-zero tensor).
//!
//! With [`QuantizeArgs::decoded`] the same threads also write each block decoded into the
//! sm_90a token operand (`crate::sm90::tokens::store_decoded_block`), for the dense GEMM that
//! reads it next without a pre-decoding pass.
//!
//! Kernel parameters: [`QuantizeArgs`], [`AmaxArgs`].

use crate::codec::{Divisor, E2M1_MAX, SIGN_BIT, auto_global_scale, e2m1_magnitude_code, e2m1_sign_bit};
use crate::common::{AmaxArgs, QUANTIZE_COUNT_BITS, QUANTIZE_STATUS_WORDS, QuantizeArgs, QuantizeStatus};
use crate::layout::{ATOM_LINES, BlockedScales, SCALE_BLOCK_K, ScalePadding};
use crate::ptx::{cvt, fence, float, mem, simd, sreg, warp};
use crate::registry;

/// An input element type: how a 16-element block is read, in two steps (the raw words, then
/// the values or their largest magnitude) so that the quantizer can load the next block before
/// it encodes this one.
trait InputElement {
    /// Bytes per element.
    const BYTES: usize;
    /// A block's raw words: 16-byte vectors.
    type Raw: Copy;
    /// The block at `ptr` (16-byte aligned), as loaded.
    unsafe fn load(ptr: *const u8) -> Self::Raw;
    /// The block's 16 values, exactly as f32.
    fn widen(raw: Self::Raw) -> [f32; 16];
    /// The f32 bits of the block's largest magnitude: non-negative floats order like unsigned
    /// integers, and infinities and NaNs (their f32 widenings) above every finite magnitude.
    fn largest_magnitude_bits(raw: Self::Raw) -> u32 {
        Self::widen(raw)
            .iter()
            .fold(0, |m, v| m.max(v.to_bits() & !SIGN_BIT))
    }
}

/// `N` 16-byte vectors at `ptr`.
#[inline(always)]
unsafe fn load_vectors<const N: usize>(ptr: *const u8) -> [[u32; 4]; N] {
    // SAFETY: inside the block (caller).
    core::array::from_fn(|q| unsafe { mem::ld_global_nc_v4_b32((ptr as *const u32).add(4 * q)) })
}

struct F32;
impl InputElement for F32 {
    const BYTES: usize = 4;
    type Raw = [[u32; 4]; 4];
    #[inline(always)]
    unsafe fn load(ptr: *const u8) -> Self::Raw {
        // SAFETY: forwarded.
        unsafe { load_vectors(ptr) }
    }
    #[inline(always)]
    fn widen(raw: Self::Raw) -> [f32; 16] {
        core::array::from_fn(|i| f32::from_bits(raw[i / 4][i % 4]))
    }
}

/// The largest of the 16-bit magnitudes in `raw`'s 16 halves (sign bits cleared), as bits:
/// fp16 and bf16 magnitudes also order like their bits. Two halves per `max.u16x2`.
#[inline(always)]
fn largest_half_magnitude(raw: [[u32; 4]; 2]) -> u32 {
    const MAGNITUDES: u32 = 0x7FFF_7FFF;
    let pairs = raw
        .iter()
        .flatten()
        .fold(0, |m, &w| simd::max_u16x2(m, w & MAGNITUDES));
    (pairs & 0xFFFF).max(pairs >> 16)
}

/// Two 16-bit elements per word, the first in the low half, each widened by `widen`.
#[inline(always)]
fn widen_halves(raw: [[u32; 4]; 2], widen: impl Fn(u16) -> f32) -> [f32; 16] {
    core::array::from_fn(|i| {
        let word = raw[i / 8][(i % 8) / 2];
        widen(if i % 2 == 0 {
            word as u16
        } else {
            (word >> 16) as u16
        })
    })
}

struct F16;
impl InputElement for F16 {
    const BYTES: usize = 2;
    type Raw = [[u32; 4]; 2];
    #[inline(always)]
    unsafe fn load(ptr: *const u8) -> Self::Raw {
        // SAFETY: forwarded.
        unsafe { load_vectors(ptr) }
    }
    #[inline(always)]
    fn widen(raw: Self::Raw) -> [f32; 16] {
        widen_halves(raw, cvt::f16_to_f32)
    }
    #[inline(always)]
    fn largest_magnitude_bits(raw: Self::Raw) -> u32 {
        cvt::f16_to_f32(largest_half_magnitude(raw) as u16).to_bits()
    }
}

struct Bf16;
impl InputElement for Bf16 {
    const BYTES: usize = 2;
    type Raw = [[u32; 4]; 2];
    #[inline(always)]
    unsafe fn load(ptr: *const u8) -> Self::Raw {
        // SAFETY: forwarded.
        unsafe { load_vectors(ptr) }
    }
    #[inline(always)]
    fn widen(raw: Self::Raw) -> [f32; 16] {
        widen_halves(raw, |h| f32::from_bits((h as u32) << 16))
    }
    #[inline(always)]
    fn largest_magnitude_bits(raw: Self::Raw) -> u32 {
        largest_half_magnitude(raw) << 16
    }
}

/// The bits of +∞: magnitudes at or above are not finite.
const INFINITY_BITS: u32 = 0x7F80_0000;

/// Division of block indices below 2³¹ by the blocks per row, with the reciprocal computed once
/// per thread (a plain `u32` division costs about 20 instructions per block; this costs 5):
/// `q = ⌊n·m / 2³²⌋` with `m = ⌊(2³² − 1) / d⌋` undershoots `n / d` by less than `n / 2³² < ½`,
/// so `⌊n / d⌋` is `q` or `q + 1`, which one comparison of the remainder decides.
#[derive(Clone, Copy)]
struct RowDivider {
    divisor: u32,
    inverse: u32,
}

impl RowDivider {
    #[inline(always)]
    fn new(divisor: u32) -> Self {
        Self {
            divisor,
            inverse: u32::MAX / divisor,
        }
    }

    /// `(n / d, n % d)` for `n < 2³¹`.
    #[inline(always)]
    fn divide(&self, n: u32) -> (u32, u32) {
        let q = ((n as u64 * self.inverse as u64) >> 32) as u32;
        let r = n - q * self.divisor;
        if r >= self.divisor {
            (q + 1, r - self.divisor)
        } else {
            (q, r)
        }
    }
}

/// The blocks of a grid-stride loop: this thread's first and the stride.
#[inline(always)]
fn grid_stride() -> (u32, u32) {
    (
        sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x(),
        sreg::grid_dim_x() * sreg::block_dim_x(),
    )
}

/// The quantization kernel's body for element type `E`: one loop for launches that write the
/// decoded token operand too and one for those that do not, so that the common one keeps the
/// registers and instructions it had without it (2 % of the bulk rate on an H200).
#[inline(always)]
unsafe fn quantize<E: InputElement>(args: &QuantizeArgs) {
    // SAFETY (both): forwarded.
    if cfg!(nvfp4_arch = "sm_90a") && !args.decoded.is_null() {
        unsafe { quantize_blocks::<E, true>(args) }
    } else {
        unsafe { quantize_blocks::<E, false>(args) }
    }
}

/// [`quantize`], writing the decoded operand if `DECODED`.
#[inline(always)]
unsafe fn quantize_blocks<E: InputElement, const DECODED: bool>(args: &QuantizeArgs) {
    // The next kernel, if launched as a programmatic dependent (the dual GEMM or GEMM after an
    // activation quantization), may start its CTAs now: they prefetch their weights and wait
    // for this grid to complete before they read its output.
    fence::launch_dependents();
    let blocks_per_row = args.k / SCALE_BLOCK_K as u32;
    if blocks_per_row == 0 {
        return; // never with a valid launch; also proves the divisions below cannot panic
    }
    let total_blocks = args.rows * blocks_per_row;
    let layout = BlockedScales::new(args.rows as usize, args.k as usize);
    let g = if args.amax.is_null() {
        args.global_scale
    } else {
        // SAFETY: the amax kernel's result (host contract), written before this kernel.
        auto_global_scale(f32::from_bits(unsafe { mem::ld_global_b32(args.amax) }))
    };
    let rows = RowDivider::new(blocks_per_row);
    let pitch = if DECODED { decoded_pitch(args.k) } else { 0 };
    let (first, stride) = grid_stride();
    // SAFETY: the host validated the buffers: a `block` below `total_blocks` indexes 16 input
    // elements, 8 data bytes and one scale byte inside them.
    let load = |block: u32| unsafe { E::load(args.values.add(block as usize * SCALE_BLOCK_K * E::BYTES)) };
    let running = args.status.wrapping_add(QuantizeStatus::Running as usize);
    // Whether this thread updated the running code (it then orders that before its CTA's
    // arrival).
    let mut reported = false;
    let mut block = first;
    let mut raw = if block < total_blocks {
        Some(load(block))
    } else {
        None
    };
    while let Some(this) = raw {
        // The next block's loads go out before this block is encoded (memory-level parallelism
        // within each thread: one block's work alone does not cover the load latency).
        let next_block = block + stride; // below 2³²: both terms are below 2³¹
        raw = (next_block < total_blocks).then(|| load(next_block));
        let values = E::widen(this);
        let largest = E::largest_magnitude_bits(this);
        if largest >= INFINITY_BITS {
            let first_bad = values.iter().position(|v| !v.is_finite()).unwrap_or(0);
            let index = block as u64 * SCALE_BLOCK_K as u64 + first_bad as u64;
            // SAFETY: the status words (host contract).
            unsafe { mem::atom_max_relaxed_gpu_u64(running, u64::MAX - index) };
            reported = true;
        }
        let (scale_code, words) = encode_block(&values, largest, g);
        let (row, col) = rows.divide(block);
        // SAFETY: as above.
        unsafe {
            mem::st_global_v2_b32(
                args.data.add(block as usize * SCALE_BLOCK_K / 2) as *mut u32,
                words,
            );
            mem::st_global_b8(args.scales.add(layout.offset_u32(row, col) as usize), scale_code);
            if DECODED {
                store_decoded(args.decoded, pitch, row, col, words, scale_code, None);
            }
        }
        block = next_block;
    }
    // SAFETY: the scale buffer holds the whole layout (host contract).
    unsafe { zero_scale_padding(args, layout, first, stride) };
    // SAFETY: the status words (host contract).
    unsafe { finish_status(args.status, reported) };
}

/// Writes a block as stored (`words`, `scale`) as block `block` of row `row` of the decoded
/// token operand at `decoded` (`pitch` words a row), unless `decoded` is null: the quantizer's
/// and the NVFP4 epilogues' optional second output. `partners`: `None`, the block alone
/// (`crate::sm90::tokens::store_decoded_block`); or the lanes executing this together, each
/// with its partner `l ^ 2` holding block `block ± 2` of the same row
/// (`crate::sm90::tokens::store_decoded_block_pair`). The operand is sm_90a's: the sm_100a
/// build has none, and its hosts pass null.
///
/// # Safety
/// `decoded` is null or its row `row` is as those functions require; with `partners`, as
/// `store_decoded_block_pair` requires of the lanes.
#[inline(always)]
pub(crate) unsafe fn store_decoded(
    decoded: *mut u32,
    pitch: u32,
    row: u32,
    block: u32,
    words: [u32; 2],
    scale: u8,
    partners: Option<u32>,
) {
    #[cfg(nvfp4_arch = "sm_90a")]
    if !decoded.is_null() {
        use crate::sm90::tokens::{store_decoded_block, store_decoded_block_pair};
        // SAFETY: the contract above.
        unsafe {
            let row = decoded.add(row as usize * pitch as usize);
            match partners {
                None => store_decoded_block(row, block, words, scale),
                Some(members) => store_decoded_block_pair(row, block, words, scale, members),
            }
        };
    }
    #[cfg(not(nvfp4_arch = "sm_90a"))]
    let _ = (decoded, pitch, row, block, words, scale, partners);
}

/// The row words of the decoded token operand of reduction length `k` (sm_90a; 0 elsewhere,
/// where none is written).
#[inline(always)]
pub(crate) fn decoded_pitch(k: u32) -> u32 {
    #[cfg(nvfp4_arch = "sm_90a")]
    return crate::sm90::tokens::decoded_row_words(k);
    #[cfg(not(nvfp4_arch = "sm_90a"))]
    {
        let _ = k;
        0
    }
}

/// One block's scale code and packed e2m1 codes from its values and the bits of their largest
/// magnitude, with global scale `g`: `scale = e4m3(amax / 6 / g)`, then each value
/// `e2m1(x / (scale · g))` (see the module doc). The one definition of the block arithmetic:
/// the GEMM epilogues that write NVFP4 call it too, so their output is this quantizer's, bit for
/// bit.
#[inline(always)]
pub(crate) fn encode_block(values: &[f32; SCALE_BLOCK_K], largest: u32, g: f32) -> (u8, [u32; 2]) {
    let amax = f32::from_bits(largest);
    // The codec's `f32_to_e4m3` and `e4m3_to_f32` in hardware (the same rounding and
    // saturation; the scale is never negative, and NaN only for a non-finite input, which
    // makes the whole call an error): 4 instructions instead of about 50.
    let scale_code = cvt::f32x2_to_e4m3x2_satfinite(0.0, amax / E2M1_MAX / g) as u8;
    let scale = cvt::f16_to_f32(cvt::e4m3x2_to_f16x2(scale_code as u16) as u16);
    let denominator = scale * g;
    // The quotients `x / denominator`, bit-identical to the division (block-uniform branch:
    // the division only for extreme global scales; a zero scale gives zero codes).
    let words = match Divisor::new(denominator) {
        Some(divisor) => encode_codes(values, |x| divisor.quotient(x, float::fma_rn)),
        None if denominator > 0.0 => encode_codes(values, |x| x / denominator),
        None => [0; 2],
    };
    (scale_code, words)
}

/// [`encode_block`] of 16 fp16 values as loaded (two 16-byte vectors, the first value in the
/// low half of the first word).
#[inline(always)]
pub(crate) fn encode_f16_block(raw: [[u32; 4]; 2], g: f32) -> (u8, [u32; 2]) {
    encode_block(&F16::widen(raw), F16::largest_magnitude_bits(raw), g)
}

/// Writes zeros over the padding of the blocked scales: grid-stride over the items of
/// [`ScalePadding`] (byte stores for the columns past `k / 16` of the real rows, then a 16-byte
/// store per line of the last row block that holds no real row, word stores for the padding
/// words of the others).
///
/// # Safety
/// `args.scales` holds `BlockedScales::new(rows, k).len()` bytes, 16-byte aligned.
#[inline(always)]
unsafe fn zero_scale_padding(args: &QuantizeArgs, layout: BlockedScales, first: u32, stride: u32) {
    let padding = ScalePadding::new(args.rows, args.k);
    let column_items = padding.column_items();
    // At least 1 (a zero gap has no column items): this proves the division cannot panic.
    let column_gap = padding.column_gap.max(1);
    let mut item = first;
    while item < padding.items() {
        // SAFETY: every offset is inside the layout (`ScalePadding`; the caller's contract).
        unsafe {
            if item < column_items {
                let (row, gap) = (item / column_gap, item % column_gap);
                let at = layout.offset_u32(row, padding.blocks_per_row + gap);
                mem::st_global_b8(args.scales.add(at as usize), 0);
            } else {
                let line = item - column_items;
                let at = args.scales.add(padding.line_offset(line) as usize) as *mut u32;
                match padding.real_words(line % ATOM_LINES as u32) {
                    0 => mem::st_global_v4_b32(at, [0; 4]),
                    real => {
                        for word in 1..4 {
                            if word >= real {
                                mem::st_global_b32(at.add(word as usize), 0);
                            }
                        }
                    }
                }
            }
        }
        item += stride;
    }
}

/// Counts this CTA in; the last CTA of the launch moves the running non-finite code into the
/// result word and leaves the running word and the count at zero ([`QuantizeStatus`]).
/// `reported`: this thread updated the running code.
///
/// The count word's low [`QUANTIZE_COUNT_BITS`] bits count the CTAs, the bits above them the
/// CTAs that reported a code, so that the last CTA reads and clears the running word only when
/// one did: without a report (the usual call) its arrival is the launch's last round trip.
///
/// # Safety
/// `status` holds the [`QUANTIZE_STATUS_WORDS`] words, zero when first used, used by this
/// launch alone while it runs, which has fewer than `2^QUANTIZE_COUNT_BITS` CTAs.
#[inline(always)]
unsafe fn finish_status(status: *mut u64, reported: bool) {
    // Every running-code update happens before its CTA's arrival (the release below). Only the
    // threads that made one fence: a fence waits for all of the thread's stores, the data's
    // too, which the status does not need.
    if reported {
        fence::acq_rel_gpu();
    }
    let cta_reported = fence::sync_threads_or(reported);
    if sreg::thread_idx_x() != 0 {
        return;
    }
    const COUNT_MASK: u32 = (1 << QUANTIZE_COUNT_BITS) - 1;
    let arrival = 1 + (u32::from(cta_reported) << QUANTIZE_COUNT_BITS);
    let arrivals = status.wrapping_add(QuantizeStatus::Arrivals as usize) as *mut u32;
    // SAFETY: the caller's contract.
    unsafe {
        let before = mem::atom_add_acq_rel_gpu_u32(arrivals, arrival);
        if before & COUNT_MASK == sreg::grid_dim_x() - 1 {
            // The last CTA: every other CTA's updates were released before their arrivals,
            // which this RMW acquired; without a report the running word is still zero.
            let code = if (before + arrival) >> QUANTIZE_COUNT_BITS != 0 {
                mem::atom_exch_relaxed_gpu_u64(status.wrapping_add(QuantizeStatus::Running as usize), 0)
            } else {
                0
            };
            mem::st_global_b64(status.wrapping_add(QuantizeStatus::Result as usize), code);
            mem::st_relaxed_gpu_b32(arrivals, 0);
        }
    }
}

/// The packed e2m1 codes of a block's 16 values, each encoded from `quotient(x)`'s magnitude and
/// `x`'s sign: value `i` in bits `4·(i mod 8)` of word `i / 8` (two per byte, the first in the
/// low nibble). Written out with constant indices (a loop that LLVM leaves rolled would index
/// the arrays in local memory); nibbles are added, not or-ed, so that each placement is one
/// shift-and-add instruction.
#[inline(always)]
fn encode_codes(values: &[f32; SCALE_BLOCK_K], quotient: impl Fn(f32) -> f32) -> [u32; 2] {
    let code = |i: usize| {
        let x = values[i];
        let magnitude = e2m1_magnitude_code(quotient(x));
        (magnitude + e2m1_sign_bit(x)) << (4 * (i % 8))
    };
    [
        code(0) + code(1) + code(2) + code(3) + code(4) + code(5) + code(6) + code(7),
        code(8) + code(9) + code(10) + code(11) + code(12) + code(13) + code(14) + code(15),
    ]
}

#[inline(always)]
unsafe fn amax<E: InputElement>(args: &AmaxArgs) {
    let (mut block, stride) = grid_stride();
    let mut largest = 0u32;
    while block < args.blocks {
        // SAFETY: `block` indexes 16 elements inside `values` (host contract).
        let raw = unsafe { E::load(args.values.add(block as usize * SCALE_BLOCK_K * E::BYTES)) };
        largest = largest.max(E::largest_magnitude_bits(raw));
        block += stride;
    }
    let largest = warp::max_u32(largest);
    if sreg::lane_id() == 0 {
        // SAFETY: the amax word (host contract).
        unsafe { mem::atom_max_relaxed_gpu_u32(args.amax, largest) };
    }
}

macro_rules! entry_points {
    ($($element:ident $quantize:ident $amax:ident;)*) => {$(
        /// Quantizes row-major values to NVFP4 (see the module doc).
        ///
        /// # Safety
        /// Arguments must satisfy [`QuantizeArgs`]' contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $quantize(args: QuantizeArgs) {
            // SAFETY: forwarded contract.
            unsafe { quantize::<$element>(&args) }
        }

        /// The largest magnitude of the values (see the module doc).
        ///
        /// # Safety
        /// Arguments must satisfy [`AmaxArgs`]' contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $amax(args: AmaxArgs) {
            // SAFETY: forwarded contract.
            unsafe { amax::<$element>(&args) }
        }
    )*};
}

registry::quantize_entries!(entry_points);
