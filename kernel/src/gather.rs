//! The grouped ops' token layout from an NVFP4 matrix, in one kernel: each output row is a
//! source row's packed codes (a routed copy of a token: the Mixture-of-Experts layer quantizes
//! each token once and gathers it per expert), and each group's scale rows start at its scale
//! offset (a 128-row block of the blocked layout), the rows of no group zero. Bytes are copied,
//! never re-encoded, so the result is bit for bit the quantization of the gathered rows.
//!
//! Two grid-stride loops: the packed rows in 8-byte units (one scale block of codes), then the
//! output scale layout atom by atom, one 4-byte word (a row's four scale codes of one atom) per
//! item, in the atom's byte order, so that each warp writes 128 contiguous bytes. Parameters:
//! [`GatherGroupedArgs`].

use crate::common::GatherGroupedArgs;
use crate::layout::{ATOM_BYTES, ATOM_ROWS, ATOM_SCALE_COLS, BlockedScales, SCALE_BLOCK_K};
use crate::ptx::{mem, sreg};
use crate::registry;

/// The source row of output row `i`, if it names one.
///
/// # Safety
/// `i < args.rows`; `args.source_rows` null or `args.rows` readable words.
#[inline(always)]
unsafe fn source_of(args: &GatherGroupedArgs, i: u32) -> Option<u32> {
    let source = if args.source_rows.is_null() {
        i
    } else {
        // SAFETY: the contract.
        unsafe { mem::ld_global_nc_b32(args.source_rows.add(i as usize)) }
    };
    (source < args.source_count).then_some(source)
}

/// The output row whose scales go to scale row `r`: the last group whose scale offset is at
/// most `r`, if `r` falls within that group's rows.
///
/// # Safety
/// The offsets hold `args.groups + 1` readable words each.
#[inline(always)]
unsafe fn row_of_scale_row(args: &GatherGroupedArgs, r: u32) -> Option<u32> {
    // SAFETY (all loads): indices at most `groups` (the contract).
    let at = |offsets: *const u32, g: u32| unsafe { mem::ld_global_nc_b32(offsets.add(g as usize)) };
    if at(args.scale_offsets, 0) > r {
        return None;
    }
    let (mut low, mut high) = (0, args.groups);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if at(args.scale_offsets, middle) <= r {
            low = middle;
        } else {
            high = middle;
        }
    }
    let local = r - at(args.scale_offsets, low);
    let (first, end) = (at(args.row_offsets, low), at(args.row_offsets, low + 1));
    let row = first.wrapping_add(local);
    (local < end.wrapping_sub(first) && row >= first && row < args.rows).then_some(row)
}

/// The kernel body (see the module doc).
///
/// # Safety
/// [`GatherGroupedArgs`]' contract.
#[inline(always)]
unsafe fn gather_grouped(args: &GatherGroupedArgs) {
    let units_per_row = args.k / SCALE_BLOCK_K as u32;
    if units_per_row == 0 || args.groups == 0 {
        return; // never with a valid launch; also proves the divisions below cannot panic
    }
    let stride = sreg::grid_dim_x() * sreg::block_dim_x();
    let first = sreg::block_idx_x() * sreg::block_dim_x() + sreg::thread_idx_x();
    // Packed rows: 8-byte units (a scale block's 16 codes).
    let mut item = first;
    while item < args.rows * units_per_row {
        let (row, unit) = (item / units_per_row, item % units_per_row);
        // SAFETY: row < rows; the source row's unit is inside `data`, the item inside `out_data`.
        unsafe {
            let words = match source_of(args, row) {
                Some(s) => mem::ld_global_nc_v2_b32(
                    args.data
                        .add((s as usize * units_per_row as usize + unit as usize) * 8)
                        as *const u32,
                ),
                None => [0; 2],
            };
            mem::st_global_v2_b32(args.out_data.add(item as usize * 8) as *mut u32, words);
        }
        item += stride;
    }
    // Scales: item `a · 128 + j` is word `j` of output atom `a` (its row `(j % 4) · 32 + j / 4`).
    let (source_layout, out_layout) = (
        BlockedScales::new(args.source_count as usize, args.k as usize),
        BlockedScales::new(args.scale_rows as usize, args.k as usize),
    );
    let k_blocks = (out_layout.k_blocks as u32).max(1); // at least 1: proves the division cannot panic
    const WORDS_PER_ATOM: u32 = (ATOM_BYTES / 4) as u32;
    let mut item = first;
    while item < out_layout.row_blocks as u32 * k_blocks * WORDS_PER_ATOM {
        let (atom, j) = (item / WORDS_PER_ATOM, item % WORDS_PER_ATOM);
        let (row_block, k_block) = (atom / k_blocks, atom % k_blocks);
        let r = row_block * ATOM_ROWS as u32 + (j % 4) * 32 + j / 4;
        let column = k_block * ATOM_SCALE_COLS as u32;
        // SAFETY: the offsets' and rows' contract; a source row's word is inside `scales`, the
        // item's word inside `out_scales` (item · 4 is its byte offset: the atom order above).
        unsafe {
            let word = match row_of_scale_row(args, r).and_then(|row| source_of(args, row)) {
                Some(s) => mem::ld_global_nc_b32(
                    args.scales.add(source_layout.offset_u32(s, column) as usize) as *const u32,
                ),
                None => 0,
            };
            mem::st_global_b32(args.out_scales.add(item as usize * 4) as *mut u32, word);
        }
        item += stride;
    }
}

macro_rules! gather_entry {
    ($name:ident) => {
        /// The grouped-layout gather (see the module doc).
        ///
        /// # Safety
        /// [`GatherGroupedArgs`]' contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GatherGroupedArgs) {
            // SAFETY: forwarded contract.
            unsafe { gather_grouped(&args) }
        }
    };
}

registry::gather_grouped_entry!(gather_entry);
