//! Configuration of the sm_90a kernels (see `docs/sm90-kernels.md` for the design): the tiled
//! GEMMs' tile shape, roles, register split and shared-memory plan, the decode-size dual GEMM's
//! constants, and every sm_90a kernel's arguments. Pure: the host uses it to size shared memory,
//! count tiles and fill arguments; the kernels use it for every offset. Which tiles exist is
//! the registry's (`sm90::registry`).

use crate::common::{DeviceGlobalScales, NVFP4_TILE_COLUMNS, nvfp4_staging_bytes};
use crate::grouped::{HEADER_RECORDS, MAX_GROUPS};
use crate::layout::{ATOM_BYTES, SCALE_BLOCK_K};

/// Threads in a warpgroup.
pub const WARPGROUP_THREADS: u32 = 128;
/// Warpgroups that issue wgmma (0 and 1).
pub const CONSUMER_WARPGROUPS: u32 = 2;
/// Warpgroups that decode token tiles into shared memory (2 and 3) in the CTAs of tiles up to
/// [`DECODER_TILE_MAX_TOKENS`]; decoder `d` takes the slices `j` with `j % DECODER_WARPGROUPS ==
/// d` of each stage, one per half warpgroup. One warpgroup was the bottleneck (a single warp per
/// scheduler decoding 64 values per slice along a dependent load → decode → store chain).
pub const DECODER_WARPGROUPS: u32 = 2;
/// The first decoder warpgroup.
pub const FIRST_DECODER_WARPGROUP: u32 = CONSUMER_WARPGROUPS;
/// The widest tile whose CTA has decoder warpgroups. Wider tiles take pre-decoded tokens only
/// and have no decoder warpgroups: a 256-token wgmma holds 128 accumulators, and ptxas compiles
/// it only when the kernel's launch register count is at least 158, which a 640-thread CTA
/// (96 registers a thread) cannot have.
pub const DECODER_TILE_MAX_TOKENS: u32 = 128;

/// Registers per thread at launch of a `.maxntid threads, .minnctapersm 1` kernel: ptxas gives
/// it 65536 / threads rounded down to a multiple of 8, and the CTA's `setmaxnreg` pool is
/// exactly threads × this — not the whole register file. (Asking for more than the pool holds
/// makes `setmaxnreg.inc` wait forever.)
pub const fn entry_registers(threads: u32) -> u32 {
    65536 / threads / 8 * 8
}

/// Per-thread registers of each role after `setmaxnreg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterSplit {
    /// Consumer warpgroups (accumulators, fragments, prefetched weights).
    pub consumer: u32,
    /// Decoder warpgroups (a valid count even where the tile's CTA has none: the role's
    /// `setmaxnreg` is compiled, never run).
    pub decoder: u32,
    /// The producer warpgroup.
    pub producer: u32,
}

const _: () = assert!(
    DECODED_STAGES.is_multiple_of(SLICES_PER_STAGE) && SLICES_PER_STAGE == 2 * DECODER_WARPGROUPS,
    "each half decoder warpgroup decodes one slice per stage, always into the same decoded slots"
);

/// Output columns (n values) per consumer warp: its 16 wgmma rows are 8 gate rows (B1) and the
/// same 8 rows of B2, so each thread holds gate and up of the same outputs.
pub const N_PER_WARP: u32 = 8;
/// Output columns per consumer warpgroup.
pub const N_PER_WARPGROUP: u32 = 4 * N_PER_WARP;
/// Output columns per tile of the gated (dual) kernels: N must be a multiple of this.
pub const TILE_N: u32 = CONSUMER_WARPGROUPS * N_PER_WARPGROUP;
/// Output columns per tile of the plain GEMM kernels: each consumer warp's 16 wgmma rows are 16
/// outputs (fragment rows `g` and `g + 8` of the "gate" and "up" halves of the gated layout).
/// N must be a multiple of [`TILE_N`]; a last tile with only 64 outputs reads its missing rows
/// from the last valid row and stores nothing for them.
pub const PLAIN_TILE_N: u32 = 2 * TILE_N;
/// Weight rows between a plain tile's "gate" and "up" fragment rows of one thread: a consumer
/// warpgroup's gate rows are the first 32 of its 64 outputs, its up rows the next 32. In the
/// blocked scale layout row `r + 32` sits 4 bytes after row `r` (`r % 64 < 32`), so a thread's
/// gate and up scale pairs of a chunk come in one aligned 8-byte load.
pub const PLAIN_UP_ROW_OFFSET: u32 = 32;

/// The output (column of the tile) of the *gate* fragment row of the consumer thread in row group
/// `g` (0..8) of warp `warp` (0..4) of consumer warpgroup `warpgroup`: 8 outputs a warp; a
/// gated warpgroup's 32 (its up fragment rows hold the same outputs), a plain warpgroup's 64
/// (its up fragment rows the [`PLAIN_UP_ROW_OFFSET`] outputs after its gate rows).
pub const fn gate_output(gated: bool, warpgroup: u32, warp: u32, g: u32) -> u32 {
    let per_warpgroup = if gated {
        N_PER_WARPGROUP
    } else {
        N_PER_WARPGROUP + PLAIN_UP_ROW_OFFSET
    };
    warpgroup * per_warpgroup + warp * N_PER_WARP + g
}

/// Output columns per tile: [`TILE_N`] for the gated kernels, [`PLAIN_TILE_N`] for plain ones.
pub const fn tile_n(gated: bool) -> u32 {
    if gated { TILE_N } else { PLAIN_TILE_N }
}

/// K per raw stage: one 128-byte row of packed fp4 per token. A K that is not a multiple of this
/// ends with a partial stage, whose missing blocks count as zeros (weights not loaded, token
/// values zero).
pub const K_PER_STAGE: u32 = 256;
/// K must be a multiple of this (one decoded slice; gpt-oss has K = 2880 = 45 × 64).
pub const K_MULTIPLE: u32 = K_PER_SLICE;
/// K per decoded slice: one 128-byte swizzled row of fp16 per token.
pub const K_PER_SLICE: u32 = 64;
/// Decoded slices per raw stage.
pub const SLICES_PER_STAGE: u32 = K_PER_STAGE / K_PER_SLICE;
/// Scale blocks (16 K each) per decoded slice.
pub const BLOCKS_PER_SLICE: u32 = K_PER_SLICE / SCALE_BLOCK_K as u32;
/// wgmma k16 steps per decoded slice.
pub const STEPS_PER_SLICE: u32 = K_PER_SLICE / 16;
/// Scale blocks (16 K each) per raw stage.
pub const BLOCKS_PER_STAGE: u32 = K_PER_STAGE / SCALE_BLOCK_K as u32;
/// 16-byte chunks of packed fp4 (two scale blocks each) that one consumer thread loads per row
/// and stage (see [`stage_block`]).
pub const WEIGHT_CHUNKS_PER_STAGE: u32 = SLICES_PER_STAGE / 2;

/// The K order of both operands: in every 256-K stage, quad lane `lane` (0..4) of a consumer
/// warp decodes scale block `stage_block(slice, lane)` (of [`BLOCKS_PER_STAGE`]) for 64-K slice
/// `slice`, and the token operand holds the same block in that slice's word `lane` (see
/// `sm90::tokens`). Any assignment that gives each (slice, lane) one block would be correct (a
/// dot product may sum K in any order). This one gives lane `t` the blocks `2t` and `2t + 1`
/// for slices 0 and 1, and `8 + 2t` and `9 + 2t` for slices 2 and 3: two whole 16-byte chunks
/// of each weight row (bytes `16t` and `64 + 16t` of its stage) and, per chunk, two adjacent
/// scale bytes of one atom. A consumer thread thus issues four 16-byte and four 2-byte loads
/// per stage instead of eight 8-byte and eight 1-byte loads.
pub const fn stage_block(slice: u32, lane: u32) -> u32 {
    8 * (slice / 2) + 2 * lane + slice % 2
}

