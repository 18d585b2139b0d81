//! Dynamic shared memory: its base address and vector loads/stores by 32-bit shared address.

use core::arch::{asm, global_asm};

// Module-scope declaration (PTX rejects it inside a function). 1024-byte alignment keeps
// 128-byte-swizzled tiles on swizzle-atom boundaries.
global_asm!(".extern .shared .align 1024 .b8 dyn_smem[];");

/// Shared-window address of the dynamic shared memory.
#[inline(always)]
pub fn base() -> u32 {
    let addr: u32;
    // SAFETY: reads a symbol's address.
    unsafe { asm!("mov.u32 {a}, dyn_smem;", a = out(reg32) addr) };
    addr
}

/// `ld.shared.v4.b32`: 16 bytes.
///
/// # Safety
/// `addr` must be a 16-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn ld_v4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "ld.shared.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg32) addr,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
        )
    };
    [a, b, c, d]
}

/// `ld.shared.v2.b32`: 8 bytes.
///
/// # Safety
/// `addr` must be an 8-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn ld_v2(addr: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("ld.shared.v2.b32 {{{a}, {b}}}, [{p}];", p = in(reg32) addr, a = out(reg32) a, b = out(reg32) b)
    };
    [a, b]
}

/// `ld.shared.b32`: 4 bytes.
///
/// # Safety
/// `addr` must be a 4-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn ld_b32(addr: u32) -> u32 {
    let v: u32;
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("ld.shared.b32 {v}, [{p}];", p = in(reg32) addr, v = out(reg32) v) };
    v
}

/// `st.shared.v4.b32`: 16 bytes.
///
/// # Safety
/// `addr` must be a 16-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn st_v4(addr: u32, v: [u32; 4]) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!(
            "st.shared.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg32) addr,
            a = in(reg32) v[0],
            b = in(reg32) v[1],
            c = in(reg32) v[2],
            d = in(reg32) v[3],
        )
    };
}

/// `st.shared.b32`: 4 bytes.
///
/// # Safety
/// `addr` must be a 4-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn st_b32(addr: u32, v: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("st.shared.b32 [{p}], {v};", p = in(reg32) addr, v = in(reg32) v) };
}

/// `st.shared.v2.b32`: store 8 bytes.
///
/// # Safety
/// `addr` must be an 8-byte aligned shared-memory address inside the allocation.
#[inline(always)]
pub unsafe fn st_v2(addr: u32, v: [u32; 2]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("st.shared.v2.b32 [{p}], {{{a}, {b}}};", p = in(reg32) addr, a = in(reg32) v[0], b = in(reg32) v[1])
    };
}

/// `st.shared.b16`: 2 bytes.
///
/// # Safety
/// `addr` must be a 2-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn st_b16(addr: u32, v: u16) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("st.shared.b16 [{p}], {v};", p = in(reg32) addr, v = in(reg16) v) };
}

/// `red.shared.add.u32`: adds `v` to the 4-byte word at `addr`.
///
/// # Safety
/// `addr` must be a 4-byte aligned shared address inside the allocation.
#[inline(always)]
pub unsafe fn red_add_u32(addr: u32, v: u32) {
    // SAFETY: the caller's.
    unsafe { asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v) };
}
