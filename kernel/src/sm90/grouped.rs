//! Grouped NVFP4 GEMMs for Hopper (sm_90a): the plain grouped GEMM and the grouped dual GEMM
//! (entry points, the problem they hand to the shared roles, and the preparation pass). The
//! design is in `docs/sm90-kernels.md` (shown as `nvfp4_kernel::design::sm90` by `cargo doc`),
//! section "Grouped GEMM and grouped dual GEMM".

use crate::epilogue::{NVFP4_TILE_BLOCKS, Nvfp4Tile};
use crate::grouped::{
    GroupedPrepareArgs, HEADER_RECORDS, MAX_GROUPS, PARAMETER_GROUPS, PARAMETER_MAPS_PER_GROUP,
    SeparateGroup, SeparateParameters, SeparatePrepareArgs, prepare_scratch_offset,
};
use crate::layout::{ATOM_ROWS, BlockedScales, SCALE_BLOCK_K};
use crate::prepare;
use crate::ptx::{copy, fence, mem, reg, smem, sreg, warp, wgmma};
use crate::schedule::{GroupSchedule, GroupTable, GroupedTiles, StreamK, TileSpan};
use crate::sm90::config::{
    self, FITTED_WIDTH_COUNT, GroupedArgs, K_PER_SLICE, Tile, WEIGHT_BOX_ROWS, fitted_tile_width,
    fitted_width_for, fitted_width_index, padded_k, tile_n,
};

/// Bytes of one tensor map in the kernel parameter.
const TENSOR_MAP_BYTES: u64 = core::mem::size_of::<crate::launch::TensorMap>() as u64;
use crate::sm90::mainloop::{
    self, ConsumerLane, PackedTokens, Problem, RowOffsets, RowPointers, Shared, SlotHeader, TileJob,
    WeightBases, WeightSource, WeightStage, Work,
};
use crate::sm90::registry;
use crate::sm90::tokens::{GroupedCodec, decode_slice_chunks, store_warp_slices};

/// The schedule table in shared memory: the header at `base`, group `g`'s record at
/// `base + 16·(HEADER_RECORDS + g)`.
/// Every read goes to shared memory (nothing of it stays live in registers across the roles'
/// `setmaxnreg`).
#[derive(Clone, Copy)]
struct SharedGroups {
    base: u32,
    groups: u32,
}

impl GroupTable for SharedGroups {
    #[inline(always)]
    fn groups(&self) -> u32 {
        self.groups
    }

    #[inline(always)]
    fn group(&self, g: u32) -> GroupSchedule {
        // SAFETY: g < groups: inside the table the CTA copied at its start.
        GroupSchedule::from_words(unsafe { smem::ld_v4(self.base + 16 * (HEADER_RECORDS + g)) })
    }

    #[inline(always)]
    fn total(&self) -> u32 {
        // SAFETY: the header's first word, copied at the start.
        unsafe { smem::ld_b32(self.base) }
    }
}

/// A grouped launch, gated or plain; `NVFP4`: gated, writing NVFP4 (the descriptors'
/// `out_scales`); `FITTED`: its tiles fitted to each group ([`Tile::fits_groups`]).
struct GroupedProblem<'a, M, W, const GATED: bool, const NVFP4: bool, const FITTED: bool> {
    args: &'a GroupedArgs,
    table: SharedGroups,
    /// The generic address of `args.token_maps` in parameter space (computed where it is used).
    token_maps: M,
    /// The generic address of `args.weight_maps` in parameter space.
    weight_maps: W,
}