/// The inverse of [`stage_block`]: the (slice, lane) of a stage's scale block `block`.
pub const fn block_slice_lane(block: u32) -> (u32, u32) {
    (2 * (block / 8) + block % 2, (block % 8) / 2)
}

const _: () = {
    let mut block = 0;
    while block < BLOCKS_PER_STAGE {
        let (slice, lane) = block_slice_lane(block);
        assert!(slice < SLICES_PER_STAGE && lane < BLOCKS_PER_SLICE && stage_block(slice, lane) == block);
        block += 1;
    }
};

/// Token rows per TMA box (the box is 128 bytes × this many rows, 128-byte swizzled).
pub const TOKEN_BOX_ROWS: u32 = 64;
/// Bytes of token scales per 128 token rows and raw stage: 4 consecutive 512-byte atoms.
pub const SCALE_GROUP_BYTES: u32 = (K_PER_STAGE / 64) * ATOM_BYTES as u32;
/// Token tiles at least this wide take their tokens pre-decoded to fp16 by
/// the token pre-decoder (`sm90::registry::PREDECODE_TOKENS`, one pass per call) instead of decoding them once
/// per 64-output tile in the kernel; the producer then loads each fp16 slice with TMA (box
/// `K_PER_SLICE × tokens`, 128-byte swizzle) straight into the decoded ring, and the decoder
/// warpgroups idle.
pub const PREDECODED_MIN_TOKENS: u32 = 64;
/// Stages of the raw ring (TMA → decoder).
pub const RAW_STAGES: u32 = 4;
/// Stages of the decoded ring (decoder → consumers).
pub const DECODED_STAGES: u32 = 4;
/// Stages of the grouped kernels' weight ring (producer's TMA → consumers): each slot holds one
/// 256-K stage of a tile's weight rows and their scale atoms. The consumers read a slot a
/// whole stage before its slices compute (as they loaded the weights from global memory
/// before), so the producer fills it at least two stages ahead of its use.
pub const WEIGHT_STAGES: u32 = 3;
/// Slots of the grouped kernels' ring of segment records (`sm90::mainloop::SegmentRecord`):
/// the weight producer writes a segment's record before it fills the segment's first stage,
/// having filled the stages before it, at most [`WEIGHT_STAGES`] past the last one the slowest
/// consumer released; a consumer in segment `s` (its epilogue included) has released at most
/// the first stage of segment `s + 1`, so records up to `s + WEIGHT_STAGES + 2` may be written
/// while it still reads record `s`.
pub const SEGMENT_RECORDS: u32 = 8;
/// Bytes of one segment record (three 16-byte words).
pub const SEGMENT_RECORD_BYTES: u32 = 48;
/// Bytes of the grouped kernels' copy-out record (`sm90::mainloop::CopyOutRecord`, two 16-byte
/// words): the destination of the tile the consumers staged for the copy-out warps.
pub const COPY_OUT_RECORD_BYTES: u32 = 32;
const _: () = assert!(SEGMENT_RECORDS >= WEIGHT_STAGES + 3 && SEGMENT_RECORDS.is_power_of_two());
/// Bytes of a weight box's row: one chunk `h` of a row's stage (see [`stage_block`]: quad
/// lane `t` reads bytes `16t` of it), so that in shared memory rows `r` and `r + 1` (the
/// two row groups of a quarter warp) fill one 128-byte line, and the 16-byte reads of a
/// quarter warp never conflict without any swizzle.
pub const WEIGHT_BOX_BYTES: u32 = K_PER_STAGE / 2 / WEIGHT_CHUNKS_PER_STAGE;
/// Rows of a weight box (the host's tensor maps over the weights use this box).
pub const WEIGHT_BOX_ROWS: u32 = 64;
/// Weight rows of one slot: a gated tile's 64 gate rows, then its 64 up rows; a plain tile's
/// 128 outputs.
pub const WEIGHT_SLOT_ROWS: u32 = 2 * WEIGHT_BOX_ROWS;
/// Bytes of one chunk `h` of every row of a slot (two boxes).
pub const WEIGHT_CHUNK_BYTES: u32 = WEIGHT_SLOT_ROWS * WEIGHT_BOX_BYTES;
/// Bytes of a slot's packed fp4: [`WEIGHT_CHUNKS_PER_STAGE`] chunks of every row.
pub const WEIGHT_DATA_BYTES: u32 = WEIGHT_CHUNKS_PER_STAGE * WEIGHT_CHUNK_BYTES;
/// Bytes of a slot's scales: the stage's 4 atoms of the gate rows' 128-row group, then those
/// of the up rows' group (a plain tile's 128 outputs are one group: the first only).
pub const WEIGHT_SCALE_BYTES: u32 = 2 * SCALE_GROUP_BYTES;
/// Offset in a weight slot of its header (8 bytes: where the slot's scale codes start in their
/// lines, `sm90::mainloop::SlotHeader`).
pub const WEIGHT_SLOT_HEADER: u32 = WEIGHT_DATA_BYTES + WEIGHT_SCALE_BYTES;
/// Bytes of one weight slot: data, scales, the header, padded to keep every slot 128-byte
/// aligned.
pub const WEIGHT_SLOT_BYTES: u32 = WEIGHT_SLOT_HEADER + 128;
/// Bytes of one stream-K partial-sum slot: every consumer thread's accumulators (fp32).
pub const fn partial_slot_bytes(tile: Tile) -> u32 {
    CONSUMER_WARPGROUPS * WARPGROUP_THREADS * (tile.tokens / 2) * 4
}

/// Bytes between two token rows of the tiled kernels' 16-bit epilogue staging (fp16 or bf16
/// C, `Tile::shared`): a plain tile's [`PLAIN_TILE_N`] outputs and 16 bytes more, so that the
/// four token rows of one warp's staging store (quad lanes `t`, tokens `2t + e`) start 8 banks
/// apart and never conflict. The gated tiles use the first half of each row.
pub const EPILOGUE_STAGING_PITCH: u32 = 2 * PLAIN_TILE_N + 16;

/// Largest dynamic shared memory per block on sm_90.
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// One tile shape: `tokens` tokens (wgmma N) × [`TILE_N`] outputs. The tiles the module is
/// built for are listed in `sm90::registry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Tokens per tile (the wgmma N dimension, a multiple of 8 up to 256).
    pub tokens: u32,
}

/// Byte offsets of the regions of dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPlan {
    /// Decoded token slices, `DECODED_STAGES × tokens × 128` bytes (1024-aligned).
    pub decoded: u32,
    /// The grouped kernels' weight ring, [`WEIGHT_STAGES`] × [`WEIGHT_SLOT_BYTES`] (1024-aligned;
    /// empty for the dense kernel).
    pub weights: u32,
    /// Raw (packed fp4) token stages, `RAW_STAGES × raw_rows × 128` bytes (1024-aligned).
    pub raw_tokens: u32,
    /// Raw token-scale stages, `RAW_STAGES × scale_groups × 2048` bytes.
    pub raw_scales: u32,
    /// The 16-bit epilogue's staging: `tokens` rows of [`EPILOGUE_STAGING_PITCH`] bytes.
    pub staging: u32,
    /// mbarriers: full/empty of the raw ring, then full/empty of the decoded ring, then
    /// full/empty of the weight ring (8 bytes each).
    pub barriers: u32,
    /// The launch's ticket: its CTA's start position and epoch (`schedule::Ticket`), 8 bytes.
    pub ticket: u32,
    /// Grouped kernels: the `GroupedHeader` (32 bytes) and then one `GroupSchedule` (16 bytes)
    /// per group, copied from global memory at the start (empty for the dense kernel).
    pub groups: u32,
    /// Grouped kernels: the ring of [`SEGMENT_RECORDS`] segment records the weight producer
    /// hands the consumers (`sm90::mainloop::SegmentRecord`; empty for the dense kernel).
    pub records: u32,
    /// Grouped kernels: where the consumers tell the copy-out warps which staged tile to copy
    /// to C ([`COPY_OUT_RECORD_BYTES`]; empty for the dense kernel).
    pub copy_out_record: u32,
    /// Total bytes.
    pub total: u32,
}

