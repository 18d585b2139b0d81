//! The dual-GEMM problem: shapes, their validation, and random inputs for tests and examples.

use nvfp4_kernel::layout::BlockedScales;

use crate::codec::f32_to_e4m3;
use crate::error::{Error, Result};
use crate::matrix::NvFp4Matrix;

/// `C[M × N] = silu(A[M × K] · B1[N × K]ᵀ) ⊙ (A · B2ᵀ)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DualGemmShape {
    /// Rows of A and C (tokens).
    pub m: usize,
    /// Rows of B1 and B2, columns of C.
    pub n: usize,
    /// The reduction dimension, in fp4 elements.
    pub k: usize,
}

impl DualGemmShape {
    /// The shape of a problem, after checking that the operands agree.
    pub fn of(a: &NvFp4Matrix, b1: &NvFp4Matrix, b2: &NvFp4Matrix) -> Result<Self> {
        if b1.k() != a.k() || b2.k() != a.k() {
            return Err(Error::ShapeMismatch(format!(
                "A, B1 and B2 must share K (got {}, {}, {})",
                a.k(),
                b1.k(),
                b2.k()
            )));
        }
        if b1.rows() != b2.rows() {
            return Err(Error::ShapeMismatch(format!(
                "B1 and B2 must have the same rows (got {} and {})",
                b1.rows(),
                b2.rows()
            )));
        }
        Ok(Self {
            m: a.rows(),
            n: b1.rows(),
            k: a.k(),
        })
    }

    /// `4·M·N·K`: multiply-adds of both products, counted as 2 FLOPs each.
    pub fn flops(&self) -> f64 {
        4.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes each input and the output take once (docs/format.md's count): fp4 data, blocked scales
    /// (padding included) and the fp16 output.
    pub fn bytes(&self) -> usize {
        let operand = |rows| nvfp4_operand_bytes(rows, self.k);
        operand(self.m) + 2 * operand(self.n) + 2 * self.m * self.n
    }
}

/// Bytes of an NVFP4 operand of `rows × k`: its fp4 data and blocked scales (padding included).
pub(crate) fn nvfp4_operand_bytes(rows: usize, k: usize) -> usize {
    rows * k / 2 + BlockedScales::new(rows, k).len()
}

/// Value distributions of random inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// The reference harness's: fp4 bytes masked with `0b1011_1011` (values 0, ±0.5, ±1, ±1.5),
    /// scales `rand() ∈ [0, 1)` cast to e4m3 (zeros and subnormals occur); no global scale.
    Task,
    /// Every e2m1 code (up to ±6) and every finite non-negative e4m3 scale (up to 448), with a
    /// global scale per operand that keeps the outputs of order 1.
    FullRange,
}

impl std::str::FromStr for Distribution {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "task" => Ok(Self::Task),
            "full" => Ok(Self::FullRange),
            _ => Err(Error::invalid("distribution", "must be `task` or `full`", s)),
        }
    }
}

/// SplitMix64: a small, fast, reproducible generator (the same stream on every platform).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform f32 in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Fills `bytes` with random bytes.
    pub fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// A random `rows × k` NVFP4 matrix. Scale padding is random too: kernels must ignore it.
pub fn random_matrix(
    rows: usize,
    k: usize,
    distribution: Distribution,
    rng: &mut Rng,
) -> Result<NvFp4Matrix> {
    crate::matrix::validate_shape(rows, k)?;
    let mut data = vec![0u8; rows * k / 2];
    rng.fill(&mut data);
    let mut scales = vec![0u8; BlockedScales::new(rows, k).len()];
    match distribution {
        Distribution::Task => {
            data.iter_mut().for_each(|b| *b &= 0b1011_1011);
            scales.iter_mut().for_each(|s| *s = f32_to_e4m3(rng.next_f32()));
            NvFp4Matrix::from_parts(rows, k, data, scales, None)
        }
        Distribution::FullRange => {
            // Codes 0x00..=0x7E: zero, subnormals, normals up to 448; never NaN.
            scales.iter_mut().for_each(|s| *s = (rng.next_u64() % 0x7F) as u8);
            let unscaled = NvFp4Matrix::from_parts(rows, k, data, scales, None)?;
            // Choose the global scale so that a dot product of two such rows has an RMS near 1:
            // RMS(sum) = sqrt(K) · rms_a · rms_b, so each operand takes 1 / (rms · K^¼).
            let rms = rms_unscaled(&unscaled);
            let global = if rms > 0.0 {
                1.0 / (rms * (k as f64).powf(0.25))
            } else {
                1.0
            };
            let (data, scales) = (unscaled.data().to_vec(), unscaled.scales().to_vec());
            NvFp4Matrix::from_parts(rows, k, data, scales, Some(global as f32))
        }
    }
}

fn rms_unscaled(m: &NvFp4Matrix) -> f64 {
    let mut row = vec![0f32; m.k()];
    let mut sum = 0f64;
    for r in 0..m.rows() {
        m.decode_row_unscaled_into(r, &mut row);
        sum += row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>();
    }
    (sum / (m.rows() * m.k()) as f64).sqrt()
}

/// The three operands of one dual GEMM.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Activations, `M × K`.
    pub a: NvFp4Matrix,
    /// Gate weights, `N × K`.
    pub b1: NvFp4Matrix,
    /// Up weights, `N × K`.
    pub b2: NvFp4Matrix,
}

impl Problem {
    /// Random operands for `shape` drawn from `distribution`, reproducible from `seed`.
    pub fn random(shape: DualGemmShape, distribution: Distribution, seed: u64) -> Result<Self> {
        let mut rng = Rng::new(seed);
        let a = random_matrix(shape.m, shape.k, distribution, &mut rng)?;
        let b1 = random_matrix(shape.n, shape.k, distribution, &mut rng)?;
        let b2 = random_matrix(shape.n, shape.k, distribution, &mut rng)?;
        Ok(Self { a, b1, b2 })
    }

    /// The problem's shape.
    pub fn shape(&self) -> DualGemmShape {
        DualGemmShape {
            m: self.a.rows(),
            n: self.b1.rows(),
            k: self.a.k(),
        }
    }
}
