//! Scalar codecs of NVFP4: e2m1 (the fp4 data) and e4m3fn (the block scales); defined in
//! `nvfp4_kernel::codec`, which the GPU quantizer shares.
//!
//! * e2m1: `s e1 e0 m`, exponent bias 1, no infinities or NaN; magnitudes 0, 0.5, 1, 1.5, 2, 3,
//!   4, 6 for codes 0..7, bit 3 is the sign (code 8 is −0).
//! * e4m3fn: `s eeee mmm`, exponent bias 7, no infinities; 0x7F and 0xFF are NaN; largest finite
//!   448; subnormals `m · 2⁻⁹`.
//!
//! Encoders round to nearest with ties to even and saturate to the largest finite magnitude, as
//! NVFP4 quantizers do (the e4m3 encoder is PyTorch's `float8_e4m3fn` cast with saturation).
//! [`Divisor`] is the GPU quantizer's division-free, bit-identical quotient.

pub use nvfp4_kernel::codec::{
    Divisor, E2M1_MAX, E4M3_MAX, E4M3_NAN, auto_global_scale, e2m1_magnitude_code, e2m1_sign_bit,
    e2m1_to_f32, e4m3_to_f32, f32_to_e2m1, f32_to_e4m3,
};