impl<M: Fn() -> u64, W: Fn() -> u64, const GATED: bool, const NVFP4: bool, const FITTED: bool>
    GroupedProblem<'_, M, W, GATED, NVFP4, FITTED>
{
    /// The generic address of the token map for tiles of the fitted width `index`
    /// (`GroupedArgs::token_maps[index]`).
    #[inline(always)]
    fn token_map_of(&self, index: u32) -> u64 {
        (self.token_maps)() + index as u64 * TENSOR_MAP_BYTES
    }

    /// The first output of the tile `span` (a group's tiles are token tiles within output tiles).
    #[inline(always)]
    fn first_output(&self, span: &TileSpan) -> u32 {
        let n_tile = span
            .local
            .checked_div(self.table.group(span.group).m_tiles)
            .unwrap_or(0);
        n_tile * tile_n(GATED)
    }

    /// The first row (in its group) and the tokens of the tile `span` of a group of `rows`
    /// tokens: 128-token tiles (the launch's `tile`), or fitted ones ([`fitted_tile_width`]).
    #[inline(always)]
    fn tile_rows(&self, span: &TileSpan, tile: Tile, rows: u32) -> (u32, u32) {
        let m_tiles = self.table.group(span.group).m_tiles;
        let m_tile = span.local.checked_rem(m_tiles).unwrap_or(0);
        let width = if FITTED {
            fitted_tile_width(rows, m_tiles)
        } else {
            tile.tokens
        };
        let row0 = m_tile * width;
        (row0, rows.saturating_sub(row0).min(width))
    }
}

