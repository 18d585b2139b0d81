//! The mbarrier ring bookkeeping of `nvfp4_kernel::ring`: parity per pass, and a randomized
//! producer/consumer model that never shares a stage or deadlocks.

use nvfp4_kernel::ring::RingPosition;

#[test]
fn ring_flips_parity_after_each_pass() {
    let mut ring = RingPosition::<3>::new();
    let mut visited = Vec::new();
    for _ in 0..7 {
        visited.push((ring.stage, ring.full_parity(), ring.empty_parity()));
        ring.advance();
    }
    assert_eq!(
        visited,
        [
            (0, 0, 1),
            (1, 0, 1),
            (2, 0, 1),
            (0, 1, 0),
            (1, 1, 0),
            (2, 1, 0),
            (0, 0, 1)
        ]
    );
}

/// Random interleavings of a producer that waits `empty[s]` then completes `full[s]` and a
/// consumer that waits `full[s]` then completes `empty[s]`, on the mbarrier model: `completed`
/// phases per barrier, and `try_wait.parity(p)` passes iff the in-progress phase's parity differs
/// from p.
fn simulate_ring<const STAGES: u32>(seed: u64) {
    let passes = |completed: u32, parity: u32| completed % 2 != parity;
    let mut rng = nvfp4::problem::Rng::new(seed);
    for _ in 0..20 {
        let (mut full, mut empty) = (vec![0u32; STAGES as usize], vec![0u32; STAGES as usize]);
        let (mut producer, mut consumer) = (RingPosition::<STAGES>::new(), RingPosition::<STAGES>::new());
        let (mut produced, mut consumed, total) = (0u32, 0u32, 200u32);
        while consumed < total {
            let producer_can =
                produced < total && passes(empty[producer.stage as usize], producer.empty_parity());
            let consumer_can = passes(full[consumer.stage as usize], consumer.full_parity());
            assert!(
                producer_can || consumer_can,
                "{STAGES} stages: deadlock at {produced}/{consumed}"
            );
            if producer_can && (!consumer_can || rng.next_u64() & 1 == 0) {
                assert!(
                    produced - consumed < STAGES,
                    "{STAGES} stages: refilled a stage not yet consumed"
                );
                full[producer.stage as usize] += 1;
                producer.advance();
                produced += 1;
            } else {
                assert!(
                    consumed < produced,
                    "{STAGES} stages: read a stage not yet filled"
                );
                empty[consumer.stage as usize] += 1;
                consumer.advance();
                consumed += 1;
            }
        }
    }
}

#[test]
fn ring_producer_and_consumer_never_share_a_stage_and_never_deadlock() {
    // Every ring depth the kernels use: accumulator buffers (2), stages (4), decoded slots (4).
    simulate_ring::<1>(1);
    simulate_ring::<2>(2);
    simulate_ring::<4>(4);
    simulate_ring::<8>(8);
}