/// Token widths of a fitted grouped tile, narrowest first, each a multiple of 8 (wgmma's token
/// step) with its own token map (`GroupedArgs::token_maps`) and its own copy of the consumers'
/// stage loop. 144: routed groups of a little over 128 (or 256) tokens, the common case of MoE
/// routing at about 128 (256) tokens an expert, take one tile (two) barely wider than 128
/// tokens, not 192 (perf log entry 176); 176, not 192, for the widest: groups of 145–176 rows
/// compute fewer columns, and ptxas schedules the four loops better beside it (entry 177). A
/// fifth width (160) left ptxas no registers: its stage loops kept values in local memory.
pub const FITTED_WIDTHS: [u32; 4] = [64, 128, 144, 176];
/// How many fitted widths ([`FITTED_WIDTHS`]), each with its own token map.
pub const FITTED_WIDTH_COUNT: u32 = FITTED_WIDTHS.len() as u32;
/// Tokens of a fitted grouped kernel's widest tile: 176, at most 192, so that its consumers keep
/// the narrower tiles' weight pipeline (the next stage's loads issued a whole stage ahead),
/// which 256 tokens' accumulators leave no registers for; and a 256-wide slice costs ≈ 1.73× a
/// 128-token one, so wider tiles gain little (perf log entry 111).
pub const FITTED_MAX_TOKENS: u32 = FITTED_WIDTHS[FITTED_WIDTHS.len() - 1];

/// The index in [`FITTED_WIDTHS`] of the narrowest width that holds `tokens` (the widest for
/// more). Each width is returned as a constant from its own comparison: no table in device
/// memory, which a lookup by index makes LLVM emit (a global load on the producer's path a
/// slice).
pub const fn fitted_width_index(tokens: u32) -> u32 {
    let mut index = 0;
    while index + 1 < FITTED_WIDTHS.len() {
        if tokens <= FITTED_WIDTHS[index] {
            return index as u32;
        }
        index += 1;
    }
    index as u32
}

/// The narrowest of the [`FITTED_WIDTHS`] that holds `tokens` (the widest for more), as
/// [`fitted_width_index`] without a table.
pub const fn fitted_width_for(tokens: u32) -> u32 {
    let mut index = 0;
    while index + 1 < FITTED_WIDTHS.len() {
        if tokens <= FITTED_WIDTHS[index] {
            return FITTED_WIDTHS[index];
        }
        index += 1;
    }
    FITTED_MAX_TOKENS
}

/// Token rows of each of the `m_tiles` token tiles of a group of `rows` tokens in a grouped
/// kernel that fits its tiles to each group ([`Tile::fits_groups`]; `m_tiles = ceil(rows /`
/// [`FITTED_MAX_TOKENS`]`)`): the narrowest of the [`FITTED_WIDTHS`] whose `m_tiles` tiles
/// cover the rows. The first `m_tiles − 1` tiles hold this many tokens, the last one the rest
/// (at least one: the earlier tiles hold at most `FITTED_MAX_TOKENS · (m_tiles − 1) < rows`),
/// each tile computed at the narrowest width that holds its tokens. 0 for no tile.
///
/// Found by comparison, each width a constant (as [`fitted_width_for`]): no division on the
/// GPU, whose producer thread has registers for little more than its copies.
pub const fn fitted_tile_width(rows: u32, m_tiles: u32) -> u32 {
    if m_tiles == 0 {
        return 0;
    }
    let mut index = 0;
    while index + 1 < FITTED_WIDTHS.len() {
        if FITTED_WIDTHS[index] as u64 * m_tiles as u64 >= rows as u64 {
            return FITTED_WIDTHS[index];
        }
        index += 1;
    }
    FITTED_MAX_TOKENS
}

/// Bytes of a grouped kernel's shared schedule table: the header and [`MAX_GROUPS`] groups.
pub const GROUP_TABLE_BYTES: u32 = 16 * (HEADER_RECORDS + MAX_GROUPS);

impl Tile {
    /// Whether the dense kernel's tokens are pre-decoded for this tile (see
    /// [`PREDECODED_MIN_TOKENS`]; the grouped kernels always pre-decode them).
    pub const fn predecoded_tokens(&self) -> bool {
        self.tokens >= PREDECODED_MIN_TOKENS
    }

    /// Raw token rows per stage of the dense kernel (a whole number of TMA boxes; none for
    /// pre-decoded tokens).
    pub const fn raw_rows(&self) -> u32 {
        if self.predecoded_tokens() {
            0
        } else if self.tokens > TOKEN_BOX_ROWS {
            self.tokens
        } else {
            TOKEN_BOX_ROWS
        }
    }

    /// TMA boxes per raw stage.
    pub const fn token_boxes(&self) -> u32 {
        self.raw_rows() / TOKEN_BOX_ROWS
    }

    /// 128-row scale groups a tile touches.
    pub const fn scale_groups(&self) -> u32 {
        self.tokens.div_ceil(128)
    }

    /// Whether this tile's grouped kernels fit their token tiles to each group: the widest
    /// tile (the one without decoder warpgroups) covers a group's rows with the fewest tiles
    /// of at most [`FITTED_MAX_TOKENS`], each [`fitted_tile_width`] wide, and runs each tile's
    /// MMAs at the narrowest of the [`FITTED_WIDTHS`] that holds its tokens (one copy of the
    /// stage loop per width). The narrower tiles keep their width in every group.
    pub const fn fits_groups(&self) -> bool {
        self.decoder_warpgroups() == 0
    }

    /// Tokens of a grouped kernel's widest token tile, and rows of its token map's TMA box (one
    /// box a decoded slice): the tile's, or, where it fits its groups, [`FITTED_MAX_TOKENS`].
    pub const fn grouped_tile_tokens(&self) -> u32 {
        if self.fits_groups() {
            FITTED_MAX_TOKENS
        } else {
            self.tokens
        }
    }

    /// Token rows of the TMA box of a grouped launch's token map for tiles of the fitted width
    /// `FITTED_WIDTHS[index]`: that width, at most the launch's widest tile
    /// ([`Tile::grouped_tile_tokens`], a fixed tile's width).
    pub const fn grouped_box_rows(&self, index: u32) -> u32 {
        let rows = FITTED_WIDTHS[index as usize];
        if rows < self.grouped_tile_tokens() {
            rows
        } else {
            self.grouped_tile_tokens()
        }
    }

    /// Bytes of one decoded slice.
    pub const fn decoded_slice_bytes(&self) -> u32 {
        self.tokens * 128
    }

    /// Bytes of one raw token stage.
    pub const fn raw_token_bytes(&self) -> u32 {
        self.raw_rows() * 128
    }

    /// Bytes of one raw scale stage (none for pre-decoded tokens).
    pub const fn raw_scale_bytes(&self) -> u32 {
        if self.predecoded_tokens() {
            return 0;
        }
        self.scale_groups() * SCALE_GROUP_BYTES
    }

    /// The dense dual GEMM's shared-memory plan.
    pub const fn shared(&self) -> SharedPlan {
        self.plan(
            DECODED_STAGES * self.decoded_slice_bytes(),
            0,
            RAW_STAGES * self.raw_token_bytes(),
            RAW_STAGES * self.raw_scale_bytes(),
            false,
        )
    }

