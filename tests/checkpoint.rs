//! The checkpoint loader (`nvfp4::checkpoint`) on safetensors buffers written in each format's
//! documented layout: every byte and the global scales come back (a dividing global scale as
//! its f32 reciprocal), and malformed layers are typed errors naming the tensor. The formats
//! against the packages' own writers and dequantization: `bindings/python/tests/test_checkpoint.py`.

use nvfp4::checkpoint::{self, CheckpointFormat};
use nvfp4::problem::{Rng, random_matrix};
use nvfp4::{Distribution, Error, NvFp4Matrix};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

/// Serializes `(name, dtype, shape, bytes)` tensors into a safetensors buffer.
fn serialize(tensors: &[(String, Dtype, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            (
                name.clone(),
                TensorView::new(*dtype, shape.clone(), bytes).unwrap(),
            )
        })
        .collect();
    safetensors::serialize(views, None).unwrap()
}

fn random_weight(rows: usize, k: usize, seed: u64) -> NvFp4Matrix {
    random_matrix(rows, k, Distribution::FullRange, &mut Rng::new(seed)).unwrap()
}

#[test]
fn modelopt_layers_load_every_byte_and_scale() {
    for (rows, k) in [(1, 16), (130, 320), (256, 2880)] {
        let weight = random_weight(rows, k, rows as u64);
        let bytes = serialize(&checkpoint::modelopt_tensors("layer", &weight, Some(0.125)));
        let tensors = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(
            checkpoint::detect(&tensors, "layer").unwrap(),
            CheckpointFormat::ModelOpt
        );
        let loaded = checkpoint::load_linear(&tensors, "layer").unwrap();
        assert!(loaded.weight.data() == weight.data(), "every byte kept");
        assert!(
            loaded.weight.plain_scales() == weight.plain_scales(),
            "every scale kept"
        );
        assert_eq!(
            loaded.weight.global_scale(),
            Some(weight.global_scale().unwrap_or(1.0))
        );
        assert_eq!(loaded.input_scale, Some(0.125));
    }
}

#[test]
fn compressed_tensors_layers_take_the_reciprocal_of_their_dividing_global_scales() {
    let (rows, k) = (200, 448);
    let weight = random_weight(rows, k, 9);
    let (weight_divisor, input_divisor) = (33536.0f32, 149.3f32);
    let bytes = serialize(&[
        (
            "l.weight_packed".into(),
            Dtype::U8,
            vec![rows, k / 2],
            weight.data().to_vec(),
        ),
        (
            "l.weight_scale".into(),
            Dtype::F8_E4M3,
            vec![rows, k / 16],
            weight.plain_scales(),
        ),
        (
            "l.weight_global_scale".into(),
            Dtype::F32,
            vec![1],
            weight_divisor.to_le_bytes().to_vec(),
        ),
        (
            "l.input_global_scale".into(),
            Dtype::F32,
            vec![1],
            input_divisor.to_le_bytes().to_vec(),
        ),
    ]);
    let tensors = SafeTensors::deserialize(&bytes).unwrap();
    let loaded = checkpoint::load_linear(&tensors, "l").unwrap();
    assert_eq!(loaded.format, CheckpointFormat::CompressedTensors);
    assert!(loaded.weight.data() == weight.data(), "every byte kept");
    assert!(
        loaded.weight.plain_scales() == weight.plain_scales(),
        "every scale kept"
    );
    assert_eq!(loaded.weight.global_scale(), Some(1.0 / weight_divisor));
    assert_eq!(loaded.input_scale, Some(1.0 / input_divisor));
}

#[test]
fn malformed_layers_are_typed_errors_naming_the_tensor() {
    let weight = random_weight(64, 64, 3);
    let mut tensors = checkpoint::modelopt_tensors("l", &weight, None);
    let good = serialize(&tensors);
    let parsed = SafeTensors::deserialize(&good).unwrap();
    assert!(matches!(
        checkpoint::load_linear(&parsed, "other"),
        Err(Error::InvalidArgument { .. })
    ));
    // Scales of the wrong shape, then of the wrong dtype, then a non-positive global scale.
    tensors[1].2 = vec![32, 8];
    let bad = serialize(&tensors);
    let error = checkpoint::load_linear(&SafeTensors::deserialize(&bad).unwrap(), "l").unwrap_err();
    assert!(error.to_string().contains("l.weight_scale"), "{error}");
    tensors[1].2 = vec![64, 4];
    tensors[1].1 = Dtype::U8;
    let bad = serialize(&tensors);
    let error = checkpoint::load_linear(&SafeTensors::deserialize(&bad).unwrap(), "l").unwrap_err();
    assert!(error.to_string().contains("l.weight_scale"), "{error}");
    tensors[1].1 = Dtype::F8_E4M3;
    tensors[2].3 = (-1.0f32).to_le_bytes().to_vec();
    let bad = serialize(&tensors);
    let error = checkpoint::load_linear(&SafeTensors::deserialize(&bad).unwrap(), "l").unwrap_err();
    assert!(error.to_string().contains("weight_scale_2"), "{error}");
}
