//! Global-memory loads and stores wider than Rust's scalar types.

use core::arch::asm;

/// `st.global.v4.b32`: store 16 bytes.
///
/// # Safety
/// `ptr` must be a valid, 16-byte aligned global address for a 16-byte write.
#[inline(always)]
pub unsafe fn st_global_v4_b32(ptr: *mut u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) ptr,
            a = in(reg32) v[0],
            b = in(reg32) v[1],
            c = in(reg32) v[2],
            d = in(reg32) v[3],
        )
    };
}

/// `ld.global.nc.v2.b32`: load 8 read-only bytes through the non-coherent cache.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_nc_v2_b32(ptr: *const u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe {
        asm!(
            "ld.global.nc.v2.b32 {{{a}, {b}}}, [{p}];",
            p = in(reg64) ptr,
            a = out(reg32) a,
            b = out(reg32) b,
        )
    };
    [a, b]
}

/// `ld.global.nc.b32`: load 4 read-only bytes through the non-coherent cache.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_nc_b32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe { asm!("ld.global.nc.b32 {v}, [{p}];", p = in(reg64) ptr, v = out(reg32) v) };
    v
}

/// `ld.global.nc.u8`: load one read-only byte through the non-coherent cache.
///
/// # Safety
/// `ptr` must be a valid global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_nc_u8(ptr: *const u8) -> u8 {
    let v: u16;
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe { asm!("ld.global.nc.u8 {v}, [{p}];", p = in(reg64) ptr, v = out(reg16) v) };
    v as u8
}

/// `ld.global.nc.u16`: load two read-only bytes through the non-coherent cache.
///
/// # Safety
/// `ptr` must be a valid, 2-byte aligned global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_nc_u16(ptr: *const u16) -> u16 {
    let v: u16;
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe { asm!("ld.global.nc.u16 {v}, [{p}];", p = in(reg64) ptr, v = out(reg16) v) };
    v
}

/// `st.global.b16`: store 2 bytes.
///
/// # Safety
/// `ptr` must be a valid, 2-byte aligned global address.
#[inline(always)]
pub unsafe fn st_global_b16(ptr: *mut u16, v: u16) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("st.global.b16 [{p}], {v};", p = in(reg64) ptr, v = in(reg16) v) };
}

/// `ld.global.nc.L1::no_allocate.v4.b32`: 16 read-only bytes that are used once (streamed).
///
/// # Safety
/// `ptr` must be a valid, 16-byte aligned global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_stream_v4_b32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe {
        asm!(
            "ld.global.nc.L1::no_allocate.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg64) ptr,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
        )
    };
    [a, b, c, d]
}

/// One 16-byte chunk and one 2-byte half-word under one predicate: `@p
/// ld.global.nc.L1::no_allocate.v4.b32` at `chunk` (read once, past L1) and `@p
/// ld.global.nc.u16` at `half` (zero-extended). When `load` is false nothing is read (the
/// addresses need not be valid), the half-word is 0 and the chunk is `old` (its registers are
/// the loads' destinations: pass a chunk that is no longer needed, so that no register is
/// copied).
///
/// # Safety
/// If `load`: `chunk` and `half` must be valid global addresses, 16- and 2-byte aligned, that
/// no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_stream_chunk_and_u16_if(
    chunk: *const u32,
    half: *const u16,
    load: bool,
    old: [u32; 4],
) -> ([u32; 4], u32) {
    let [mut a, mut b, mut c, mut d] = old;
    let mut w = 0u32;
    // SAFETY: the caller guarantees the addresses (read only where `load` holds).
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {load}, 0; ",
            "@p ld.global.nc.L1::no_allocate.v4.b32 {{{a}, {b}, {c}, {d}}}, [{chunk}]; ",
            "@p ld.global.nc.u16 {w}, [{half}]; }}",
            load = in(reg32) u32::from(load),
            chunk = in(reg64) chunk,
            half = in(reg64) half,
            a = inout(reg32) a,
            b = inout(reg32) b,
            c = inout(reg32) c,
            d = inout(reg32) d,
            w = inout(reg32) w,
        )
    };
    ([a, b, c, d], w)
}

/// `ld.global.nc.v4.b32`: load 16 read-only bytes through the non-coherent cache.
///
/// # Safety
/// `ptr` must be a valid, 16-byte aligned global address that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn ld_global_nc_v4_b32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address and that it is read-only.
    unsafe {
        asm!(
            "ld.global.nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg64) ptr,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
        )
    };
    [a, b, c, d]
}

/// `ld.global.cg.v4.b32`: 16 bytes cached in L2 only, where every SM's writes meet (for data
/// other CTAs wrote during this kernel, once an acquire has ordered this read after them).
///
/// # Safety
/// `ptr` must be a valid, 16-byte aligned global address.
#[inline(always)]
pub unsafe fn ld_global_cg_v4_b32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "ld.global.cg.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg64) ptr,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
        )
    };
    [a, b, c, d]
}