impl<M: Fn() -> u64, W: Fn() -> u64, const GATED: bool, const NVFP4: bool, const FITTED: bool> Problem
    for GroupedProblem<'_, M, W, GATED, NVFP4, FITTED>
{
    type Space = GroupedTiles<SharedGroups>;
    const GATED: bool = GATED;
    const RECOMPUTE_AFTER_MAINLOOP: bool = true;
    const FITTED: bool = FITTED;
    const NVFP4_OUT: bool = {
        assert!(GATED || !NVFP4, "NVFP4 output is the gated epilogue's");
        NVFP4
    };

    #[inline(always)]
    fn token_map(&self) -> u64 {
        // The launch tile's whole width.
        self.token_map_of(FITTED_WIDTH_COUNT - 1)
    }

    #[inline(always)]
    fn token_rows(&self, span: &TileSpan, tile: Tile) -> (u32, u32) {
        // SAFETY: span.group < groups.
        let (token_row, rows) = unsafe { prepare::load_desc_token_rows(self.args.descs, span.group) };
        let (row0, tokens) = self.tile_rows(span, tile, rows);
        (token_row + row0, tokens)
    }

    #[inline(always)]
    fn token_box(&self, tokens: u32, tile: Tile) -> (u64, u32) {
        if FITTED {
            // A fitted launch's tile is the widest: each width's box is the width itself.
            (
                self.token_map_of(fitted_width_index(tokens)),
                fitted_width_for(tokens) * K_PER_SLICE * 2,
            )
        } else {
            (self.token_map(), tile.decoded_slice_bytes())
        }
    }

    #[inline(always)]
    unsafe fn prefetch_token_maps(&self) {
        let maps = if FITTED { FITTED_WIDTH_COUNT } else { 1 };
        for index in FITTED_WIDTH_COUNT - maps..FITTED_WIDTH_COUNT {
            // SAFETY: forwarded; one of the launch's maps.
            unsafe { copy::prefetch_tensor_map(self.token_map_of(index)) };
        }
    }

    #[inline(always)]
    fn job(&self, span: &TileSpan, tile: Tile) -> TileJob {
        // SAFETY: span.group < groups.
        let desc = unsafe { prepare::load_desc(self.args.descs, span.group) };
        let (row0, tokens) = self.tile_rows(span, tile, desc.rows);
        TileJob {
            token_row: desc.token_row + row0,
            tokens,
            n0: self.first_output(span),
            n: desc.n,
            k: desc.k,
            gate: desc.gate as *const u8,
            gate_scales: desc.gate_scales as *const u8,
            up: desc.up as *const u8,
            up_scales: desc.up_scales as *const u8,
            weight_rows: desc.weight_rows,
            up_row_offset: desc.up_row_offset,
            out: (desc.out as *mut u16).wrapping_add(row0 as usize * desc.ldc as usize),
            ldc: desc.ldc,
            alpha_gate: desc.alpha_gate,
            alpha_up: desc.alpha_up,
        }
    }

    #[inline(always)]
    fn packed_tokens(&self) -> Option<PackedTokens> {
        None
    }

    #[inline(always)]
    fn nvfp4_tile(&self, span: &TileSpan, job: &TileJob) -> Nvfp4Tile {
        // The descriptor again, with its output fields (the epilogue's values are not kept
        // across the mainloop).
        // SAFETY: span.group < groups.
        let desc = unsafe { prepare::load_desc_with_output(self.args.descs, span.group) };
        // Opaque copies, as the dense kernel's: their address arithmetic stays here.
        let (row0, n0) = (reg::opaque(job.token_row - desc.token_row), reg::opaque(job.n0));
        let data_pitch = desc.n / 2;
        Nvfp4Tile {
            data: (reg::opaque_u64(desc.out) as *mut u8)
                .wrapping_add(row0 as usize * data_pitch as usize + (n0 / 2) as usize),
            data_pitch,
            scales: reg::opaque_u64(desc.out_scales) as *mut u8,
            // The group's own layout, from its first 128-row block.
            layout: BlockedScales::new(desc.rows as usize, desc.n as usize),
            scale_row: row0,
            first_block: n0 / SCALE_BLOCK_K as u32,
            blocks: NVFP4_TILE_BLOCKS,
            tokens: job.tokens,
            padding: Nvfp4Tile::padding_rows(desc.rows, row0, job.tokens),
            global_scale: desc.out_global_scale,
            decoded: core::ptr::null_mut(),
            decoded_pitch: 0,
        }
    }

    type Rows = RowPointers;
    type Codec = GroupedCodec;

    #[inline(always)]
    fn weight_rows(&self, job: &TileJob, lane: &ConsumerLane) -> RowPointers {
        RowOffsets::new(job, lane, GATED).at(&WeightBases::of(job))
    }

    #[inline(always)]
    unsafe fn load_weight_chunk(&self, rows: &RowPointers, stage: u32, h: usize, into: &mut WeightStage) {
        // SAFETY: forwarded.
        unsafe { rows.load_chunk(stage, h, !GATED, into) }
    }

    /// Every grouped tile reads its weights through the weight ring (its consumers' own loads,
    /// [`Problem::weight_rows`], serve no launch): 2–9 % faster on prefill (perf log).
    const WEIGHT_RING: bool = true;
    const COPY_OUT_WARPS: bool = !NVFP4;

    #[inline(always)]
    fn weight_source(&self, span: &TileSpan, tile: Tile) -> WeightSource {
        let _ = tile;
        // SAFETY: span.group < groups.
        let desc = unsafe { prepare::load_desc_weights(self.args.descs, span.group) };
        let n0 = self.first_output(span);
        // A group's own map (the separate convention), else the launch's stack.
        let own = |map: u64, launch: u64| if map != 0 { map } else { launch };
        let launch_maps = (self.weight_maps)();
        let gate_map = own(desc.gate_map, launch_maps);
        let gate_row = desc.weight_map_row + n0;
        let scales = BlockedScales::new(desc.weight_rows as usize, desc.k as usize);
        let group_atoms = |base: u64, row: u32| {
            (base as *const u8).wrapping_add(scales.atom_offset(row as usize / ATOM_ROWS, 0))
        };
        let (up_map, up_row, up_scales) = if GATED {
            (
                own(desc.up_map, launch_maps + TENSOR_MAP_BYTES),
                gate_row + desc.up_row_offset,
                group_atoms(desc.up_scales, n0 + desc.up_row_offset),
            )
        } else {
            (gate_map, gate_row + WEIGHT_BOX_ROWS, core::ptr::null())
        };
        WeightSource {
            gate_map,
            up_map,
            gate_row,
            up_row,
            gate_scales: group_atoms(desc.gate_scales, n0),
            up_scales,
            atoms: scales.k_blocks as u32,
            header: SlotHeader::of_rows(n0, n0 + desc.up_row_offset),
        }
    }
}