    /// A grouped kernel's shared-memory plan: pre-decoded tokens, the weight ring
    /// ([`WEIGHT_STAGES`]), and the schedule table;
    /// a tile that fits its groups plans for its widest width ([`Tile::grouped_tile_tokens`]),
    /// which leaves the rest of the SM's shared memory to L1.
    pub const fn grouped_shared(&self) -> SharedPlan {
        if self.fits_groups() && self.tokens != self.grouped_tile_tokens() {
            return Tile {
                tokens: self.grouped_tile_tokens(),
            }
            .grouped_shared();
        }
        self.plan(
            DECODED_STAGES * self.decoded_slice_bytes(),
            WEIGHT_STAGES * WEIGHT_SLOT_BYTES,
            0,
            0,
            true,
        )
    }

    /// The regions in order; `grouped`: with the grouped kernels' schedule table, segment
    /// records and copy-out record (empty for the dense kernel).
    const fn plan(
        &self,
        decoded_bytes: u32,
        weight_bytes: u32,
        raw_token_bytes: u32,
        raw_scale_bytes: u32,
        grouped: bool,
    ) -> SharedPlan {
        let (table_bytes, record_bytes, copy_out_bytes) = if grouped {
            (
                GROUP_TABLE_BYTES,
                SEGMENT_RECORDS * SEGMENT_RECORD_BYTES,
                COPY_OUT_RECORD_BYTES,
            )
        } else {
            (0, 0, 0)
        };
        let staging_bytes = self.tokens * EPILOGUE_STAGING_PITCH;
        let decoded = 0;
        let weights = decoded + decoded_bytes;
        let raw_tokens = weights + weight_bytes;
        let raw_scales = raw_tokens + raw_token_bytes;
        let staging = raw_scales + raw_scale_bytes;
        let barriers = staging + staging_bytes;
        let ticket = barriers + 8 * 2 * (RAW_STAGES + DECODED_STAGES + WEIGHT_STAGES);
        let groups = (ticket + 8).next_multiple_of(16);
        let records = (groups + table_bytes).next_multiple_of(16);
        let copy_out_record = (records + record_bytes).next_multiple_of(16);
        SharedPlan {
            decoded,
            weights,
            raw_tokens,
            raw_scales,
            staging,
            barriers,
            ticket,
            groups,
            records,
            copy_out_record,
            total: copy_out_record + copy_out_bytes,
        }
    }

    /// Decoder warpgroups of the tile's CTA (see [`DECODER_TILE_MAX_TOKENS`]).
    pub const fn decoder_warpgroups(&self) -> u32 {
        if self.tokens <= DECODER_TILE_MAX_TOKENS {
            DECODER_WARPGROUPS
        } else {
            0
        }
    }

    /// The warpgroup whose first thread issues the bulk copies (its other warps idle): the last.
    pub const fn producer_warpgroup(&self) -> u32 {
        CONSUMER_WARPGROUPS + self.decoder_warpgroups()
    }

    /// Whether the consumers load each chunk of the next weight stage only once the same chunk
    /// of the current stage is decoded (after slices 0 and 2, when its registers are free),
    /// instead of the whole next stage at the start of the current one: so in the 256-token
    /// tile, whose 128 accumulators leave no room for two whole stages, and whose two slices
    /// take longer than a DRAM round trip.
    pub const fn late_weight_loads(&self) -> bool {
        self.tokens > DECODER_TILE_MAX_TOKENS
    }

    /// Threads of the tile's CTA: consumers, decoders (if any), producer.
    pub const fn threads(&self) -> u32 {
        (self.producer_warpgroup() + 1) * WARPGROUP_THREADS
    }

    /// Registers a thread of the tile's kernels has at launch ([`entry_registers`]).
    pub const fn entry_registers(&self) -> u32 {
        entry_registers(self.threads())
    }

    /// Registers of the whole CTA under `split`.
    pub const fn registers_in_use(&self, split: RegisterSplit) -> u32 {
        WARPGROUP_THREADS
            * (CONSUMER_WARPGROUPS * split.consumer
                + self.decoder_warpgroups() * split.decoder
                + split.producer)
    }

    /// Registers per role of the grouped kernels: as [`Tile::predecoded_registers`], but the
    /// producer warpgroup runs two producers (tokens and the weight ring) and takes 16
    /// registers a thread from the consumers, which hold no weight row pointers.
    pub const fn grouped_registers(&self) -> RegisterSplit {
        let split = self.predecoded_registers();
        // The consumer warpgroups share the producer warpgroup's extra registers.
        const EXTRA: u32 = 16;
        RegisterSplit {
            consumer: split.consumer - EXTRA / CONSUMER_WARPGROUPS,
            decoder: split.decoder,
            producer: split.producer + EXTRA,
        }
    }

    /// Registers per role of kernels with pre-decoded tokens: the consumers get what decoders
    /// need elsewhere (a 640-thread CTA's decoder warpgroups idle at 24; a 256-token CTA has
    /// none, and its consumers' 128 accumulators take the room).
    pub const fn predecoded_registers(&self) -> RegisterSplit {
        if self.decoder_warpgroups() == 0 {
            RegisterSplit {
                consumer: 240,
                decoder: 24, // no such role; the smallest valid count
                producer: 24,
            }
        } else {
            RegisterSplit {
                consumer: 200,
                decoder: 24,
                producer: 32,
            }
        }
    }

    /// Registers per role of the dense kernel. Tiles with in-kernel token decoding (T < 64)
    /// give the decoders 48 and the consumers 176 (at most 32 accumulator, 2 × 16 fragment and
    /// 2 × 24 prefetched weight registers, the partial-stage load path; 168 spilled); tiles with
    /// pre-decoded tokens have idle (or no) decoders ([`Tile::predecoded_registers`]).
    pub const fn registers(&self) -> RegisterSplit {
        if self.predecoded_tokens() {
            self.predecoded_registers()
        } else {
            RegisterSplit {
                consumer: 176,
                decoder: 48,
                producer: 32,
            }
        }
    }

    /// Independent accumulator sets of a consumer (k16 step `s` of a slice accumulates into set
    /// `s % sets`, summed before the epilogue). With one set, a slice's four wgmmas chain through
    /// one accumulator and small tiles (m64n8 … m64n32) run at wgmma latency, not throughput;
    /// sets cost `sets × tokens / 2` registers, which only small tiles can afford.
    pub const fn accumulator_sets(&self) -> u32 {
        match self.tokens {
            0..=16 => 4,
            17..=32 => 2,
            _ => 1,
        }
    }
}

/// `setmaxnreg` counts are multiples of 8 in 24..=256.
const fn split_is_valid(split: RegisterSplit) -> bool {
    split.consumer.is_multiple_of(8)
        && split.decoder.is_multiple_of(8)
        && split.producer.is_multiple_of(8)
        && split.producer >= 24
        && split.decoder >= 24
        && split.consumer <= 256
}

