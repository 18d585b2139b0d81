"""Hugging Face ``transformers`` models whose MLP and Mixture-of-Experts blocks run on the library,
the whole path a user takes: a Llama-architecture model and a Qwen3-MoE-architecture model (small
configs, random weights, bfloat16 on the GPU) are calibrated (the blocks' input and hidden
activations' amax), quantized with the library's quantizer and saved as a ModelOpt NVFP4
checkpoint (safetensors); the checkpoint is loaded (``nvfp4.checkpoint``) into ``nvfp4.nn``
modules that replace the blocks (Llama: ``SwiGLUMLP`` in place of each ``LlamaMLP``; Qwen3-MoE:
``Experts`` registered as a transformers experts implementation, the model's own router kept).
It reports the logits' relative error against the same model in bfloat16 with the dequantized
weights, and greedy decode tokens per second of both.

    python bindings/python/examples/hf_model.py [--model llama|qwen3-moe|both] [--new-tokens 64]
"""

from __future__ import annotations

import argparse
import copy
import time
import types
from pathlib import Path
import tempfile

import torch
import torch.nn.functional as F

import nvfp4
import nvfp4.checkpoint as ckpt
import nvfp4.nn

LLAMA = dict(vocab_size=4096, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=4, max_position_embeddings=1024)
QWEN3_MOE = dict(vocab_size=4096, hidden_size=1024, intermediate_size=2816, moe_intermediate_size=256, num_experts=16,
                 num_experts_per_tok=4, norm_topk_prob=True, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=128, max_position_embeddings=1024)


def build(kind: str, config_overrides=None, seed: int = 0):
    """A model of ``kind`` with random weights, bfloat16, on the GPU, in eval mode."""
    import transformers

    torch.manual_seed(seed)
    if kind == "llama":
        config = transformers.LlamaConfig(**(config_overrides or LLAMA))
        model = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen3MoeConfig(**(config_overrides or QWEN3_MOE))
        model = transformers.Qwen3MoeForCausalLM(config)
    # Weights of a trained model's scale (the default init's 0.02 makes every block near-linear).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and "embed" not in name:
                p.normal_(0.0, p.shape[-1] ** -0.5)
    return model.to(device="cuda", dtype=torch.bfloat16).eval()


def blocks(model):
    """Each decoder layer's MLP or MoE block."""
    return [layer.mlp for layer in model.model.layers]


@torch.no_grad()
def calibrate(model, ids) -> list:
    """Per block: the amax of its input and of its hidden activations ``silu(gate) ⊙ up``
    (per expert for an MoE block, over all tokens: an upper bound of the routed ones)."""
    found = []

    def hook(block, args):
        x = args[0].reshape(-1, args[0].shape[-1]).float()
        if hasattr(block, "experts"):
            w = block.experts.gate_up_proj.float()
            gate, up = torch.einsum("th,eih->eti", x, w).chunk(2, dim=-1)
            hidden = (F.silu(gate) * up).abs().amax(dim=(1, 2))
        else:
            hidden = (F.silu(block.gate_proj(args[0]).float()) * block.up_proj(args[0]).float()).abs().amax()
        found.append((x.abs().max().item(), hidden))

    handles = [b.register_forward_pre_hook(hook) for b in blocks(model)]
    model(ids)
    for h in handles:
        h.remove()
    return found


def quantized(weight: torch.Tensor, input_scale: float) -> tuple:
    """A float weight quantized by the library: (data, scales, global scale, input scale)."""
    global_scale = nvfp4.nn.global_scale_for(weight.abs().max().item())
    data, scales = nvfp4.quantize(weight.contiguous(), global_scale)
    return data, scales, global_scale, input_scale