/// The persistent kernel body for `2·ACC` tokens per tile (`FITTED`: at most that many, each
/// tile as wide as its group needs), gated (writing NVFP4 if `NVFP4`) or plain.
#[inline(always)]
unsafe fn grouped<
    const ACC: usize,
    const SETS: usize,
    const CONSUMER: u32,
    const DECODER: u32,
    const PRODUCER: u32,
    const GATED: bool,
    const NVFP4: bool,
    const FITTED: bool,
>(
    args: &GroupedArgs,
    token_maps: impl Fn() -> u64,
    weight_maps: impl Fn() -> u64,
    mma: impl Fn(&mut [f32; ACC], [u32; 4], u64),
) {
    let tile = Tile {
        tokens: 2 * ACC as u32,
    };
    let shared = Shared {
        tile,
        plan: tile.grouped_shared(),
        base: smem::base(),
    };
    let groups = args.groups.min(MAX_GROUPS);
    let thread = sreg::thread_idx_x();
    if thread == 0 {
        // SAFETY: thread 0; the plan's ticket counter.
        unsafe { mainloop::setup(&shared, true, args.tickets) };
    }
    fence::sync_threads();
    fence::launch_dependents();
    // The preparation pass wrote the table: wait for it, then copy header and groups.
    fence::grid_dependency_wait();
    let mut record = thread;
    while record < HEADER_RECORDS + groups {
        // SAFETY: the header and `groups` records (16 bytes each) are inside `schedule`, and
        // inside the shared table.
        unsafe {
            let words = mem::ld_global_v4_b32(args.schedule.add(4 * record as usize));
            smem::st_v4(shared.groups() + 16 * record, words);
        }
        record += tile.threads();
    }
    fence::sync_threads();
    // SAFETY: copied above.
    let [total, ctas, _status, _group] = unsafe { smem::ld_v4(shared.groups()) };
    if total == 0 || ctas == 0 {
        return; // nothing to compute (or invalid device-side offsets: nothing is written)
    }
    // SAFETY: the header's second record, copied above.
    let [tile_stages, serpentine_waves, ..] = unsafe { smem::ld_v4(shared.groups() + 16) };
    let table = SharedGroups {
        base: shared.groups(),
        groups,
    };
    let split = StreamK::new(GroupedTiles { table }, ctas, tile_stages).serpentine(serpentine_waves != 0);
    let work = Work::new(split, &shared, args.workspace, args.flags, 0);
    let problem = GroupedProblem::<_, _, GATED, NVFP4, FITTED> {
        args,
        table,
        token_maps,
        weight_maps,
    };
    // SAFETY: the module contract.
    unsafe {
        mainloop::roles::<_, ACC, SETS, CONSUMER, DECODER, PRODUCER, true, false>(
            &problem, &shared, &work, mma,
        )
    }
}