/// Compile-time checks of one tile (the registry, `sm90::registry`, runs them on each of its
/// tiles): shared memory, wgmma shape, alignments, and the `setmaxnreg` budget.
pub const fn check_tile(tile: Tile) {
    let plan = tile.shared();
    assert!(
        plan.total <= MAX_SHARED_BYTES,
        "a tile's shared memory exceeds 227 KB"
    );
    assert!(
        tile.tokens.is_multiple_of(8) && tile.tokens <= 256,
        "wgmma N must be a multiple of 8, ≤ 256"
    );
    assert!(
        tile.decoded_slice_bytes().is_multiple_of(1024) && plan.raw_tokens.is_multiple_of(1024),
        "swizzled regions must stay 1024-byte aligned"
    );
    assert!(
        plan.raw_scales.is_multiple_of(16) && plan.barriers.is_multiple_of(8),
        "bulk-copy and mbarrier alignment"
    );
    assert!(
        128u32.is_multiple_of(tile.tokens) || tile.tokens.is_multiple_of(128),
        "token tiles must not straddle scale groups"
    );
    assert!(
        tile.grouped_shared().total <= MAX_SHARED_BYTES,
        "a grouped tile's shared memory exceeds 227 KB"
    );
    assert!(
        tile.predecoded_tokens() || tile.decoder_warpgroups() > 0,
        "a tile that decodes its tokens needs decoder warpgroups"
    );
    let budget = tile.threads() * tile.entry_registers();
    let grouped = tile.grouped_registers();
    let registers = tile.registers();
    assert!(
        tile.registers_in_use(grouped) <= budget && tile.registers_in_use(registers) <= budget,
        "setmaxnreg budget exceeds the CTA's launch allocation (setmaxnreg.inc would wait forever)"
    );
    assert!(
        split_is_valid(grouped) && split_is_valid(registers),
        "setmaxnreg counts are multiples of 8 in 24..=256"
    );
}

/// Arguments of the dense dual GEMM (`sm90::registry::TiledEntries::dense`), passed by value as the
/// kernel's only parameter: the host fills this very struct, so the two sides cannot disagree
/// on order or types.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DualGemmArgs {
    /// The token tensor map: A's packed bytes (UINT8, dims {k/2, m}, box {128, 64}, 128-byte
    /// swizzle) or, for pre-decoded tiles, the fp16 token buffer (FLOAT16, dims {k rounded up to
    /// 256, m}, box {64, T}, 128-byte swizzle).
    pub a_map: crate::launch::TensorMap,
    /// A's blocked scales (in-kernel token decoding only).
    pub a_scales: *const u8,
    /// Gate weights B1, `n × k/2` bytes.
    pub b1: *const u8,
    /// B1's blocked scales.
    pub b1_scales: *const u8,
    /// Up weights B2, `n × k/2` bytes.
    pub b2: *const u8,
    /// B2's blocked scales.
    pub b2_scales: *const u8,
    /// C, `m × n` fp16; for the NVFP4-output entries (`registry::TileEpilogue::GatedNvfp4`),
    /// C's packed e2m1 data instead (`m × n/2` bytes).
    pub out: *mut u16,
    /// The NVFP4-output entries' C scales (`BlockedScales::new(m, n)`, padding written as
    /// zeros): their epilogue writes C as NVFP4 (`crate::epilogue::Nvfp4Tile`), staged in the
    /// tile's last decoded slice. Ignored (null) by the other entries.
    pub out_scales: *mut u8,
    /// C's global scale for the NVFP4-output entries (finite, positive).
    pub out_global_scale: f32,
    /// The NVFP4-output entries' second output, or null: C's decoded token operand
    /// (`sm90::tokens`: `m × padded_k(n)` fp16, its padding past N zero), for the dense GEMM
    /// that takes C as its tokens next. Ignored by the other entries.
    pub out_decoded: *mut u32,
    /// Stream-K partial sums: two slots of [`partial_slot_bytes`] per CTA.
    pub workspace: *mut u32,
    /// Publication flags of the partial-sum slots (one u32 per slot, see `schedule::Ticket`).
    pub flags: *mut u32,
    /// The plan's launch-ticket counter (see `schedule::Ticket`).
    pub tickets: *mut u64,
    /// Tokens.
    pub m: u32,
    /// Outputs.
    pub n: u32,
    /// Reduction length (a multiple of [`K_MULTIPLE`]).
    pub k: u32,
    /// Scale of the gate product (`2²⁸ · g_A · g_B1`, see the kernel's exact-operand note).
    pub alpha_gate: f32,
    /// Scale of the up product.
    pub alpha_up: f32,
    /// Operands' global scales in device memory, multiplied into `alpha_gate` and `alpha_up`.
    pub device_globals: DeviceGlobalScales,
    /// Test support, 0 in every real launch (`DualGemmPlan::abort_next_launch`): `n > 0` makes
    /// the launch stop mid-way on purpose. Every CTA takes its ticket (its first global access);
    /// those that started `n`-th or later then leave without a share, the others compute theirs
    /// and publish their partial sums, but their reducers give up instead of waiting (no
    /// output for split tiles). Partial sums and flags of this launch's epoch stay behind.
    pub abort: u32,
}

/// Warps per matrix in a CTA of the decode-size dual GEMM's standard entries (`sm90::decode`;
/// the wide ones: [`DECODE_WIDE_WARPS_PER_MATRIX`]): warp `w` streams 16 rows of the gate
/// weights, warp `w + DECODE_WARPS_PER_MATRIX` the same rows of up.
pub const DECODE_WARPS_PER_MATRIX: u32 = 4;
/// Warps per CTA of the decode-size dual GEMM's standard entries.
pub const DECODE_WARPS: u32 = 2 * DECODE_WARPS_PER_MATRIX;
/// Weight rows per warp of the decode-size dual GEMM (the MMA's M).
pub const DECODE_ROWS_PER_WARP: u32 = 16;
/// Outputs per CTA (a *row group*) of the decode-size dual GEMM's standard entries: N must be a
/// multiple (it is, being one of [`TILE_N`]).
pub const DECODE_GROUP_N: u32 = decode_group_n(DECODE_WARPS_PER_MATRIX);
const _: () = assert!(TILE_N.is_multiple_of(DECODE_GROUP_N));
/// Warps per matrix of the decode-size kernel's wide entries (two token tiles): twice the
/// rows share a CTA's staged token rows, so that a split's CTAs, two to an SM, cover twice the
/// outputs of the standard entries' four (N a multiple of [`decode_group_n`] of it).
pub const DECODE_WIDE_WARPS_PER_MATRIX: u32 = 2 * DECODE_WARPS_PER_MATRIX;
/// Steps of a two-token-tile split from which the plans launch the wide entries where both
/// entries' splits fit one wave (where only the wide one does, always). Measured on an H100
/// (perf log entry 108; wide / standard): dual GEMM 0.94–0.98 at 4–8 steps but its NVFP4 output
/// 1.01–1.04, 0.96 (0.99) at 9, 0.88–0.93 (0.94–0.95) at 11 and 16; GEMM 1.02 at 4 steps,
/// 0.99 at 7–8, 0.95 at 9: a wide CTA stages its split's token rows once for twice the rows,
/// which pays once a split is long.
pub const DECODE_WIDE_MIN_STEPS: u32 = 9;