@torch.no_grad()
def save_checkpoint(model, amax: list, path: Path) -> None:
    """The blocks' weights quantized by the library, as a ModelOpt NVFP4 checkpoint: per layer
    ``gate_proj``/``up_proj``/``down_proj`` (per expert: ``experts.{e}.…``) with their
    ``input_scale`` from the calibration."""
    from safetensors.torch import save_file

    tensors = {}
    for i, (block, (x_amax, h_amax)) in enumerate(zip(blocks(model), amax)):
        x_scale = nvfp4.nn.global_scale_for(x_amax)
        prefix = f"model.layers.{i}.mlp"
        if hasattr(block, "experts"):
            experts = block.experts
            intermediate = experts.gate_up_proj.shape[1] // 2
            for e in range(experts.gate_up_proj.shape[0]):
                gate, up = experts.gate_up_proj[e].split(intermediate)
                h_scale = nvfp4.nn.global_scale_for(h_amax[e].item())
                for name, weight, scale in (("gate_proj", gate, x_scale), ("up_proj", up, x_scale),
                                            ("down_proj", experts.down_proj[e], h_scale)):
                    tensors.update(ckpt.modelopt_tensors(f"{prefix}.experts.{e}.{name}", *quantized(weight, scale)))
        else:
            h_scale = nvfp4.nn.global_scale_for(float(h_amax))
            for name, scale in (("gate_proj", x_scale), ("up_proj", x_scale), ("down_proj", h_scale)):
                weight = getattr(block, name).weight
                tensors.update(ckpt.modelopt_tensors(f"{prefix}.{name}", *quantized(weight, scale)))
    save_file({k: v.cpu() for k, v in tensors.items()}, str(path))


def _experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """The transformers experts implementation ``"nvfp4"``: the block's ``nvfp4.nn.Experts``."""
    return self.nvfp4(hidden_states, top_k_index, top_k_weights)


def _register_experts_implementation() -> bool:
    """Registers ``"nvfp4"`` in transformers' experts registry (5.7 and later); False where the
    registry is absent (the experts modules' forward is then replaced one by one)."""
    try:
        from transformers.integrations.moe import ExpertsInterface
    except ImportError:
        return False
    ExpertsInterface.register("nvfp4", _experts_forward)
    return True


def load_experts(tensors, prefix: str, experts: int) -> nvfp4.nn.Experts:
    """One MoE block's experts from the checkpoint: ``w13`` of each expert's gate rows then up
    rows (the row-major scales concatenated, then blocked: right for any intermediate size, also
    one that is not a multiple of 128), ``w2``, per-expert global scales."""
    layers = [[ckpt.load_linear(tensors, f"{prefix}.experts.{e}.{n}", device="cuda") for n in ("gate_proj", "up_proj", "down_proj")]
              for e in range(experts)]
    w13, w13_sf, w2, w2_sf = [], [], [], []
    for gate, up, down in layers:
        w13.append(torch.cat([gate.data, up.data]))
        rows = [ckpt.from_blocked(x.scales, x.out_features, x.in_features) for x in (gate, up)]
        w13_sf.append(ckpt.to_blocked(torch.cat(rows)))
        w2.append(down.data)
        w2_sf.append(down.scales)
    w13_global = torch.tensor([[g.global_scale, u.global_scale] for g, u, _ in layers], device="cuda")
    w2_global = torch.tensor([d.global_scale for _, _, d in layers], device="cuda")
    input_scale = max(max(g.input_scale, u.input_scale) for g, u, _ in layers)
    hidden_scales = torch.tensor([d.input_scale for _, _, d in layers], device="cuda")
    return nvfp4.nn.Experts(torch.stack(w13), torch.stack(w13_sf), w13_global, torch.stack(w2), torch.stack(w2_sf),
                            w2_global, input_scale, hidden_scales)


