//! Special registers: thread, block and grid indices.

use core::arch::nvptx;

/// `%tid.x`: index of this thread in its block.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no side effects.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `%ctaid.x`: index of this block in the grid.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reading a special register has no side effects.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `%ntid.x`: threads per block.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reading a special register has no side effects.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `%nctaid.x`: blocks in the grid.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reading a special register has no side effects.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// `%laneid`: this thread's lane in its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reading a special register has no side effects.
    unsafe { core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane) };
    lane
}
