//! Descriptor encoders and swizzle of `nvfp4_kernel::desc` (wgmma and tcgen05) and the tensor maps'
//! driver workaround (`nvfp4_kernel::launch::TensorMap`), checked against the documented constants.

use nvfp4_kernel::desc::{sw128_offset, wgmma_desc_sw128_k_major};

#[test]
fn wgmma_descriptor_matches_the_documented_sw128_constant() {
    // docs/ptx-facts.md §3: sm90 SW128 K-major = 0x4000_0040_0001_0000 | (addr >> 4).
    for addr in [0u32, 1024, 0x1_2400, 0x3_FC00] {
        assert_eq!(
            wgmma_desc_sw128_k_major(addr),
            0x4000_0040_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
    }
    assert_eq!(
        wgmma_desc_sw128_k_major(1024 + 32) - wgmma_desc_sw128_k_major(1024),
        2,
        "a k16 step adds 32 B"
    );
}

#[test]
fn sw128_offsets_follow_tmas_xor_rule_and_cover_each_chunk_once() {
    let mut seen = [false; 16 * 128 / 16];
    for row in 0..16 {
        for chunk in 0..8 {
            let off = sw128_offset(row, chunk);
            let linear = row * 128 + chunk * 16;
            assert_eq!(
                off,
                linear ^ (((linear >> 7) & 7) << 4),
                "row {row} chunk {chunk}"
            );
            assert!(!std::mem::replace(&mut seen[(off / 16) as usize], true));
        }
    }
}

#[test]
fn umma_instruction_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::umma_idesc_mxf4nvf4;
    // docs/ptx-facts.md §2, checked there against CUTLASS, ThunderKittens, JAX and a raw-PTX kernel.
    assert_eq!(umma_idesc_mxf4nvf4(128, 128), 0x0820_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 64), 0x0810_0480);
    assert_eq!(umma_idesc_mxf4nvf4(128, 256), 0x0840_0480);
    assert_eq!(umma_idesc_mxf4nvf4(256, 256), 0x1040_0480);
}

#[test]
fn tensor_maps_get_cutlasss_driver_workaround_only_when_small_and_the_driver_is_old() {
    use nvfp4_kernel::launch::TensorMap;
    let all = TensorMap([u64::MAX; 16]);
    let words32 =
        |m: TensorMap| -> Vec<u32> { m.0.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]).collect() };
    // Cleared: 64-bit word 1, bit 21 = 32-bit word 2, bit 21 (CUTLASS's `[1] &= ~(1 << 21)` on
    // the map as uint64_t[16]); nothing else changes.
    let cleared = all.with_driver_workaround(13000, 100 * 1024);
    let mut want = vec![u32::MAX; 32];
    want[2] &= !(1 << 21);
    assert_eq!(words32(cleared), want);
    assert_eq!(all.with_driver_workaround(13010, 0), cleared, "13.1 is affected");
    for (driver, span) in [(13020, 1024), (13000, 128 * 1024), (12080 + 2000, 1 << 20)] {
        assert_eq!(all.with_driver_workaround(driver, span), all, "{driver} {span}");
    }
    // Spans as CuTe's cosize: the last row's end. Decode activations are small, weights large.
    assert_eq!(TensorMap::span_bytes_2d([3584, 1], 3584, 1), 3584);
    assert_eq!(TensorMap::span_bytes_2d([3584, 16], 3584, 1), 57_344);
    assert_eq!(
        TensorMap::span_bytes_2d([7168, 4096], 3584, 1),
        4095 * 3584 + 7168
    );
    assert_eq!(TensorMap::span_bytes_2d([256, 64], 512, 2), 63 * 512 + 512);
    assert_eq!(TensorMap::span_bytes_2d([0, 64], 512, 2), 0);
}

#[test]
fn umma_shared_descriptors_match_the_documented_constants() {
    use nvfp4_kernel::desc::{umma_desc_scale_atom, umma_desc_sw128_k_major};
    for addr in [0u32, 1024, 0x1_2400, 0x3_FC00] {
        // docs/ptx-facts.md §3 and §5.
        assert_eq!(
            umma_desc_sw128_k_major(addr),
            0x4000_4040_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
        assert_eq!(
            umma_desc_scale_atom(addr),
            0x0000_4008_0001_0000 | (addr as u64 >> 4),
            "{addr:#x}"
        );
    }
    // The sm_100 SW128 descriptor is the sm_90 one plus the version bit (same swizzle bits).
    assert_eq!(
        umma_desc_sw128_k_major(2048) ^ wgmma_desc_sw128_k_major(2048),
        1 << 46
    );
}
