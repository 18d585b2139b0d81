//! The preparation pass's tables, shared by the Hopper and Blackwell grouped kernels (see
//! [`crate::grouped`]): validates a launch's device-side offsets and writes one [`GroupDesc`] per
//! group, the groups' [`GroupSchedule`](crate::schedule::GroupSchedule)s and the
//! [`GroupedHeader`], which the persistent kernel reads with [`load_desc`] and the schedule
//! table. Device code only; the arch modules own the entry points (Hopper's also decodes the
//! tokens).

use crate::grouped::{
    GROUP_DESC_WORDS, GroupDesc, GroupedHeader, GroupedPrepareArgs, HEADER_RECORDS, SCALE_ROW_ALIGNMENT,
    STATUS_OK, STATUS_ROWS_DECREASE, STATUS_ROWS_EXCEED_CAPACITY, STATUS_SCALES_MISALIGNED,
    STATUS_SCALES_OUT_OF_RANGE, SeparateGroup, TABLE_SCRATCH_WORDS_PER_WARP, group_schedule,
};
use crate::layout::BlockedScales;
use crate::ptx::{fence, mem, smem, sreg, warp};
use crate::schedule::{SERPENTINE_MAX_TILES_PER_CTA, working_ctas};

/// 16-byte words of a [`GroupDesc`] before its NVFP4-output fields (`out_scales` on), which
/// only the NVFP4 epilogues read ([`load_desc_with_output`]).
const DESC_INPUT_WORDS: usize = core::mem::offset_of!(GroupDesc, out_scales) / 16;
const _: () = assert!(
    core::mem::offset_of!(GroupDesc, out_scales).is_multiple_of(16) && DESC_INPUT_WORDS < GROUP_DESC_WORDS,
    "the NVFP4-output fields start a word of their own"
);

/// Group `g`'s descriptor as the persistent kernels' tiles need it: its NVFP4-output fields
/// are not loaded (zero), so an fp16 launch reads what it did before they existed.
///
/// # Safety
/// `g` below the launch's groups; the preparation pass wrote the descriptors.
#[inline(always)]
pub(crate) unsafe fn load_desc(descs: *const GroupDesc, g: u32) -> GroupDesc {
    // SAFETY: forwarded.
    unsafe { load_desc_words::<DESC_INPUT_WORDS>(descs, g) }
}

/// Group `g`'s `token_row` and `rows` alone (one 16-byte load): what a producer of token
/// boxes needs, at a fraction of [`load_desc`]'s registers.
///
/// # Safety
/// As [`load_desc`].
#[inline(always)]
pub(crate) unsafe fn load_desc_token_rows(descs: *const GroupDesc, g: u32) -> (u32, u32) {
    const WORD: usize = core::mem::offset_of!(GroupDesc, token_row) / 16;
    const LANE: usize = core::mem::offset_of!(GroupDesc, token_row) % 16 / 4;
    const {
        assert!(
            LANE < 3
                && core::mem::offset_of!(GroupDesc, rows) == core::mem::offset_of!(GroupDesc, token_row) + 4,
            "token_row and rows share one 16-byte word"
        )
    };
    let words = descs.wrapping_add(g as usize) as *const u32;
    // SAFETY: forwarded; inside group g's record.
    let word = unsafe { mem::ld_global_v4_b32(words.add(4 * WORD)) };
    (word[LANE], word[LANE + 1])
}

/// What a producer of weight copies reads of a group's descriptor ([`load_desc_weights`]).
pub(crate) struct DescWeights {
    pub gate_scales: u64,
    pub up_scales: u64,
    pub gate_map: u64,
    pub up_map: u64,
    pub k: u32,
    pub weight_rows: u32,
    pub up_row_offset: u32,
    pub weight_map_row: u32,
}

/// Group `g`'s fields that locate its weights' tensor-map rows and scale atoms, one 32-bit
/// load each: a producer thread has registers for little more than these.
///
/// # Safety
/// As [`load_desc`].
#[inline(always)]
pub(crate) unsafe fn load_desc_weights(descs: *const GroupDesc, g: u32) -> DescWeights {
    let words = descs.wrapping_add(g as usize) as *const u32;
    // SAFETY: forwarded; inside group g's record, 4-byte aligned fields.
    let word = |offset: usize| unsafe { mem::ld_global_b32(words.add(offset / 4)) };
    let wide = |offset: usize| word(offset) as u64 | (word(offset + 4) as u64) << 32;
    use core::mem::offset_of;
    DescWeights {
        gate_scales: wide(offset_of!(GroupDesc, gate_scales)),
        up_scales: wide(offset_of!(GroupDesc, up_scales)),
        gate_map: wide(offset_of!(GroupDesc, gate_map)),
        up_map: wide(offset_of!(GroupDesc, up_map)),
        k: word(offset_of!(GroupDesc, k)),
        weight_rows: word(offset_of!(GroupDesc, weight_rows)),
        up_row_offset: word(offset_of!(GroupDesc, up_row_offset)),
        weight_map_row: word(offset_of!(GroupDesc, weight_map_row)),
    }
}

