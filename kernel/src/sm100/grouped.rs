//! Grouped NVFP4 GEMMs for Blackwell (sm_100f): the plain grouped GEMM and the grouped dual
//! GEMM (entry points, the tiles they hand to the shared roles of `sm100::roles`, and the
//! preparation pass). NOT RUN ON HARDWARE (no B200 here): checked by ptxas/SASS and by host
//! tests of the pure parts ([`TilePlace::grouped`], [`GroupTileWalk`], the preparation's tables,
//! which the Hopper kernels share and which ran there).
//!
//! Each launch is the preparation pass (one warp: validates the device-side offsets, writes the
//! groups' descriptors, schedule and header; `crate::prepare`) and the persistent kernel, which
//! waits for it, then deals all groups' whole tiles round-robin over its CTAs
//! ([`GroupTileWalk`]). Tokens and weights are read through tensor maps that the host encodes
//! per launch: for the contiguous convention one map over all tokens and one over each stack of
//! weights (a group's weight rows start at `GroupDesc::weight_map_row`), passed in the kernel's
//! arguments; for the separate convention each group's own matrices' maps, uploaded with the
//! group table. A tile's token rows past its group's
//! end (the next group's tokens, or zeros past the map) are multiplied but never stored.

use crate::grouped::{GroupDesc, GroupedPrepareArgs, HEADER_RECORDS, MAX_GROUPS};
use crate::prepare;
use crate::ptx::{fence, kernel_param_address, mem, sreg};
use crate::schedule::{GroupSchedule, GroupTable, GroupTileWalk};
use crate::sm100::config::{GroupedArgs, Tile, TilePlace};
use crate::sm100::registry;
use crate::sm100::roles::{self, Job, Nvfp4Output, Problem};

/// The schedule table the preparation pass wrote, read from global memory (its groups' records
/// follow the header).
#[derive(Clone, Copy)]
struct GlobalGroups {
    schedule: *const u32,
    groups: u32,
}

impl GroupTable for GlobalGroups {
    #[inline(always)]
    fn groups(&self) -> u32 {
        self.groups
    }

    #[inline(always)]
    fn group(&self, g: u32) -> GroupSchedule {
        // SAFETY: g < groups: inside the table (written before the kernel's dependency wait).
        GroupSchedule::from_words(unsafe {
            mem::ld_global_v4_b32(self.schedule.add(4 * (HEADER_RECORDS + g) as usize))
        })
    }

    #[inline(always)]
    fn total(&self) -> u32 {
        // SAFETY: the header's first word.
        unsafe { mem::ld_global_b32(self.schedule) }
    }
}

/// A grouped launch, gated or plain, with `N`-wide MMAs, fp16 out or (`NVFP4`, gated) NVFP4
/// out (each group's rows quantized with its own global scale, laid out as the tokens are).
struct Grouped<'a, const N: u32, const GATED: bool, const NVFP4: bool> {
    args: &'a GroupedArgs,
    table: GlobalGroups,
    /// Generic addresses of the arguments' three tensor maps (in parameter space), used where
    /// a descriptor's map address is 0 (the contiguous convention).
    maps: [u64; 3],
}

/// This CTA's tiles of a [`Grouped`] problem.
struct GroupedJobs<'a, const N: u32, const GATED: bool, const NVFP4: bool> {
    problem: &'a Grouped<'a, N, GATED, NVFP4>,
    walk: GroupTileWalk<GlobalGroups>,
}

impl<const N: u32, const GATED: bool, const NVFP4: bool> Iterator for GroupedJobs<'_, N, GATED, NVFP4> {
    type Item = Job;

    #[inline(always)]
    fn next(&mut self) -> Option<Job> {
        let (g, local) = self.walk.next()?;
        // SAFETY: g < groups.
        let desc: GroupDesc = unsafe { prepare::load_desc(self.problem.args.descs, g) };
        let m_tiles = self.problem.table.group(g).m_tiles;
        let place = TilePlace::grouped(&desc, m_tiles, local, Tile { n: N }, GATED);
        let own = |map: u64, launch: u64| if map == 0 { launch } else { map };
        let maps = self.problem.maps;
        Some(Job {
            a_map: own(desc.a_map, maps[0]),
            gate_map: own(desc.gate_map, maps[1]),
            up_map: own(desc.up_map, maps[2]),
            a_scales: (desc.a_scales as *const u8).wrapping_add(place.a_atoms),
            gate_scales: (desc.gate_scales as *const u8).wrapping_add(place.gate_atoms),
            up_scales: (desc.up_scales as *const u8).wrapping_add(place.up_atoms),
            place,
            out: (desc.out as *mut u16).wrapping_add(place.out),
            ldc: desc.ldc,
            k: desc.k,
            alpha_gate: desc.alpha_gate,
            alpha_up: desc.alpha_up,
            nvfp4: if NVFP4 {
                let (m0, n0) = place.in_group(&desc);
                Nvfp4Output {
                    data: desc.out as *mut u8,
                    scales: desc.out_scales as *mut u8,
                    m: desc.rows,
                    n: desc.n,
                    global_scale: desc.out_global_scale,
                    m0,
                    n0,
                }
            } else {
                Nvfp4Output::NONE
            },
        })
    }
}