/// Outputs per CTA (a *row group*) of the decode-size kernel with `warps_per_matrix` warps on
/// each matrix.
pub const fn decode_group_n(warps_per_matrix: u32) -> u32 {
    warps_per_matrix * DECODE_ROWS_PER_WARP
}
/// Tokens per MMA of the decode-size dual GEMM (the MMA's N).
pub const DECODE_TOKEN_TILE: u32 = 8;
/// Most tokens the decode-size dual GEMM takes (two token tiles).
pub const DECODE_MAX_TOKENS: u32 = 16;
/// K per step of the decode-size dual GEMM (the unit of its K split): one 16-byte chunk (two
/// scale blocks) of each row per quad lane, the first or second half of a 256-K stage in
/// [`stage_block`] order. (Whole 256-K stages per step, so that a warp requests both halves of
/// each 128-byte line at once, need more than 64 registers; with 3 CTAs per SM they were 3 %
/// faster at M = 1 and 6 % slower at M = 16: perf log entry 31.)
pub const DECODE_K_PER_STEP: u32 = K_PER_STAGE / 2;
/// Scale blocks per decode step.
pub const DECODE_BLOCKS_PER_STEP: u32 = DECODE_K_PER_STEP / SCALE_BLOCK_K as u32;
/// 64-K slices per decode step.
pub const DECODE_SLICES_PER_STEP: u32 = DECODE_K_PER_STEP / K_PER_SLICE;
/// Most steps per K split (the split's token rows must fit in shared memory: 16 rows × 32 steps
/// is 128 KiB; the plans choose far fewer).
pub const DECODE_MAX_STEPS_PER_SPLIT: u32 = 32;
/// Steps of a one-token-tile dual GEMM's K split from which the plans launch the decode-size
/// kernel's paired entries (`sm90::decode`: two steps an iteration). Measured on an H100 (perf
/// log entry 84): the paired loop made 16-step splits 6–7 % faster (dual GEMM 1×14336×4096) and
/// 7-step ones 3–6 % slower; at two token tiles 16-step splits 3–4 % slower (16×12544×4096), and
/// the plain GEMM's warps, streaming every other step of a split, lost at 7 and 8 steps a warp,
/// so neither has paired entries.
pub const DECODE_PAIRED_MIN_STEPS: u32 = 16;
/// f32 words of one warp's partial sums per token tile (its MMA accumulators: 32 lanes × 4).
pub const DECODE_RECORD_WORDS: u32 = 32 * 4;

/// Arguments of the decode-size dual GEMM (`sm90::registry::DECODE`, `DECODE_PAIRED`,
/// `DECODE_WIDE`; see `sm90::decode`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DecodeArgs {
    /// A's packed e2m1 bytes, `m × k/2` (each CTA decodes its split's tokens itself).
    pub a: *const u8,
    /// A's blocked scales.
    pub a_scales: *const u8,
    /// Gate weights B1, `n × k/2` bytes.
    pub b1: *const u8,
    /// B1's blocked scales.
    pub b1_scales: *const u8,
    /// Up weights B2, `n × k/2` bytes.
    pub b2: *const u8,
    /// B2's blocked scales.
    pub b2_scales: *const u8,
    /// C, `m × n` fp16; for the NVFP4-output entries, C's packed e2m1 data (`m × n/2` bytes).
    pub out: *mut u16,
    /// The NVFP4-output entries' C scales (as [`DualGemmArgs::out_scales`]), staged from
    /// [`decode_nvfp4_staging_offset`] of the entry's warps, one staging a 64-output tile.
    /// Ignored (null) by the other entries.
    pub out_scales: *mut u8,
    /// C's global scale for the NVFP4-output entries.
    pub out_global_scale: f32,
    /// Partial sums: [`decode_partial_words`]`(m, n, splits)` f32.
    pub partials: *mut u32,
    /// Arrival counters, one per row group (`n / decode_group_n(warps)` for the entry's warps a
    /// matrix), zero between launches.
    pub arrivals: *mut u32,
    /// Tokens, 1..=[`DECODE_MAX_TOKENS`].
    pub m: u32,
    /// Outputs, a multiple of the entry's row group ([`decode_group_n`]).
    pub n: u32,
    /// Reduction length, a multiple of [`K_MULTIPLE`].
    pub k: u32,
    /// Steps ([`DECODE_K_PER_STEP`]) per split, at most [`DECODE_MAX_STEPS_PER_SPLIT`].
    pub steps_per_split: u32,
    /// K splits; the grid is `splits × n / decode_group_n(warps)` CTAs, split slowest.
    pub splits: u32,
    /// Nonzero: two token tiles stage through a copy of their split's packed rows in shared
    /// memory (one round trip; the launch holds `decode_shared_bytes(…, true, warps)`), else straight
    /// from global memory (a round trip per run). Ignored at one token tile.
    pub copied_tokens: u32,
    /// Scale of the gate product (`2²⁸ · g_A · g_B1`, as the tiled kernel's).
    pub alpha_gate: f32,
    /// Scale of the up product.
    pub alpha_up: f32,
    /// Operands' global scales in device memory, multiplied into `alpha_gate` and `alpha_up`.
    pub device_globals: DeviceGlobalScales,
}

/// Most decode steps per K window of the grouped decode-size kernels: two buffers of 16 token
/// rows of 6 steps (48 KiB) let four CTAs share an SM.
pub const GROUPED_DECODE_MAX_WINDOW_STEPS: u32 = 6;

/// Token buffers of the grouped decode-size kernels: a window's token rows are copied into one
/// while the previous window streams from the other.
pub const GROUPED_DECODE_TOKEN_BUFFERS: u32 = 2;

/// Bytes of one token buffer of the grouped decode-size kernels: [`DECODE_MAX_TOKENS`] rows of
/// `window_steps` steps.
pub const fn grouped_decode_buffer_bytes(window_steps: u32) -> u32 {
    DECODE_MAX_TOKENS * decode_token_pitch(window_steps)
}

/// Dynamic shared memory of the grouped decode-size kernels: the token buffers, whose first
/// bytes the output reuses after the last window ([`decode_reused_bytes`]; `nvfp4`: the
/// NVFP4-output entry).
pub const fn grouped_decode_shared_bytes(window_steps: u32, nvfp4: bool) -> u32 {
    let tokens = GROUPED_DECODE_TOKEN_BUFFERS * grouped_decode_buffer_bytes(window_steps);
    let reused = decode_reused_bytes(nvfp4, DECODE_WARPS_PER_MATRIX);
    if tokens > reused { tokens } else { reused }
}

/// Decode steps per K window of the grouped decode-size kernels for a reduction of `k` (the
/// launch's `window_steps`, which sizes the buffers for [`DECODE_MAX_TOKENS`] token rows):
/// [`balanced_window_steps`] of at most [`GROUPED_DECODE_MAX_WINDOW_STEPS`].
pub const fn grouped_decode_window_steps(k: u32) -> u32 {
    balanced_window_steps(decode_steps(k), GROUPED_DECODE_MAX_WINDOW_STEPS)
}

/// Steps per window of `steps` decode steps in windows of at most `most` (even) steps: the
/// windows as few as that allows and as even as possible, each an even number of steps (the
/// plain GEMM's two halves take alternate steps from a window's start). A grouped decode-size
/// CTA computing `rows` token rows at a time uses windows of at most
/// `window_steps · DECODE_MAX_TOKENS / rows` steps: 8 rows fill a buffer with twice the steps.
pub const fn balanced_window_steps(steps: u32, most: u32) -> u32 {
    let windows = if most == 0 { 0 } else { steps.div_ceil(most) };
    let per_window = if windows == 0 { 2 } else { steps.div_ceil(windows) };
    per_window.next_multiple_of(2)
}

const _: () = assert!(
    GROUPED_DECODE_MAX_WINDOW_STEPS.is_multiple_of(2)
        && GROUPED_DECODE_MAX_WINDOW_STEPS <= DECODE_MAX_STEPS_PER_SPLIT
        && grouped_decode_window_steps(2048) == 6
        && grouped_decode_window_steps(2880) == 6
        && grouped_decode_window_steps(7168) == 6
        && grouped_decode_window_steps(64) == 2
        && balanced_window_steps(decode_steps(2048), 12) == 8
        && balanced_window_steps(decode_steps(7168), 12) == 12
        && balanced_window_steps(decode_steps(2880), 12) == 12
        && DECODE_TOKEN_TILE * decode_token_pitch(2 * GROUPED_DECODE_MAX_WINDOW_STEPS)
            <= grouped_decode_buffer_bytes(GROUPED_DECODE_MAX_WINDOW_STEPS),
    "8 token rows of twice the steps fit a buffer"
);

/// Outputs of one CTA of the grouped decode-size kernels: [`DECODE_GROUP_N`] for the dual GEMM
/// (each output's gate and up rows), twice that for the plain GEMM (every warp its own rows).
pub const fn grouped_decode_outputs(gated: bool) -> u32 {
    if gated {
        DECODE_GROUP_N
    } else {
        DECODE_WARPS * DECODE_ROWS_PER_WARP
    }
}

