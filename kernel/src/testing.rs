//! Kernels that exist for the test suite only.

use crate::common::OccupyArgs;
use crate::ptx::{mem, sreg};
use crate::registry;

macro_rules! occupy_entry {
    ($name:ident) => {
        /// Occupies the multiprocessors its blocks land on until the host releases them: each block
        /// counts itself in `started`, then spins until `release` is non-zero. Launched with most of an
        /// SM's shared memory per block, every block holds one SM that no other kernel's large CTAs can
        /// share: the co-residency test uses it to leave a GEMM fewer SMs than its grid has CTAs.
        ///
        /// # Safety
        /// Both pointers are valid device words; the host eventually writes `release`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: OccupyArgs) {
            if sreg::thread_idx_x() != 0 {
                return;
            }
            // SAFETY: the contract above.
            unsafe {
                mem::red_add_relaxed_gpu_u32(args.started, 1);
                while mem::ld_acquire_gpu_u32(args.release) == 0 {}
            }
        }
    };
}

registry::occupy_entry!(occupy_entry);
