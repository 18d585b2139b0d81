//! Warpgroup MMA (`wgmma`, sm_90a): D[64 × N] (+)= A[64 × 16] · B[16 × N], fp16 inputs, fp32
//! accumulators, A from registers, B from shared memory through a descriptor.
//!
//! ```text
//!            B (16 × N, smem, K-major, descriptor)
//!          ┌───────────┐
//!  A regs  │ D (64 × N)│   warp w of the warpgroup owns rows 16w .. 16w + 15
//!  64 × 16 │  fp32     │
//!          └───────────┘
//! ```
//! Fragments (lane = 4g + t): A is four fp16x2 registers `[a0, a1, a2, a3]` =
//! (row g, k 2t..2t+1), (row g + 8, k 2t..), (row g, k 8 + 2t..), (row g + 8, k 8 + 2t..) of the
//! warp's 16 rows; D register `v` holds row `16w + g + 8·((v >> 1) & 1)`, column
//! `8·(v >> 2) + 2t + (v & 1)`.
//!
//! Contract: [`fence`] before the first wgmma and after writing any register a wgmma reads;
//! [`commit_group`] after issuing; neither the accumulators nor the A registers of an issued
//! wgmma may be touched until a [`wait_group`] covers it. All calls are `.sync.aligned`: every
//! thread of the warpgroup executes them together.

use core::arch::asm;

/// `wgmma.fence.sync.aligned`.
#[inline(always)]
pub fn fence() {
    // SAFETY: ordering only.
    unsafe { asm!("wgmma.fence.sync.aligned;") };
}

/// `wgmma.commit_group.sync.aligned`: closes the group of wgmmas issued since the last commit.
#[inline(always)]
pub fn commit_group() {
    // SAFETY: ordering only.
    unsafe { asm!("wgmma.commit_group.sync.aligned;") };
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed groups are pending.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    // SAFETY: ordering only.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N) };
}

/// Defines `pub unsafe fn $name(acc, a, b_desc, accumulate)`: one
/// `wgmma.mma_async.sync.aligned.m64n$n k16.f32.f16.f16` with A from registers. `accumulate`
/// false overwrites D (`scale-d` = 0).
macro_rules! wgmma_m64k16_f32_f16_rs {
    ($name:ident, $n:literal, $acc:literal, [$first:literal $(, $i:literal)*]) => {
        #[doc = concat!("`wgmma.mma_async` m64n", stringify!($n), "k16, f32 += f16 · f16, A from registers.")]
        ///
        /// # Safety
        /// `b_desc` must describe a valid shared tile; see the module contract.
        #[inline(always)]
        pub unsafe fn $name(acc: &mut [f32; $acc], a: [u32; 4], b_desc: u64, accumulate: bool) {
            // SAFETY: guaranteed by the caller.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p;",
                    "setp.ne.b32 p, {scale_d}, 0;",
                    concat!(
                        "wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k16.f32.f16.f16 ",
                        "{{{", stringify!($first), "}" $(, ", {", stringify!($i), "}")*, "}}, ",
                        "{{{a0}, {a1}, {a2}, {a3}}}, {b}, p, 1, 1, 0;"
                    ),
                    "}}",
                    inout(reg32) acc[$first],
                    $(inout(reg32) acc[$i],)*
                    a0 = in(reg32) a[0],
                    a1 = in(reg32) a[1],
                    a2 = in(reg32) a[2],
                    a3 = in(reg32) a[3],
                    b = in(reg64) b_desc,
                    scale_d = in(reg32) accumulate as u32,
                )
            };
        }
    };
}

wgmma_m64k16_f32_f16_rs!(m64n8k16, 8, 4, [0, 1, 2, 3]);
wgmma_m64k16_f32_f16_rs!(m64n16k16, 16, 8, [0, 1, 2, 3, 4, 5, 6, 7]);
wgmma_m64k16_f32_f16_rs!(
    m64n32k16,
    32,
    16,
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);
wgmma_m64k16_f32_f16_rs!(
    m64n64k16,
    64,
    32,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31
    ]
);
wgmma_m64k16_f32_f16_rs!(
    m64n128k16,
    128,
    64,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,
        53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63
    ]
);
wgmma_m64k16_f32_f16_rs!(
    m64n144k16,
    144,
    72,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,
        53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71
    ]
);
wgmma_m64k16_f32_f16_rs!(
    m64n176k16,
    176,
    88,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,
        53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
        78, 79, 80, 81, 82, 83, 84, 85, 86, 87
    ]
);
wgmma_m64k16_f32_f16_rs!(
    m64n256k16,
    256,
    128,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,
        53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
        78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101,
        102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121,
        122, 123, 124, 125, 126, 127
    ]
);
