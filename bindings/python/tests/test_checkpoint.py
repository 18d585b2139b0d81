"""``nvfp4.checkpoint`` on checkpoints written by the packages themselves (on the CPU, no GPU):
a tiny Llama quantized to NVFP4 by compressed-tensors (its NVFP4 preset, calibrated with its own
``generate_gparam``/``calculate_qparams``, as llm-compressor does) and by NVIDIA ModelOpt
(``mtq.quantize`` with ``NVFP4_DEFAULT_CFG``, ``export_hf_checkpoint``), saved, read back with
``safetensors`` and loaded layer by layer.

Checked per layer: the packed bytes and every e4m3 scale byte are kept (the blocked layout
unpermuted equals the file's row-major scales); the global scales are the file's (ModelOpt) or
their float32 reciprocal (compressed-tensors); and every value ``e2m1 · e4m3 · global`` the
library computes with, rounded to bfloat16, equals the package's own dequantization: all of them
for compressed-tensors; for ModelOpt, whose torch dequantization rounds ``e4m3 ·
weight_scale_2`` to float32 before multiplying by the e2m1 value, all but a counted few per
million, each one bfloat16 ulp apart (the order ModelOpt's own Triton dequantization uses, one
rounding, is ours). Skipped with the reason when a package is not installed (CI installs them).
"""

import json

import pytest
import torch

import nvfp4.checkpoint as ckpt

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
LAYERS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def tiny_llama():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'nvfp4[test]')")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=256, max_position_embeddings=128, architectures=["LlamaForCausalLM"],
    )
    return transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()


def library_values(layer: ckpt.QuantizedLinear) -> torch.Tensor:
    """``bf16(e2m1 · e4m3 · global)`` of a loaded layer, as the library computes (``e2m1 ·
    e4m3`` exact in float32, then one rounding)."""
    data = layer.data.cpu().long()
    q = torch.stack([E2M1[data & 0xF], E2M1[data >> 4]], dim=-1).reshape(layer.out_features, layer.in_features)
    s = ckpt.from_blocked(layer.scales.cpu(), layer.out_features, layer.in_features).float()
    exact = q * s.repeat_interleave(16, dim=1)
    return (exact * torch.tensor(layer.global_scale, dtype=torch.float32)).to(torch.bfloat16)


def compare(ours: torch.Tensor, theirs: torch.Tensor) -> tuple:
    """(mismatching values, largest distance in bfloat16 ulps); +0 and -0 are equal."""
    a, b = ours.float(), theirs.float()
    differ = a != b
    if not differ.any():
        return 0, 0
    ulps = (ours.view(torch.int16).int() - theirs.view(torch.int16).int()).abs()[differ]
    return int(differ.sum()), int(ulps.max())


def read(directory) -> dict:
    safetensors = pytest.importorskip("safetensors.torch", reason="safetensors is not installed")
    tensors = {}
    for path in sorted(directory.glob("*.safetensors")):
        tensors.update(safetensors.load_file(str(path)))
    return tensors