/// Group `g`'s whole descriptor, NVFP4-output fields included.
///
/// # Safety
/// As [`load_desc`].
#[inline(always)]
pub(crate) unsafe fn load_desc_with_output(descs: *const GroupDesc, g: u32) -> GroupDesc {
    // SAFETY: forwarded.
    unsafe { load_desc_words::<GROUP_DESC_WORDS>(descs, g) }
}

/// The first `WORDS` 16-byte words of group `g`'s descriptor, the rest zero.
#[inline(always)]
unsafe fn load_desc_words<const WORDS: usize>(descs: *const GroupDesc, g: u32) -> GroupDesc {
    let words = descs.wrapping_add(g as usize) as *const u32;
    // SAFETY: g < groups (the caller's), 16-byte aligned records.
    let raw: [[u32; 4]; GROUP_DESC_WORDS] = core::array::from_fn(|i| {
        if i < WORDS {
            unsafe { mem::ld_global_v4_b32(words.add(4 * i)) }
        } else {
            [0; 4]
        }
    });
    // SAFETY: GroupDesc is plain integers and floats (repr(C)), exactly these words.
    unsafe { core::mem::transmute::<[[u32; 4]; GROUP_DESC_WORDS], GroupDesc>(raw) }
}

/// Shape of group `g` and the first rule its device-side offsets break (contiguous
/// convention; the host validated the separate one).
struct GroupShape {
    rows: u32,
    n: u32,
    k: u32,
    status: u32,
}

#[inline(always)]
unsafe fn group_shape(args: &GroupedPrepareArgs, g: u32) -> GroupShape {
    if args.separate_convention != 0 {
        // SAFETY: g < groups.
        let e = unsafe { &*args.separate.add(g as usize) };
        return GroupShape {
            rows: e.rows,
            n: e.n,
            k: e.k,
            status: STATUS_OK,
        };
    }
    // SAFETY: g + 1 ≤ groups: inside the G + 1 offsets.
    let (begin, end, scale_begin, scale_end) = unsafe {
        (
            mem::ld_global_b32(args.row_offsets.add(g as usize)),
            mem::ld_global_b32(args.row_offsets.add(g as usize + 1)),
            mem::ld_global_b32(args.scale_offsets.add(g as usize)),
            mem::ld_global_b32(args.scale_offsets.add(g as usize + 1)),
        )
    };
    let rows = end.saturating_sub(begin);
    let status = if end < begin {
        STATUS_ROWS_DECREASE
    } else if end > args.rows_capacity {
        STATUS_ROWS_EXCEED_CAPACITY
    } else if !scale_begin.is_multiple_of(SCALE_ROW_ALIGNMENT) {
        STATUS_SCALES_MISALIGNED
    } else if scale_begin as u64 + rows as u64 > scale_end as u64 || scale_end > args.scale_rows_capacity {
        STATUS_SCALES_OUT_OF_RANGE
    } else {
        STATUS_OK
    };
    GroupShape {
        rows: if status == STATUS_OK { rows } else { 0 },
        n: args.n,
        k: args.k,
        status,
    }
}