/// `st.relaxed.gpu.global.b32`: a 4-byte store other CTAs may read.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn st_relaxed_gpu_b32(ptr: *mut u32, v: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("st.relaxed.gpu.global.b32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) v) };
}

/// `ld.acquire.gpu.global.u32`: reads a word other CTAs update; later accesses of this thread
/// are ordered after it (the acquire side of a release/acquire pair at GPU scope).
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn ld_acquire_gpu_u32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("ld.acquire.gpu.global.u32 {v}, [{p}];", p = in(reg64) ptr, v = out(reg32) v) };
    v
}

/// `red.relaxed.gpu.global.add.u32`: adds `v` at `ptr` without returning the old value. Put a
/// release fence ([`crate::ptx::fence::acq_rel_gpu`]) before it to publish earlier writes.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn red_add_relaxed_gpu_u32(ptr: *mut u32, v: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("red.relaxed.gpu.global.add.u32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) v) };
}

/// `atom.acq_rel.gpu.global.add.u32`: adds `v` at `ptr` and returns the previous value; a
/// release for this thread's earlier accesses and an acquire for its later ones, at GPU scope.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn atom_add_acq_rel_gpu_u32(ptr: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "atom.acq_rel.gpu.global.add.u32 {old}, [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg32) v,
            old = out(reg32) old,
        )
    };
    old
}

/// `atom.relaxed.gpu.global.add.u64`: adds `v` at `ptr` and returns the previous value.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address.
#[inline(always)]
pub unsafe fn atom_add_relaxed_gpu_u64(ptr: *mut u64, v: u64) -> u64 {
    let old: u64;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "atom.relaxed.gpu.global.add.u64 {old}, [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg64) v,
            old = out(reg64) old,
        )
    };
    old
}

/// `st.global.b32`: store 4 bytes.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address for a 4-byte write.
#[inline(always)]
pub unsafe fn st_global_b32(ptr: *mut u32, v: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("st.global.b32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) v) };
}

/// `ld.global.v4.b32`: load 16 bytes (coherent; for data an earlier kernel wrote).
///
/// # Safety
/// `ptr` must be a valid, 16-byte aligned global address.
#[inline(always)]
pub unsafe fn ld_global_v4_b32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "ld.global.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            p = in(reg64) ptr,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
        )
    };
    [a, b, c, d]
}

/// `ld.global.b32`: load 4 bytes (coherent; for data an earlier kernel wrote).
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn ld_global_b32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("ld.global.b32 {v}, [{p}];", p = in(reg64) ptr, v = out(reg32) v) };
    v
}

/// `st.global.v2.b32`: store 8 bytes.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address for an 8-byte write.
#[inline(always)]
pub unsafe fn st_global_v2_b32(ptr: *mut u32, v: [u32; 2]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "st.global.v2.b32 [{p}], {{{a}, {b}}};",
            p = in(reg64) ptr,
            a = in(reg32) v[0],
            b = in(reg32) v[1],
        )
    };
}

/// `st.global.b8`: store 1 byte.
///
/// # Safety
/// `ptr` must be a valid global address for a 1-byte write.
#[inline(always)]
pub unsafe fn st_global_b8(ptr: *mut u8, v: u8) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("st.global.b8 [{p}], {v};", p = in(reg64) ptr, v = in(reg16) v as u16) };
}

/// `atom.relaxed.gpu.global.max.u64`: stores `max(*ptr, v)` at `ptr`.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address.
#[inline(always)]
pub unsafe fn atom_max_relaxed_gpu_u64(ptr: *mut u64, v: u64) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "atom.relaxed.gpu.global.max.u64 {old}, [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg64) v,
            old = out(reg64) _,
        )
    };
}

/// `atom.relaxed.gpu.global.exch.b64`: stores `v` at `ptr` and returns the previous value.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address.
#[inline(always)]
pub unsafe fn atom_exch_relaxed_gpu_u64(ptr: *mut u64, v: u64) -> u64 {
    let old: u64;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "atom.relaxed.gpu.global.exch.b64 {old}, [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg64) v,
            old = out(reg64) old,
        )
    };
    old
}

/// `st.global.b64`: store 8 bytes.
///
/// # Safety
/// `ptr` must be a valid, 8-byte aligned global address for an 8-byte write.
#[inline(always)]
pub unsafe fn st_global_b64(ptr: *mut u64, v: u64) {
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("st.global.b64 [{p}], {v};", p = in(reg64) ptr, v = in(reg64) v) };
}

/// `atom.relaxed.gpu.global.max.u32`: stores `max(*ptr, v)` at `ptr`.
///
/// # Safety
/// `ptr` must be a valid, 4-byte aligned global address.
#[inline(always)]
pub unsafe fn atom_max_relaxed_gpu_u32(ptr: *mut u32, v: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!(
            "atom.relaxed.gpu.global.max.u32 {old}, [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg32) v,
            old = out(reg32) _,
        )
    };
}
