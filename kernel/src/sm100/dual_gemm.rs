#![doc = include_str!("../../../docs/sm100-kernels.md")]

use crate::ptx::{copy, kernel_param_address, sreg};
use crate::schedule::TileGrid;
use crate::sm100::config::{DualGemmArgs, TILE_M, Tile, TilePlace};
use crate::sm100::registry;
use crate::sm100::roles::{self, Job, Nvfp4Output, Problem};

/// The dense dual GEMM (`GATED`) or GEMM: tiles `blockIdx, blockIdx + gridDim, …` of one grid
/// of `m × n` outputs ([`Tile::outputs`] per tile), fp16 out or (`NVFP4`, gated) NVFP4 out.
/// The plain GEMM's gate and up MMAs both read B (`b1`): its up rows are the tile's second half.
struct Dense<'a, const N: u32, const NVFP4: bool, const GATED: bool> {
    args: &'a DualGemmArgs,
    grid: TileGrid,
    /// Generic addresses of the arguments' three tensor maps (in parameter space).
    maps: [u64; 3],
}

/// This CTA's tiles of a [`Dense`] problem.
struct DenseTiles<'a, const N: u32, const NVFP4: bool, const GATED: bool> {
    problem: &'a Dense<'a, N, NVFP4, GATED>,
    next: u32,
}

impl<const N: u32, const NVFP4: bool, const GATED: bool> Iterator for DenseTiles<'_, N, NVFP4, GATED> {
    type Item = Job;

    #[inline(always)]
    fn next(&mut self) -> Option<Job> {
        let index = self.next;
        if index >= self.problem.grid.len() {
            return None;
        }
        self.next += sreg::grid_dim_x();
        let p = self.problem.args;
        let (m_tile, n_tile) = self.problem.grid.coords(index);
        let place = TilePlace::dense(p.m, p.n, p.k, Tile { n: N }, m_tile, n_tile, GATED);
        // SAFETY: the launch contract (no programmatic launch: memory is ready).
        let (gate_factor, up_factor) = unsafe { p.device_globals.factors() };
        // The plain GEMM's up half: B's rows again, B's scale.
        let (up_map, up_scales, alpha_up) = if GATED {
            (self.problem.maps[2], p.b2_scales, p.alpha_up * up_factor)
        } else {
            (self.problem.maps[1], p.b1_scales, p.alpha_gate * gate_factor)
        };
        Some(Job {
            a_map: self.problem.maps[0],
            gate_map: self.problem.maps[1],
            up_map,
            a_scales: p.a_scales.wrapping_add(place.a_atoms),
            gate_scales: p.b1_scales.wrapping_add(place.gate_atoms),
            up_scales: up_scales.wrapping_add(place.up_atoms),
            place,
            out: p.out.wrapping_add(place.out),
            ldc: p.n,
            k: p.k,
            alpha_gate: p.alpha_gate * gate_factor,
            alpha_up,
            nvfp4: if NVFP4 {
                Nvfp4Output {
                    data: p.out as *mut u8,
                    scales: p.out_scales,
                    m: p.m,
                    n: p.n,
                    global_scale: p.out_global_scale,
                    m0: place.a_row,
                    n0: place.gate_row,
                }
            } else {
                Nvfp4Output::NONE
            },
        })
    }
}

impl<'a, const N: u32, const NVFP4: bool, const GATED: bool> Problem for &'a Dense<'a, N, NVFP4, GATED> {
    const GATED: bool = GATED;
    const NVFP4_OUT: bool = NVFP4;
    type Tiles = DenseTiles<'a, N, NVFP4, GATED>;

    #[inline(always)]
    fn tiles(&self) -> DenseTiles<'a, N, NVFP4, GATED> {
        DenseTiles {
            problem: self,
            next: sreg::block_idx_x(),
        }
    }

    #[inline(always)]
    fn reuse_a(&self) -> bool {
        self.args.a_collector_reuse != 0
    }

    #[inline(always)]
    fn prefetch_maps(&self) {
        for map in self.maps {
            // SAFETY: valid tensor maps (host contract).
            unsafe { copy::prefetch_tensor_map(map) };
        }
    }
}

macro_rules! entry_point {
    ($name:ident, $n:literal, $nvfp4:literal, $gated:literal) => {
        /// The sm_100f dual GEMM (or GEMM) for one tile width, fp16 or NVFP4 out (see the
        /// module doc for the contract).
        ///
        /// # Safety
        /// Arguments must satisfy the module contract.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: DualGemmArgs) {
            const BUFFERS: u32 = Tile { n: $n }.accumulator_buffers();
            // An empty grid (never from a valid plan) computes nothing.
            let outputs = Tile { n: $n }.outputs($gated);
            let grid = TileGrid::new(p.m, p.n, TILE_M, outputs).unwrap_or(TileGrid {
                m_tiles: 0,
                n_tiles: 0,
            });
            use core::mem::offset_of;
            let maps = [
                kernel_param_address!($name, offset_of!(DualGemmArgs, a_map)),
                kernel_param_address!($name, offset_of!(DualGemmArgs, b1_map)),
                kernel_param_address!($name, offset_of!(DualGemmArgs, b2_map)),
            ];
            let problem = Dense::<$n, $nvfp4, $gated> {
                args: &p,
                grid,
                maps,
            };
            // SAFETY: forwarded contract (k a positive multiple of 64).
            unsafe { roles::run::<_, $n, BUFFERS>(&&problem) }
        }
    };
}

/// Defines the dense entries (dual GEMM with fp16 and NVFP4 output, GEMM) of every tile in the
/// registry.
macro_rules! dense_entries {
    ($($n:literal $dense:ident $dense_nvfp4:ident $dense_plain:ident $gated:ident $plain:ident
        $gated_nvfp4:ident;)*) => {
        $(
            entry_point!($dense, $n, false, true);
            entry_point!($dense_nvfp4, $n, true, true);
            entry_point!($dense_plain, $n, false, false);
        )*
    };
}

registry::tiled_entries!(dense_entries);