def test_compressed_tensors_checkpoints_load_losslessly_and_dequantize_as_the_package(tmp_path):
    pytest.importorskip("compressed_tensors", reason="compressed-tensors is not installed (pip install 'nvfp4[test]')")
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationStatus, apply_quantization_config,
                                                 preset_name_to_scheme)
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam

    model = tiny_llama()
    scheme = preset_name_to_scheme("NVFP4", ["Linear"])
    apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"]))
    for module in model.modules():
        if not hasattr(module, "quantization_scheme"):
            continue
        blocks = module.weight.data.unflatten(-1, (-1, 16))
        low, high = blocks.amin(-1), blocks.amax(-1)
        amax = torch.max(-low.min(), high.max())
        global_scale = generate_gparam(-amax.reshape(1), amax.reshape(1))
        scales, _ = calculate_qparams(low, high, module.quantization_scheme.weights, global_scale=global_scale)
        module.weight_global_scale.data.copy_(global_scale)
        module.weight_scale.data.copy_(scales)
        module.input_global_scale.data.copy_(generate_gparam(torch.tensor([-3.0]), torch.tensor([3.0])))
        module.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(tmp_path)
    compressor.update_config(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())["quantization_config"]
    assert config["config_groups"]["group_0"]["format"] == "nvfp4-pack-quantized" or config.get("format") == "nvfp4-pack-quantized"

    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor

    tensors = read(tmp_path)
    checked = 0
    for i in range(2):
        for name in LAYERS:
            prefix = f"model.layers.{i}.{name}"
            layer = ckpt.load_linear(tensors, prefix)
            assert layer.format == ckpt.COMPRESSED_TENSORS
            assert torch.equal(layer.data, tensors[f"{prefix}.weight_packed"])
            assert torch.equal(ckpt.from_blocked(layer.scales, layer.out_features, layer.in_features).view(torch.uint8),
                               tensors[f"{prefix}.weight_scale"].view(torch.uint8))
            g = tensors[f"{prefix}.weight_global_scale"]
            assert layer.global_scale == float((torch.ones(1) / g.float()).item())
            assert layer.input_scale == float((torch.ones(1) / tensors[f"{prefix}.input_global_scale"].float()).item())
            theirs = NVFP4PackedCompressor.decompress(
                {"weight_packed": tensors[f"{prefix}.weight_packed"], "weight_scale": tensors[f"{prefix}.weight_scale"],
                 "weight_global_scale": g},
                scheme,
            )["weight"]
            mismatches, ulps = compare(library_values(layer), theirs.to(torch.bfloat16))
            print(f"{prefix}: {mismatches} of {theirs.numel()} values differ")
            assert mismatches == 0, f"{prefix}: {mismatches} values differ by up to {ulps} ulp"
            checked += 1
    assert checked == 14


def test_modelopt_checkpoints_load_losslessly_and_dequantize_as_the_package(tmp_path):
    pytest.importorskip("modelopt", reason="nvidia-modelopt is not installed (pip install 'nvfp4[test]')")
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    model = tiny_llama()
    ids = torch.randint(0, 256, (4, 32))
    model = mtq.quantize(model, mtq.NVFP4_DEFAULT_CFG, lambda m: m(ids))
    with torch.no_grad():
        export_hf_checkpoint(model, dtype=torch.bfloat16, export_dir=tmp_path)
    assert json.loads((tmp_path / "hf_quant_config.json").read_text())["quantization"]["quant_algo"] == "NVFP4"

    tensors = read(tmp_path)
    differing, total = 0, 0
    for i in range(2):
        for name in LAYERS:
            prefix = f"model.layers.{i}.{name}"
            layer = ckpt.load_linear(tensors, prefix)
            assert layer.format == ckpt.MODELOPT
            assert torch.equal(layer.data, tensors[f"{prefix}.weight"])
            assert torch.equal(ckpt.from_blocked(layer.scales, layer.out_features, layer.in_features).view(torch.uint8),
                               tensors[f"{prefix}.weight_scale"].view(torch.uint8))
            assert layer.global_scale == float(tensors[f"{prefix}.weight_scale_2"].item())
            assert layer.input_scale == float(tensors[f"{prefix}.input_scale"].item())
            packed = tensors[f"{prefix}.weight"]
            qtensor = NVFP4QTensor((layer.out_features, layer.in_features), torch.bfloat16, packed)
            theirs = qtensor.dequantize(dtype=torch.bfloat16, scale=tensors[f"{prefix}.weight_scale"],
                                        double_scale=tensors[f"{prefix}.weight_scale_2"], block_sizes={-1: 16})
            mismatches, ulps = compare(library_values(layer), theirs)
            assert ulps <= 1, f"{prefix}: values differ by up to {ulps} bfloat16 ulps"
            differing += mismatches
            total += theirs.numel()
    print(f"ModelOpt: {differing} of {total} values one bfloat16 ulp from its torch dequantization")
    assert differing <= total * 1e-5