/// The warps of one CTA together: validate the groups and write their descriptors, then their
/// schedule records (a block-wide scan of their iterations; thread `i` takes a contiguous run of
/// groups, one each for up to as many groups as threads) and the header. Each thread's groups
/// are a chain of dependent loads and stores (the offsets, then the descriptor), so spreading
/// them over every thread shortens the pass: one warp took 11.5 µs for 128 groups (H200).
///
/// # Safety
/// Every thread of one CTA calls it (it synchronizes the CTA when it has more than one warp);
/// `scratch` is [`crate::grouped::table_scratch_bytes`] of the CTA's warps of shared memory, 16-byte aligned;
/// `args` satisfies the preparation pass's contract (`groups` ≤ its table sizes, valid buffers
/// for the convention).
#[inline(always)]
pub(crate) unsafe fn write_tables(args: &GroupedPrepareArgs, groups: u32, scratch: u32) {
    let (thread, threads) = (sreg::thread_idx_x(), sreg::block_dim_x());
    let (warp_index, warps, lane) = (thread / 32, threads / 32, sreg::lane_id());
    let per_thread = groups.div_ceil(threads.max(1));
    let first = (thread * per_thread).min(groups);
    let end = (first + per_thread).min(groups);
    let schedule_of = |shape: &GroupShape| {
        group_schedule(
            shape.rows,
            shape.n,
            shape.k,
            args.tile_tokens,
            args.tile_n,
            args.k_per_stage,
        )
    };
    let (mut iterations, mut tiles) = (0u32, 0u32);
    let (mut fewest_stages, mut most_stages) = (u32::MAX, 0u32);
    let (mut bad_group, mut bad_status) = (u32::MAX, STATUS_OK);
    for g in first..end {
        // SAFETY: g < groups.
        let shape = unsafe { group_shape(args, g) };
        if shape.status != STATUS_OK && bad_group == u32::MAX {
            (bad_group, bad_status) = (g, shape.status);
        }
        let schedule = schedule_of(&shape);
        let group_tiles = schedule.m_tiles * schedule.n_tiles;
        iterations += schedule.iterations();
        tiles += group_tiles;
        if group_tiles > 0 {
            fewest_stages = fewest_stages.min(schedule.stages);
            most_stages = most_stages.max(schedule.stages);
        }
        // SAFETY: g < groups: inside the descriptor array, 16-byte aligned.
        unsafe {
            let desc = describe(args, g, &shape);
            let words = core::mem::transmute::<GroupDesc, [[u32; 4]; GROUP_DESC_WORDS]>(desc);
            let out = args.descs.add(g as usize) as *mut u32;
            for (i, word) in words.into_iter().enumerate() {
                mem::st_global_v4_b32(out.add(4 * i), word);
            }
        }
    }
    // The warp's values; its first bad group's status from the lane that found it.
    let warp_inclusive = warp::inclusive_sum(iterations);
    let mut totals = Totals {
        iterations: warp::shuffle_index(warp_inclusive, 31),
        tiles: warp::shuffle_index(warp::inclusive_sum(tiles), 31),
        fewest_stages: warp::min_u32(fewest_stages),
        most_stages: warp::max_u32(most_stages),
        bad_group: warp::min_u32(bad_group),
        bad_status: STATUS_OK,
    };
    totals.bad_status = warp::shuffle_index(
        bad_status,
        if totals.bad_group == u32::MAX {
            0
        } else {
            totals.bad_group / per_thread.max(1) % 32
        },
    );
    // Then the CTA's, through shared memory: the iterations of the warps before this one, and
    // the totals of all.
    let mut before = 0;
    if warps > 1 {
        let record = |w: u32| scratch + 4 * TABLE_SCRATCH_WORDS_PER_WARP * w;
        if lane == 0 {
            // SAFETY: this warp's record of the scratch (contract).
            unsafe {
                smem::st_v4(
                    record(warp_index),
                    [
                        totals.iterations,
                        totals.tiles,
                        totals.fewest_stages,
                        totals.most_stages,
                    ],
                );
                smem::st_v4(
                    record(warp_index) + 16,
                    [totals.bad_group, totals.bad_status, 0, 0],
                );
            }
        }
        fence::sync_threads();
        let mut all = Totals {
            iterations: 0,
            tiles: 0,
            fewest_stages: u32::MAX,
            most_stages: 0,
            bad_group: u32::MAX,
            bad_status: STATUS_OK,
        };
        for w in 0..warps {
            // SAFETY: written before the barrier.
            let ([iterations, tiles, fewest, most], [bad_group, bad_status, ..]) =
                unsafe { (smem::ld_v4(record(w)), smem::ld_v4(record(w) + 16)) };
            if w < warp_index {
                before += iterations;
            }
            all.iterations += iterations;
            all.tiles += tiles;
            all.fewest_stages = all.fewest_stages.min(fewest);
            all.most_stages = all.most_stages.max(most);
            // Warps own ascending runs of groups: the first warp with a bad group has the first.
            if all.bad_group == u32::MAX && bad_group != u32::MAX {
                (all.bad_group, all.bad_status) = (bad_group, bad_status);
            }
        }
        totals = all;
    }
    let uniform_stages = if totals.fewest_stages == totals.most_stages {
        totals.most_stages
    } else {
        0
    };
    let mut begin = before + warp_inclusive - iterations;
    for g in first..end {
        // SAFETY: g < groups.
        let mut schedule = schedule_of(&unsafe { group_shape(args, g) });
        schedule.iteration_begin = begin;
        begin += schedule.iterations();
        // SAFETY: g < groups: inside the schedule table (after its 16-byte header), 16-byte
        // aligned.
        unsafe {
            mem::st_global_v4_b32(
                args.schedule.add(4 * (HEADER_RECORDS + g) as usize),
                schedule.to_words(),
            )
        };
    }
    if thread == 0 {
        let ok = totals.bad_group == u32::MAX;
        let header = GroupedHeader {
            total_iterations: if ok { totals.iterations } else { 0 },
            working_ctas: working_ctas(totals.tiles, uniform_stages, totals.iterations, args.grid),
            status: totals.bad_status,
            status_group: totals.bad_group,
            tile_stages: uniform_stages,
            serpentine_waves: (totals.tiles as u64 <= SERPENTINE_MAX_TILES_PER_CTA as u64 * args.grid as u64)
                as u32,
            reserved: [0; 2],
        };
        // SAFETY: the header's 32 bytes at the start of the table, as two 16-byte records.
        unsafe {
            let [first, second] = core::mem::transmute::<GroupedHeader, [[u32; 4]; 2]>(header);
            mem::st_global_v4_b32(args.schedule, first);
            mem::st_global_v4_b32(args.schedule.add(4), second);
        };
    }
}

