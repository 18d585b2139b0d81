//! Stage and phase bookkeeping of an mbarrier ring (the same on producer and consumer sides).
//!
//! A ring of `S` stages has a *full* and an *empty* barrier per stage. Passes over the ring
//! alternate the barriers' phase parity: the consumer waits `full[stage]` with parity `phase`,
//! the producer waits `empty[stage]` with parity `phase ^ 1` (the first pass finds every stage
//! empty: a fresh mbarrier reports the phase before its first completion, parity 1, as done).

/// Position in a ring of `STAGES` stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingPosition<const STAGES: u32> {
    /// Stage index, `0..STAGES`.
    pub stage: u32,
    /// Parity of the pass over the ring, 0 or 1.
    pub phase: u32,
}

impl<const STAGES: u32> Default for RingPosition<STAGES> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const STAGES: u32> RingPosition<STAGES> {
    /// The first stage of the first pass.
    pub const fn new() -> Self {
        Self { stage: 0, phase: 0 }
    }

    /// Moves to the next stage, flipping the phase after the last one.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.stage += 1;
        if self.stage == STAGES {
            self.stage = 0;
            self.phase ^= 1;
        }
    }

    /// Parity a consumer waits for on `full[stage]`.
    #[inline(always)]
    pub const fn full_parity(&self) -> u32 {
        self.phase
    }

    /// Parity a producer waits for on `empty[stage]`.
    #[inline(always)]
    pub const fn empty_parity(&self) -> u32 {
        self.phase ^ 1
    }
}
