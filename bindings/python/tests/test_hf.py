"""A short run of ``examples/hf_model.py`` on the GPU (transformers installed): a small Llama and a
small Qwen3-MoE, their blocks loaded from a ModelOpt checkpoint the example writes into
``nvfp4.nn`` modules. Each replaced block's output, on the same hidden states, is within 20 %
(relative Frobenius error) of the bfloat16 block with the dequantized weights: the error of
quantizing the activations to NVFP4 twice (the block's input and its hidden activations; 4-bit
values with 16-element block scales, about 10 % each). The logits, through two layers and the
attention between, within 30 %; greedy generation runs end to end.
"""

import importlib.util
from pathlib import Path

import pytest
import torch

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hf_model.py"
BLOCK_TOLERANCE = 0.2
LOGITS_TOLERANCE = 0.3
SMALL = {
    "llama": dict(vocab_size=512, hidden_size=512, intermediate_size=1024, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256),
    "qwen3-moe": dict(vocab_size=512, hidden_size=512, intermediate_size=1024, moe_intermediate_size=128, num_experts=8,
                      num_experts_per_tok=2, norm_topk_prob=True, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=128, max_position_embeddings=256),
}


@pytest.mark.parametrize("kind", ["llama", "qwen3-moe"])
def test_hf_models_run_on_nvfp4_blocks_within_the_stated_tolerance(cuda, kind, tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed")
    pytest.importorskip("safetensors", reason="safetensors is not installed")
    spec = importlib.util.spec_from_file_location("hf_model", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.run(kind, new_tokens=8, config=SMALL[kind], prompt_tokens=32, directory=tmp_path)
    print(f"{kind}: logits error {result['logits_error']:.4f}, {result['same_tokens']} of 8 greedy tokens equal")
    g = torch.Generator(device=cuda).manual_seed(3)
    hidden = torch.randn(2, 16, SMALL[kind]["hidden_size"], device=cuda, generator=g).to(torch.bfloat16)
    for ours, theirs in zip(example.blocks(result["quantized"]), example.blocks(result["reference"])):
        with torch.no_grad():
            got, want = ours(hidden), theirs(hidden)
        got, want = (x[0] if isinstance(x, tuple) else x for x in (got, want))
        error = example.relative_error(got, want)
        print(f"{kind} block: relative error {error:.4f}")
        assert got.dtype == torch.bfloat16 and got.shape == want.shape
        assert error < BLOCK_TOLERANCE
    assert result["logits_error"] < LOGITS_TOLERANCE
