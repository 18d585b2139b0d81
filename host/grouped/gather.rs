//! The contiguous convention's token layout from an NVFP4 matrix on the GPU
//! ([`Gpu::gather_grouped_raw`]): the routed copies of tokens gathered by row and each group's
//! scale rows placed on its 128-row block, in one kernel (`nvfp4_kernel::gather`).

use nvfp4_kernel::common::GatherGroupedArgs;
use nvfp4_kernel::layout::{BlockedScales, SCALE_BLOCK_K};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::gpu::buffer::check_device_address;

/// The sizes of a grouped-layout gather: `rows` output rows taken from a `source_rows × k`
/// NVFP4 matrix, in `groups` groups whose scale rows lie in a `scale_rows × k` blocked layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherShape {
    /// Rows of the source matrix.
    pub source_rows: usize,
    /// Output rows (all groups' rows and any rows past them).
    pub rows: usize,
    /// Groups (at least 1).
    pub groups: usize,
    /// Rows of the output scale layout (a multiple of 128).
    pub scale_rows: usize,
    /// K (a positive multiple of 16).
    pub k: usize,
}

impl GatherShape {
    /// Checks the kernel's limits.
    pub fn validate(&self) -> Result<()> {
        if self.k == 0 || !self.k.is_multiple_of(SCALE_BLOCK_K) {
            return Err(Error::invalid("k", "must be a positive multiple of 16", self.k));
        }
        if self.groups == 0 {
            return Err(Error::invalid("groups", "must be at least 1", self.groups));
        }
        if !self.scale_rows.is_multiple_of(128) {
            return Err(Error::invalid(
                "scale_rows",
                "must be a multiple of 128",
                self.scale_rows,
            ));
        }
        let limit = 1usize << 31;
        let too_large = [
            self.source_rows.saturating_mul(self.k) / 2,
            self.rows.saturating_mul(self.k) / 2,
            BlockedScales::new(self.source_rows, self.k)
                .checked_len()
                .unwrap_or(usize::MAX),
            BlockedScales::new(self.scale_rows, self.k)
                .checked_len()
                .unwrap_or(usize::MAX),
            self.groups,
        ]
        .iter()
        .any(|&bytes| bytes >= limit);
        if too_large {
            return Err(Error::invalid(
                "source rows, rows, scale_rows × k",
                "must keep every buffer below 2^31 bytes",
                format!("{self:?}"),
            ));
        }
        Ok(())
    }
}

impl Gpu {
    /// Gathers row `i` of the output (`rows × k/2` packed bytes at `out_data`, its scales in the
    /// blocked `scale_rows × k` layout at `out_scales`) from row `source_rows[i]` (`source`: `rows`
    /// u32, or 0 for row `i` itself) of the NVFP4 matrix at `data` / `scales` (`source_rows ×
    /// k`), and places group `g`'s scale rows from row `scale_offsets[g]` (the contiguous
    /// convention of the grouped ops; `row_offsets`, `scale_offsets`: `groups + 1` u32 on the
    /// GPU, never read by the host). Scale rows of no group are zeros; a source past the
    /// matrix gives zeros. Bytes are copied: the result is the quantization of the gathered
    /// rows, bit for bit. Invalid offsets place rows wrongly but inside the buffers (the grouped
    /// op then reports them). Stream-ordered.
    ///
    /// # Safety
    /// The addresses are device memory of this GPU's context with those sizes (`data`,
    /// `out_data` 8-byte aligned; the rest 4-byte aligned), not written by other work until the
    /// kernel completes (the outputs not read either).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gather_grouped_raw(
        &self,
        shape: GatherShape,
        data: u64,
        scales: u64,
        source: u64,
        row_offsets: u64,
        scale_offsets: u64,
        out_data: u64,
        out_scales: u64,
    ) -> Result<()> {
        shape.validate()?;
        if shape.rows == 0 && shape.scale_rows == 0 {
            return Ok(());
        }
        for (arg, address, alignment) in [
            ("data", data, 8),
            ("scales", scales, 4),
            ("row_offsets", row_offsets, 4),
            ("scale_offsets", scale_offsets, 4),
            ("out_data", out_data, 8),
            ("out_scales", out_scales, 4),
        ] {
            check_device_address(arg, address, alignment)?;
        }
        if source != 0 {
            check_device_address("source_rows", source, 4)?;
        }
        let kernel = &self.kernels.gather_grouped;
        let args = GatherGroupedArgs {
            data: data as *const u8,
            scales: scales as *const u8,
            source_rows: source as *const u32,
            row_offsets: row_offsets as *const u32,
            scale_offsets: scale_offsets as *const u32,
            out_data: out_data as *mut u8,
            out_scales: out_scales as *mut u8,
            source_count: shape.source_rows as u32,
            rows: shape.rows as u32,
            groups: shape.groups as u32,
            scale_rows: shape.scale_rows as u32,
            k: shape.k as u32,
        };
        let items = (shape.rows * shape.k / SCALE_BLOCK_K)
            .max(BlockedScales::new(shape.scale_rows, shape.k).len() / 4);
        // SAFETY: the caller's buffers hold the shape's sizes (contract), which fit the kernel's
        // 32-bit indices (validated).
        unsafe {
            kernel.launch(
                self.stream(),
                self.grid_stride_blocks(kernel, items as u32),
                0,
                &args,
                false,
            )
        }
    }
}