macro_rules! entry_point {
    ($name:ident, $gated:literal, $nvfp4:literal, $tokens:literal, $mma:path) => {
        /// The sm_90a grouped kernel for one token-tile width (see the module doc for the
        /// contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GroupedArgs) {
            const TILE: Tile = Tile { tokens: $tokens };
            // A fitted tile's accumulators are its widest width's; the mainloop chooses its
            // wgmma per tile.
            const ACC: usize = TILE.grouped_tile_tokens() as usize / 2;
            // SAFETY (both): forwarded contract; descriptors point into the decoded slices.
            let mma = |acc: &mut [f32; ACC], a: [u32; 4], b: u64| unsafe { $mma(acc, a, b, true) };
            const REGISTERS: config::RegisterSplit = TILE.grouped_registers();
            const SETS: usize = TILE.accumulator_sets() as usize;
            unsafe {
                grouped::<
                    ACC,
                    SETS,
                    { REGISTERS.consumer },
                    { REGISTERS.decoder },
                    { REGISTERS.producer },
                    $gated,
                    $nvfp4,
                    { TILE.fits_groups() },
                >(
                    &args,
                    || {
                        crate::ptx::kernel_param_address!(
                            $name,
                            core::mem::offset_of!(GroupedArgs, token_maps)
                        )
                    },
                    || {
                        crate::ptx::kernel_param_address!(
                            $name,
                            core::mem::offset_of!(GroupedArgs, weight_maps)
                        )
                    },
                    mma,
                )
            }
        }
    };
}

/// Defines the grouped entries of every tile in the registry that has them: all gated (dual)
/// kernels, then those writing NVFP4, then all plain ones.
macro_rules! grouped_entries {
    ($($tokens:literal $mma:ident $dense:ident $dense_nvfp4:ident $dense_plain:ident $dense_bf16:ident
        $dense_plain_bf16:ident ($($grouped_mma:ident $gated:ident $gated_nvfp4:ident $plain:ident)?);)*) => {
        $($(entry_point!($gated, true, false, $tokens, wgmma::$grouped_mma);)?)*
        $($(entry_point!($gated_nvfp4, true, true, $tokens, wgmma::$grouped_mma);)?)*
        $($(entry_point!($plain, false, false, $tokens, wgmma::$grouped_mma);)?)*
    };
}

registry::tiled_entries!(grouped_entries);

macro_rules! prepare_entry {
    ($name:ident) => {
        /// The preparation pass of a grouped launch (see the module doc): tables by CTA 0,
        /// tokens by the other CTAs' threads (grid-stride over (token row, 64-K slice) items;
        /// by CTA 0 too in a grid of one). Launched
        /// programmatically after the previous kernel, it waits for it before touching memory.
        ///
        /// # Safety
        /// The module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GroupedPrepareArgs) {
            // SAFETY: forwarded.
            unsafe { prepare_pass(args) }
        }
    };
}

registry::grouped_prepare_entry!(prepare_entry);

macro_rules! prepare_separate_entry {
    ($name:ident) => {
        /// The preparation pass of a separate-convention launch whose table travels in the
        /// arguments ([`SeparatePrepareArgs`]): the last CTA first copies the groups' weight
        /// maps to `maps_out` (not CTA 0, whose table chain sets the pass's length in short
        /// launches), then the pass runs as [`prepare_entry`]'s over `table.groups`, read in
        /// parameter space.
        ///
        /// # Safety
        /// The module contract; `prepare.groups` ≤ [`PARAMETER_GROUPS`], `maps` ≤ the table's.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: SeparatePrepareArgs) {
            let table =
                crate::ptx::kernel_param_address!($name, core::mem::offset_of!(SeparatePrepareArgs, table));
            fence::launch_dependents();
            // The previous launch's kernels may still read the maps' memory.
            fence::grid_dependency_wait();
            if sreg::block_idx_x() == sreg::grid_dim_x() - 1 {
                // SAFETY: the contract; `table` is the parameter's own table.
                unsafe { copy_parameter_maps(&args, table) };
            }
            let prepare = GroupedPrepareArgs {
                separate_convention: 1,
                separate: (table + core::mem::offset_of!(SeparateParameters, groups) as u64)
                    as *const SeparateGroup,
                ..args.prepare
            };
            // SAFETY: the contract; `separate` points at the parameter's groups (generic
            // loads read parameter space).
            unsafe { prepare_body(prepare) }
        }
    };
}

registry::grouped_prepare_separate_entry!(prepare_separate_entry);