/// Arguments of the grouped decode-size kernels (`sm90::registry::GROUPED_DECODE`; see
/// `sm90::decode`): the preparation pass's tables and token buffer. The grid is
/// `groups × row_groups` CTAs, row group fastest.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GroupedDecodeArgs {
    /// The groups' descriptors (the preparation pass's).
    pub descs: *const crate::grouped::GroupDesc,
    /// The `GroupedHeader` (its status: nothing is written unless the offsets were valid).
    pub schedule: *const u32,
    /// The fp16 token buffer the preparation pass decoded (`sm90::tokens` format).
    pub tokens: *const u32,
    /// fp16 elements per row of the token buffer (a multiple of [`K_PER_STAGE`]).
    pub token_pitch: u32,
    /// Groups `G`.
    pub groups: u32,
    /// Row groups ([`grouped_decode_outputs`]) per group: N over them, rounded up (a plain
    /// GEMM's N may end half-way through its last).
    pub row_groups: u32,
    /// Decode steps per K window ([`grouped_decode_window_steps`]), even, at most
    /// [`GROUPED_DECODE_MAX_WINDOW_STEPS`].
    pub window_steps: u32,
    /// What the first CTAs prefetch into L2 while they wait for the preparation pass.
    pub warm_up: GroupedDecodeWarmUp,
}

/// 128-K steps of its weight rows that a grouped decode-size CTA of the first wave prefetches
/// into L2 before it waits for the preparation pass (which leaves DRAM idle for its ≈ 8 µs).
pub const GROUPED_DECODE_WARM_UP_STEPS: u32 = 6;

/// The stacked weights of a grouped decode-size launch (contiguous convention) as the host
/// knows them before the preparation pass has written any descriptor: the first
/// [`GROUPED_DECODE_WARM_UP_STEPS`] steps of each CTA's weight rows go into L2 while it waits
/// for that pass (as the dense decode-size kernel's split does before its dependency wait).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GroupedDecodeWarmUp {
    /// Group 0's gate (or plain) weights, `k / 2` bytes a row.
    pub gate: u64,
    /// Group 0's up weights (a concatenated `w13`: the gate weights; ignored by a plain GEMM).
    pub up: u64,
    /// Bytes between two groups' weights.
    pub stride: u64,
    /// Outputs per group (N).
    pub n: u32,
    /// Reduction length (K).
    pub k: u32,
    /// Row of `up` that holds output `o`'s up weights, minus `o`.
    pub up_row_offset: u32,
    /// CTAs that prefetch: the first `ctas` of the grid (the first wave), 0 for none.
    pub ctas: u32,
}

/// Token tiles of the decode-size dual GEMM for `m` tokens.
pub const fn decode_token_tiles(m: u32) -> u32 {
    m.div_ceil(DECODE_TOKEN_TILE)
}

/// Decode steps of a K (a last step may hold only its first 64 K).
pub const fn decode_steps(k: u32) -> u32 {
    k.div_ceil(DECODE_K_PER_STEP)
}

/// f32 words of the decode-size kernel's partial sums: one record per (split, warp of each row
/// group, token tile) — eight outputs' worth a warp and tile, so the same for the wide entries.
pub const fn decode_partial_words(m: u32, n: u32, splits: u32) -> u64 {
    splits as u64
        * (n / DECODE_GROUP_N) as u64
        * DECODE_WARPS as u64
        * decode_token_tiles(m) as u64
        * DECODE_RECORD_WORDS as u64
}

/// Bytes between consecutive token rows in the decode-size kernel's shared memory: the split's
/// 64-K slices (128 bytes of fp16 each) plus 16 bytes, so that the two token rows read by one
/// quarter-warp's 16-byte loads fall in different banks.
pub const fn decode_token_pitch(steps_per_split: u32) -> u32 {
    steps_per_split * DECODE_SLICES_PER_STEP * 2 * K_PER_SLICE + 16
}

/// Bytes at the start of the decode-size kernel's shared memory that its last CTA's reduction
/// reuses (after the loop) when it adds the splits in two halves (one token tile), and the
/// plain GEMM's halves of K go through: 32 bytes per reducer thread of `warps_per_matrix`.
pub const fn decode_halves_bytes(warps_per_matrix: u32) -> u32 {
    warps_per_matrix * 32 * 32
}

/// [`decode_halves_bytes`] of the standard entries.
pub const DECODE_HALVES_BYTES: u32 = decode_halves_bytes(DECODE_WARPS_PER_MATRIX);

/// Offset of the decode-size kernel's NVFP4 output staging ([`DECODE_MAX_TOKENS`] token rows of
/// each 64-output tile of the row group), in the token rows that its last CTA no longer reads
/// after the loop, past the reduction's halves.
pub const fn decode_nvfp4_staging_offset(warps_per_matrix: u32) -> u32 {
    decode_halves_bytes(warps_per_matrix)
}

/// [`decode_nvfp4_staging_offset`] of the standard entries.
pub const DECODE_NVFP4_STAGING_OFFSET: u32 = decode_nvfp4_staging_offset(DECODE_WARPS_PER_MATRIX);

/// Bytes of one 64-output tile's NVFP4 staging in the decode-size kernel (the row group's
/// tiles follow each other from [`decode_nvfp4_staging_offset`]).
pub const DECODE_NVFP4_TILE_STAGING_BYTES: u32 = nvfp4_staging_bytes(DECODE_MAX_TOKENS);

/// Bytes at the start of the decode-size kernel's shared memory that its last CTA reuses after
/// the loop: the reduction's halves, and for NVFP4 output (`nvfp4`) the staging.
pub const fn decode_reused_bytes(nvfp4: bool, warps_per_matrix: u32) -> u32 {
    if nvfp4 {
        decode_nvfp4_staging_offset(warps_per_matrix)
            + decode_group_n(warps_per_matrix) / NVFP4_TILE_COLUMNS * DECODE_NVFP4_TILE_STAGING_BYTES
    } else {
        decode_halves_bytes(warps_per_matrix)
    }
}

/// Byte offset of the decode-size kernel's "last to arrive" verdict word: after every token
/// row of its tiles for one split (rows past M are zeros) and after the bytes its last CTA
/// reuses ([`decode_reused_bytes`]; `nvfp4`: the NVFP4-output entries).
pub const fn decode_verdict_offset(m: u32, steps_per_split: u32, nvfp4: bool, warps_per_matrix: u32) -> u32 {
    let tokens = decode_token_tiles(m) * DECODE_TOKEN_TILE * decode_token_pitch(steps_per_split);
    let reused = decode_reused_bytes(nvfp4, warps_per_matrix);
    if tokens > reused { tokens } else { reused }
}

/// Offset of the decode-size kernel's copy of its split's packed token rows (two token tiles:
/// see [`decode_copied_token_bytes`]): after the verdict word.
pub const fn decode_copied_tokens_offset(
    m: u32,
    steps_per_split: u32,
    nvfp4: bool,
    warps_per_matrix: u32,
) -> u32 {
    decode_verdict_offset(m, steps_per_split, nvfp4, warps_per_matrix) + 16
}

/// Bytes between consecutive token rows' packed codes in the decode-size kernel's copy of a
/// split of `steps` steps: 64 bytes a step, plus 16 so that a warp's reads of 16 rows spread
/// over the banks.
pub const fn decode_copied_codes_pitch(steps: u32) -> u32 {
    steps * DECODE_K_PER_STEP / 2 + 16
}