/// What the CTA's threads found, summed (or the extremes) over their groups.
#[derive(Clone, Copy)]
struct Totals {
    iterations: u32,
    tiles: u32,
    /// Stages of the groups with tiles: fewest and most (`u32::MAX`, 0 without such groups).
    fewest_stages: u32,
    most_stages: u32,
    /// The first group whose offsets broke a rule (`u32::MAX`: none), and which rule.
    bad_group: u32,
    bad_status: u32,
}

/// Group `g`'s descriptor.
#[inline(always)]
unsafe fn describe(args: &GroupedPrepareArgs, g: u32, shape: &GroupShape) -> GroupDesc {
    if args.separate_convention != 0 {
        // SAFETY: g < groups.
        let e: &SeparateGroup = unsafe { &*args.separate.add(g as usize) };
        return GroupDesc {
            gate: e.gate,
            gate_scales: e.gate_scales,
            up: e.up,
            up_scales: e.up_scales,
            out: e.out,
            a_scales: e.a_scales,
            a_map: e.a_map,
            gate_map: e.gate_map,
            up_map: e.up_map,
            token_row: e.token_row,
            rows: e.rows,
            n: e.n,
            k: e.k,
            ldc: e.n,
            weight_rows: e.n,
            up_row_offset: 0,
            weight_map_row: 0,
            alpha_gate: e.alpha_gate,
            alpha_up: e.alpha_up,
            out_scales: 0,
            out_global_scale: 1.0,
            reserved: 0,
        };
    }
    let g64 = g as u64;
    let nvfp4 = !args.out_scales.is_null();
    // SAFETY: g < groups: inside the G + 1 offsets and the per-group scales.
    let (token_row, scale_row, alpha_gate, alpha_up, out_global_scale) = unsafe {
        let alpha = |values: *const f32| {
            if values.is_null() {
                1.0
            } else {
                f32::from_bits(mem::ld_global_b32(values.add(g as usize) as *const u32))
            }
        };
        (
            mem::ld_global_b32(args.row_offsets.add(g as usize)),
            mem::ld_global_b32(args.scale_offsets.add(g as usize)),
            alpha(args.alpha_gate),
            alpha(args.alpha_up),
            if nvfp4 { alpha(args.out_global_scales) } else { 1.0 },
        )
    };
    // A group's first scale atom: a whole 128-row block (the offsets were validated, or the
    // group has no rows) of a layout over `scale_rows_capacity` rows and `columns` columns.
    let first_atom = |columns: u32| {
        BlockedScales::new(args.scale_rows_capacity as usize, columns as usize)
            .atom_offset(scale_row as usize / 128, 0) as u64
    };
    GroupDesc {
        gate: args.gate + g64 * args.weight_stride,
        gate_scales: args.gate_scales + g64 * args.weight_scale_stride,
        up: args.up + g64 * args.weight_stride,
        up_scales: args.up_scales + g64 * args.weight_scale_stride,
        out: if nvfp4 {
            args.out as u64 + token_row as u64 * (args.n / 2) as u64
        } else {
            args.out as u64 + 2 * token_row as u64 * args.n as u64
        },
        a_scales: args.a_scales as u64 + first_atom(args.k),
        // The launch's own maps (the kernel's arguments).
        a_map: 0,
        gate_map: 0,
        up_map: 0,
        token_row,
        rows: shape.rows,
        n: args.n,
        k: args.k,
        ldc: args.n,
        weight_rows: args.weight_rows,
        up_row_offset: args.up_row_offset,
        weight_map_row: g * args.weight_rows,
        alpha_gate: args.alpha_factor * alpha_gate,
        alpha_up: args.alpha_factor * if args.gated != 0 { alpha_up } else { alpha_gate },
        out_scales: if nvfp4 {
            args.out_scales as u64 + first_atom(args.n)
        } else {
            0
        },
        out_global_scale,
        reserved: 0,
    }
}