/// One CTA's threads copy the first `args.maps` tensor maps of the parameter table at generic
/// address `table` to `args.maps_out`, 16 bytes a thread. The tiled kernel reads them through
/// TMA after its dependency wait on this grid.
#[inline(always)]
unsafe fn copy_parameter_maps(args: &SeparatePrepareArgs, table: u64) {
    const WORDS_PER_MAP: u32 = (TENSOR_MAP_BYTES / 16) as u32;
    let words = args
        .maps
        .min((PARAMETER_MAPS_PER_GROUP * PARAMETER_GROUPS) as u32)
        * WORDS_PER_MAP;
    let maps = table + core::mem::offset_of!(SeparateParameters, maps) as u64;
    let mut word = sreg::thread_idx_x();
    while word < words {
        // SAFETY: word < the table's map words: inside the parameter; inside `maps_out`
        // (the contract).
        unsafe {
            let value = *((maps + 16 * word as u64) as *const [u32; 4]);
            mem::st_global_v4_b32((args.maps_out as *mut u32).add(4 * word as usize), value);
        }
        word += sreg::block_dim_x();
    }
}

/// The body of the preparation pass (see its entry).
#[inline(always)]
unsafe fn prepare_pass(args: GroupedPrepareArgs) {
    fence::launch_dependents();
    fence::grid_dependency_wait();
    // SAFETY: forwarded.
    unsafe { prepare_body(args) }
}

/// The preparation pass after its dependency wait (see [`prepare_entry`]).
#[inline(always)]
unsafe fn prepare_body(args: GroupedPrepareArgs) {
    let groups = args.groups.min(MAX_GROUPS);
    if groups == 0 {
        return;
    }
    // The groups' first token rows (and the end of the last), for the token items.
    let starts = smem::base();
    let mut g = sreg::thread_idx_x();
    while g <= groups {
        // SAFETY: g ≤ groups: inside the offsets / table (contract); inside the shared buffer.
        unsafe { smem::st_b32(starts + 4 * g, group_start(&args, g, groups)) };
        g += sreg::block_dim_x();
    }
    fence::sync_threads();
    if sreg::block_idx_x() == 0 {
        // SAFETY: the contract; every thread of CTA 0, its scratch after the starts table.
        unsafe { prepare::write_tables(&args, groups, starts + prepare_scratch_offset(groups)) };
    }
    // SAFETY: the contract.
    unsafe { decode_tokens(&args, starts, groups) };
}

/// The first token row of group `g` (`g = groups`: the end of the last group).
#[inline(always)]
unsafe fn group_start(args: &GroupedPrepareArgs, g: u32, groups: u32) -> u32 {
    if args.separate_convention != 0 {
        // SAFETY: g − 1 < groups: inside the table.
        let last = unsafe { &*args.separate.add(g.min(groups - 1) as usize) };
        if g < groups {
            last.token_row
        } else {
            last.token_row + last.rows
        }
    } else {
        // SAFETY: g ≤ groups: inside the G + 1 offsets.
        unsafe { mem::ld_global_b32(args.row_offsets.add(g as usize)) }
    }
}