@torch.no_grad()
def load_nvfp4(model, path: Path):
    """A copy of ``model`` with its blocks on ``nvfp4.nn`` modules loaded from the checkpoint."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    quantized_model = copy.deepcopy(model)
    registered = _register_experts_implementation()
    for i, layer in enumerate(quantized_model.model.layers):
        prefix = f"model.layers.{i}.mlp"
        if hasattr(layer.mlp, "experts"):
            experts = layer.mlp.experts
            experts.nvfp4 = load_experts(tensors, prefix, experts.gate_up_proj.shape[0])
            if not registered:
                experts.forward = types.MethodType(_experts_forward, experts)
        else:
            gate, up, down = (ckpt.to_linear(ckpt.load_linear(tensors, f"{prefix}.{n}", device="cuda"))
                              for n in ("gate_proj", "up_proj", "down_proj"))
            layer.mlp = nvfp4.nn.SwiGLUMLP(gate, up, down)
    if registered and hasattr(quantized_model, "set_experts_implementation"):
        quantized_model.set_experts_implementation("nvfp4")
    return quantized_model


@torch.no_grad()
def dequantized_reference(model, path: Path):
    """A copy of ``model`` in bfloat16 whose block weights are the checkpoint's, dequantized."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    reference = copy.deepcopy(model)

    def weight(prefix):
        layer = ckpt.load_linear(tensors, prefix, device="cuda")
        return nvfp4.dequantize(layer.data, layer.scales, layer.global_scale, dtype=torch.bfloat16)

    for i, layer in enumerate(reference.model.layers):
        prefix = f"model.layers.{i}.mlp"
        if hasattr(layer.mlp, "experts"):
            experts = layer.mlp.experts
            for e in range(experts.gate_up_proj.shape[0]):
                experts.gate_up_proj[e].copy_(torch.cat([weight(f"{prefix}.experts.{e}.gate_proj"), weight(f"{prefix}.experts.{e}.up_proj")]))
                experts.down_proj[e].copy_(weight(f"{prefix}.experts.{e}.down_proj"))
        else:
            for name in ("gate_proj", "up_proj", "down_proj"):
                getattr(layer.mlp, name).weight.copy_(weight(f"{prefix}.{name}"))
    return reference


def relative_error(got, want) -> float:
    return ((got.double() - want.double()).norm() / want.double().norm()).item()


@torch.no_grad()
def decode_tokens_per_second(model, ids, new_tokens: int) -> tuple:
    """(tokens/s of greedy decoding, the generated ids), ``new_tokens`` after the prompt."""
    kwargs = dict(do_sample=False, max_new_tokens=new_tokens, min_new_tokens=new_tokens, attention_mask=torch.ones_like(ids))
    # Warm-up: a whole generation (the first one after loading pays one-time costs, plans and
    # caches, of about a second).
    model.generate(ids, **kwargs)
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = model.generate(ids, **kwargs)
    torch.cuda.synchronize()
    return new_tokens * ids.shape[0] / (time.perf_counter() - start), out


def run(kind: str, new_tokens: int, config=None, prompt_tokens: int = 64, directory=None) -> dict:
    model = build(kind, config)
    if kind == "qwen3-moe" and hasattr(model, "set_experts_implementation"):
        model.set_experts_implementation("eager")  # the reference's own expert loop
    vocab = model.config.vocab_size
    generator = torch.Generator(device="cuda").manual_seed(1)
    calibration = torch.randint(0, vocab, (4, prompt_tokens), device="cuda", generator=generator)
    prompt = torch.randint(0, vocab, (1, prompt_tokens), device="cuda", generator=generator)
    with tempfile.TemporaryDirectory(dir=directory) as temporary:
        path = Path(temporary) / "model-nvfp4.safetensors"
        save_checkpoint(model, calibrate(model, calibration), path)
        quantized_model = load_nvfp4(model, path)
        reference = dequantized_reference(model, path)
    with torch.no_grad():
        logits_error = relative_error(quantized_model(prompt).logits, reference(prompt).logits)
    ours, our_ids = decode_tokens_per_second(quantized_model, prompt, new_tokens)
    theirs, their_ids = decode_tokens_per_second(reference, prompt, new_tokens)
    same = int((our_ids == their_ids).all(dim=0).long().cumprod(0).sum().item()) - prompt_tokens
    return dict(model=kind, logits_error=logits_error, nvfp4_tokens_per_s=ours, bf16_tokens_per_s=theirs,
                same_tokens=same, new_tokens=new_tokens, quantized=quantized_model, reference=reference)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["llama", "qwen3-moe", "both"], default="both")
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    kinds = ["llama", "qwen3-moe"] if args.model == "both" else [args.model]
    print("| model | logits rel. error vs bf16 (dequantized weights) | greedy tokens equal | nvfp4 tokens/s | bf16 tokens/s |")
    print("| --- | --- | --- | --- | --- |")
    for kind in kinds:
        r = run(kind, args.new_tokens)
        print(f"| {kind} | {r['logits_error']:.4f} | {r['same_tokens']} of {r['new_tokens']} | "
              f"{r['nvfp4_tokens_per_s']:.1f} | {r['bf16_tokens_per_s']:.1f} |")


if __name__ == "__main__":
    main()