/// Bytes between consecutive token rows' scale words in the same copy: one 4-byte word (an
/// atom's four codes of the row) per 64 K, plus 4.
pub const fn decode_copied_scales_pitch(steps: u32) -> u32 {
    steps * (DECODE_K_PER_STEP / K_PER_SLICE) * 4 + 4
}

/// Bytes of the decode-size kernel's copy of its split's `m` packed token rows: their codes
/// ([`decode_copied_codes_pitch`] a row), then their scale words
/// ([`decode_copied_scales_pitch`] a row). Two token tiles only (M > [`DECODE_TOKEN_TILE`]):
/// one tile decodes straight from global memory.
pub const fn decode_copied_token_bytes(m: u32, steps_per_split: u32) -> u32 {
    if decode_token_tiles(m) < 2 {
        return 0;
    }
    let rows = if m < DECODE_MAX_TOKENS {
        m
    } else {
        DECODE_MAX_TOKENS
    };
    rows * (decode_copied_codes_pitch(steps_per_split) + decode_copied_scales_pitch(steps_per_split))
}

/// Dynamic shared memory of the decode-size kernel: the token rows (or the bytes reused after
/// the loop), then the verdict word ([`decode_verdict_offset`]), then where two token tiles
/// stage through a copy of their packed rows (`copied`: [`DecodeArgs::copied_tokens`]) that
/// copy ([`decode_copied_token_bytes`]). The NVFP4 output adds none unless a split's token rows
/// are shorter than its staging. `warps_per_matrix`: the entry's ([`DECODE_WARPS_PER_MATRIX`],
/// or [`DECODE_WIDE_WARPS_PER_MATRIX`] for the wide entries).
pub const fn decode_shared_bytes(
    m: u32,
    steps_per_split: u32,
    nvfp4: bool,
    copied: bool,
    warps_per_matrix: u32,
) -> u32 {
    decode_copied_tokens_offset(m, steps_per_split, nvfp4, warps_per_matrix)
        + if copied {
            decode_copied_token_bytes(m, steps_per_split)
        } else {
            0
        }
}

/// Most warps of a CTA of the whole-K decode-size kernel (`sm90::decode`, one token tile): its
/// CTA owns [`DECODE_ROWS_PER_WARP`] outputs over all of K, its warps (half of them per matrix
/// in the dual GEMM) streaming every `parts`-th step; the host picks the warps per CTA.
pub const DECODE_WHOLE_K_MAX_WARPS: u32 = 16;
/// CTAs of the whole-K decode-size kernel's largest block per SM (`.minnctapersm`): the
/// register budget of the split kernel's (64 a thread).
pub const DECODE_WHOLE_K_CTAS_PER_SM: u32 = 2;
/// Warps of the whole-K dual GEMM's small-CTA entries: one per matrix and half of K.
pub const DECODE_WHOLE_K_SMALL_WARPS: u32 = 4;
/// CTAs of the small-CTA entries per SM (`.minnctapersm`: 56 registers a thread, no spill),
/// one more than 64 registers allow, for grids just past `8 × SMs` CTAs (DeepSeek-V3's gate/up
/// at one token: 1152 CTAs on 132 SMs).
pub const DECODE_WHOLE_K_SMALL_CTAS_PER_SM: u32 = 9;

/// Dynamic shared memory of a whole-K decode-size CTA of `warps` warps for `m` ≤
/// [`DECODE_TOKEN_TILE`] tokens: for the dual GEMM (`gated`) the `m` real token rows over all of
/// K (a lane of a token column past M reads row `m − 1`, whose products land in outputs never
/// written; the plain GEMM's lanes load their token rows beside the weights instead), then one
/// record of partial sums per warp, then for NVFP4 output (`nvfp4`) the staging of the CTA's
/// outputs.
pub const fn decode_whole_k_shared_bytes(m: u32, k: u32, warps: u32, gated: bool, nvfp4: bool) -> u32 {
    decode_whole_k_records_offset(m, k, gated)
        + warps * DECODE_RECORD_WORDS * 4
        + if nvfp4 {
            nvfp4_staging_bytes(DECODE_TOKEN_TILE)
        } else {
            0
        }
}

/// Offset of a whole-K decode-size CTA's partial-sum records: past its token rows (the dual
/// GEMM, `gated`; the plain GEMM's warps load their token rows' chunks beside the weights and
/// stage none).
pub const fn decode_whole_k_records_offset(m: u32, k: u32, gated: bool) -> u32 {
    if gated {
        m * decode_token_pitch(decode_steps(k))
    } else {
        0
    }
}

const _: () = assert!(
    DECODE_GROUP_N == NVFP4_TILE_COLUMNS
        && TILE_N == NVFP4_TILE_COLUMNS
        && nvfp4_staging_bytes(64) == Tile { tokens: 64 }.decoded_slice_bytes(),
    "the gated tiles and decode row groups write NVFP4 through one staging shape, a decoded slice's"
);

/// Arguments of the token pre-decoder (`sm90::registry::PREDECODE_TOKENS`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PredecodeArgs {
    /// A's packed e2m1 bytes, `rows × k/2`.
    pub data: *const u8,
    /// A's blocked scales.
    pub scales: *const u8,
    /// The fp16 token buffer, `rows × padded_k(k)`.
    pub out: *mut u32,
    /// Rows of A.
    pub rows: u32,
    /// K (a multiple of [`K_MULTIPLE`]).
    pub k: u32,
}

/// K rounded up to whole stages: the row length of the pre-decoded token buffers (the missing
/// blocks of a partial last stage are zeros there).
pub const fn padded_k(k: u32) -> u32 {
    k.div_ceil(K_PER_STAGE) * K_PER_STAGE
}

/// Arguments of the grouped persistent kernels (`sm90::registry::TiledEntries::grouped`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GroupedArgs {
    /// The tensor maps of the fp16 token buffer (FLOAT16, dims {pitch, rows}, 128-byte
    /// swizzle), map `i` with box {64, [`Tile::grouped_box_rows`]`(i)`}: a fixed tile's launch
    /// loads every slice with the last (its whole tile), a fitted one each tile's slices with
    /// the map of its width ([`FITTED_WIDTHS`]).
    pub token_maps: [crate::launch::TensorMap; FITTED_WIDTH_COUNT as usize],
    /// The tensor maps of the stacked gate and up weights of the contiguous convention (UINT8,
    /// dims {k/2, rows}, box {[`WEIGHT_BOX_BYTES`], [`WEIGHT_BOX_ROWS`]}, no swizzle), read
    /// where a group's descriptor has no map of its own (`GroupDesc::gate_map`, `up_map`; the
    /// separate convention's groups have theirs).
    pub weight_maps: [crate::launch::TensorMap; 2],
    /// The groups' descriptors.
    pub descs: *const crate::grouped::GroupDesc,
    /// The `GroupedHeader`, then one `GroupSchedule` per group.
    pub schedule: *const u32,
    /// Stream-K partial sums: two slots of [`partial_slot_bytes`] per CTA.
    pub workspace: *mut u32,
    /// Publication flags of the partial-sum slots.
    pub flags: *mut u32,
    /// The plan's launch-ticket counter.
    pub tickets: *mut u64,
    /// Groups `G`.
    pub groups: u32,
}

const _: () = assert!(
    core::mem::offset_of!(DualGemmArgs, a_map).is_multiple_of(crate::launch::PARAM_ALIGN),
    "tensor maps must sit at 64-byte offsets of the parameter"
);

const _: () = assert!(
    core::mem::offset_of!(GroupedArgs, token_maps).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::offset_of!(GroupedArgs, weight_maps).is_multiple_of(crate::launch::PARAM_ALIGN)
        && core::mem::size_of::<crate::launch::TensorMap>().is_multiple_of(crate::launch::PARAM_ALIGN),
    "tensor maps must sit at 64-byte offsets of the parameter"
);