/// Every thread of the CTAs after the first (of the only CTA in a grid of one): decodes its
/// (token row, 64-K slice) items of the token buffer, grid-stride by whole warps (item `i` is
/// the buffer's bytes `128·i ..`; a warp's 32 items are stored in whole lines by
/// [`store_warp_slices`]). Rows past the last group, slices past a group's K (rounded
/// up to a stage), and contiguous-convention rows whose scale row falls outside A's scales
/// (invalid offsets: the header says so) are skipped.
#[inline(always)]
unsafe fn decode_tokens(args: &GroupedPrepareArgs, starts: u32, groups: u32) {
    let slices_per_row = args.token_pitch / K_PER_SLICE;
    if slices_per_row == 0 {
        return; // never with a valid plan; also proves the divisions cannot panic
    }
    let total = args.token_rows * slices_per_row;
    // SAFETY: inside the starts table.
    let end_of_groups = unsafe { smem::ld_b32(starts + 4 * groups) };
    let lane = sreg::thread_idx_x() % 32;
    // CTA 0 writes the tables (`prepare_body`), so the others take the items: the pass then
    // ends with the longer of the two instead of their sum (a grid of one does both).
    let (decoder, decoders) = match sreg::grid_dim_x() {
        1 => (0, 1),
        grid => match sreg::block_idx_x() {
            0 => return,
            block => (block - 1, grid - 1),
        },
    };
    let stride = decoders * sreg::block_dim_x();
    // The warp's first item: the loop runs warp-uniformly (every lane takes the shuffles).
    let mut first = decoder * sreg::block_dim_x() + sreg::thread_idx_x() - lane;
    while first < total {
        let item = first + lane;
        let (row, slice) = (item / slices_per_row, item % slices_per_row);
        let source = if item < total && row < end_of_groups {
            // SAFETY: the contract; row below the groups' end.
            unsafe { token_source(args, starts, groups, row, slice) }
        } else {
            None
        };
        let written = warp::ballot(source.is_some());
        if written != 0 {
            let chunks = match source {
                // SAFETY: the source's row and scales are readable (token_source).
                Some(s) => unsafe {
                    decode_slice_chunks::<GroupedCodec>(s.data, s.scales, s.layout, s.scale_row, s.k, slice)
                },
                None => Default::default(),
            };
            // SAFETY: every written item is below `total`: inside the token buffer.
            unsafe { store_warp_slices(args.tokens, first, lane, chunks, |slot| written >> slot & 1 != 0) };
        }
        first += stride;
    }
}

/// Where a token row's packed values and scale codes are: [`decode_slice_chunks`]'s arguments.
struct TokenSource {
    data: *const u8,
    scales: *const u8,
    layout: BlockedScales,
    scale_row: usize,
    k: u32,
}

/// The source of token row `row` (below the groups' end) for its slice `slice`, or `None` where
/// the item is skipped (see [`decode_tokens`]).
#[inline(always)]
unsafe fn token_source(
    args: &GroupedPrepareArgs,
    starts: u32,
    groups: u32,
    row: u32,
    slice: u32,
) -> Option<TokenSource> {
    // The last group whose first row is at most `row`.
    let (mut low, mut high) = (0, groups);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        // SAFETY: middle < groups.
        if unsafe { smem::ld_b32(starts + 4 * middle) } <= row {
            low = middle;
        } else {
            high = middle;
        }
    }
    let g = low;
    // SAFETY: inside the starts table.
    let local = row.wrapping_sub(unsafe { smem::ld_b32(starts + 4 * g) });
    if args.separate_convention != 0 {
        // SAFETY: g < groups.
        let e = unsafe { &*args.separate.add(g as usize) };
        // The group's row and scales exist (host-validated sizes).
        (local < e.rows && slice < padded_k(e.k) / K_PER_SLICE).then(|| TokenSource {
            data: (e.a as *const u8).wrapping_add(local as usize * (e.k as usize / 2)),
            scales: e.a_scales as *const u8,
            layout: BlockedScales::new(e.rows as usize, e.k as usize),
            scale_row: local as usize,
            k: e.k,
        })
    } else {
        // SAFETY: g < groups: inside the scale offsets.
        let scale_row = unsafe { mem::ld_global_b32(args.scale_offsets.add(g as usize)) }.wrapping_add(local);
        // The host sized A for `rows_capacity` rows and its scales for `scale_rows_capacity`.
        (scale_row < args.scale_rows_capacity && local < (1 << 31) && row < args.rows_capacity).then(|| {
            TokenSource {
                data: args.a.wrapping_add(row as usize * (args.k as usize / 2)),
                scales: args.a_scales,
                layout: BlockedScales::new(args.scale_rows_capacity as usize, args.k as usize),
                scale_row: scale_row as usize,
                k: args.k,
            }
        })
    }
}