impl<'a, const N: u32, const GATED: bool, const NVFP4: bool> Problem for &'a Grouped<'a, N, GATED, NVFP4> {
    const GATED: bool = GATED;
    const NVFP4_OUT: bool = NVFP4;
    type Tiles = GroupedJobs<'a, N, GATED, NVFP4>;

    #[inline(always)]
    fn reuse_a(&self) -> bool {
        self.args.a_collector_reuse != 0
    }

    #[inline(always)]
    fn tiles(&self) -> GroupedJobs<'a, N, GATED, NVFP4> {
        GroupedJobs {
            problem: self,
            walk: GroupTileWalk::new(self.table, sreg::block_idx_x(), sreg::grid_dim_x()),
        }
    }
}

/// The persistent kernel body.
#[inline(always)]
unsafe fn grouped<const N: u32, const BUFFERS: u32, const GATED: bool, const NVFP4: bool>(
    args: &GroupedArgs,
    maps: [u64; 3],
) {
    fence::launch_dependents();
    // The preparation pass wrote the tables: wait for it.
    fence::grid_dependency_wait();
    let table = GlobalGroups {
        schedule: args.schedule,
        groups: args.groups.min(MAX_GROUPS),
    };
    if table.total() == 0 {
        return; // nothing to compute (or invalid device-side offsets: nothing is written)
    }
    let problem = Grouped::<N, GATED, NVFP4> { args, table, maps };
    // SAFETY: the module contract; the descriptors describe valid maps, atoms and outputs.
    unsafe { roles::run::<_, N, BUFFERS>(&&problem) }
}

macro_rules! entry_point {
    ($name:ident, $gated:literal, $nvfp4:literal, $n:literal) => {
        /// The sm_100f grouped kernel for one tile width, gated or plain, fp16 or (gated) NVFP4
        /// out (see the module doc).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GroupedArgs) {
            const BUFFERS: u32 = Tile { n: $n }.accumulator_buffers();
            use core::mem::offset_of;
            let maps = [
                kernel_param_address!($name, offset_of!(GroupedArgs, a_map)),
                kernel_param_address!($name, offset_of!(GroupedArgs, gate_map)),
                kernel_param_address!($name, offset_of!(GroupedArgs, up_map)),
            ];
            // SAFETY: forwarded contract.
            unsafe { grouped::<$n, BUFFERS, $gated, $nvfp4>(&args, maps) }
        }
    };
}

/// Defines the grouped entries of every tile in the registry: all gated (dual) kernels, then
/// all plain ones, then the gated ones writing NVFP4.
macro_rules! grouped_entries {
    ($($n:literal $dense:ident $dense_nvfp4:ident $dense_plain:ident $gated:ident $plain:ident
        $gated_nvfp4:ident;)*) => {
        $(entry_point!($gated, true, false, $n);)*
        $(entry_point!($plain, false, false, $n);)*
        $(entry_point!($gated_nvfp4, true, true, $n);)*
    };
}

registry::tiled_entries!(grouped_entries);

macro_rules! prepare_entry {
    ($name:ident) => {
        /// The preparation pass of a grouped launch: one warp writes the tables (no token decoding on
        /// Blackwell). Launched programmatically after the previous kernel, it waits for it before
        /// touching memory.
        ///
        /// # Safety
        /// The module contract; one block of 32 threads.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: GroupedPrepareArgs) {
            // SAFETY: forwarded.
            unsafe { prepare_pass(args) }
        }
    };
}

registry::grouped_prepare_entry!(prepare_entry);

/// The body of the preparation pass (see its entry).
#[inline(always)]
unsafe fn prepare_pass(args: GroupedPrepareArgs) {
    fence::launch_dependents();
    fence::grid_dependency_wait();
    let groups = args.groups.min(MAX_GROUPS);
    if groups == 0 || sreg::block_idx_x() != 0 || sreg::thread_idx_x() >= 32 {
        return;
    }
    // SAFETY: the contract; one CTA of one warp, which needs no scratch.
    unsafe { prepare::write_tables(&args, groups, 0) };
}
