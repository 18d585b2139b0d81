"""GPU tests of ``nvfp4.nn``: each module is exactly the composition of the library's ops it
documents (bit for bit), and close to a float reference that fake-quantizes the same way
(dequantized weights, activations quantized and dequantized with the same static scales,
products in float64): relative error (Frobenius) below 1 % for Linear and SwiGLUMLP, 2 % for
Experts (its per-expert h is rounded to float16 before quantization on both sides, but one
rounding step apart can move an e2m1 code). Also CUDA graphs and torch.compile of the modules.
"""

import pytest
import torch
import torch.nn.functional as F

import nvfp4
import nvfp4.nn
from nvfp4_decode import codes_of, dequant


def relative_error(got, want):
    return ((got.double() - want.double()).norm() / want.double().norm()).item()


def fake_quant(x, scale):
    """``x`` as the library quantizes it: quantize, then dequantize (float32)."""
    data, sf = nvfp4.quantize(x.contiguous(), scale)
    return dequant(data, sf, scale if scale is not None else 1.0)


def weights_of(linear):
    return dequant(linear.weight, linear.weight_scales, linear.weight_global_scale)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_linear_and_swiglu_mlp(cuda, dtype):
    g = torch.Generator(device=cuda).manual_seed(11)
    hidden, intermediate, tokens = 512, 1024, 37
    make = lambda o, i: torch.nn.Linear(i, o, bias=False, device=cuda, dtype=dtype)
    gate, up, down = make(intermediate, hidden), make(intermediate, hidden), make(hidden, intermediate)
    for layer in (gate, up, down):
        torch.nn.init.normal_(layer.weight, std=0.05, generator=g)
    x = torch.randn(3, tokens, hidden, device=cuda, dtype=dtype, generator=g)
    # Calibration: the float block's activations' amax.
    x_scale = nvfp4.nn.global_scale_for(x.abs().max().item())
    h_float = F.silu(gate(x).float()) * up(x).float()
    h_scale = nvfp4.nn.global_scale_for(h_float.abs().max().item())

    linear = nvfp4.nn.Linear.from_float(gate, x_scale)
    y = linear(x)
    assert y.dtype == dtype and y.shape == (3, tokens, intermediate)
    xq, xs = nvfp4.quantize(x.reshape(-1, hidden).contiguous(), x_scale)
    composed = nvfp4.gemm(xq, linear.weight, xs, linear.weight_scales, linear.alpha(), out_dtype=dtype)
    assert torch.equal(y.reshape(-1, intermediate), composed)
    want = fake_quant(x.reshape(-1, hidden), x_scale).double() @ weights_of(linear).double().T
    assert relative_error(y.reshape(-1, intermediate), want) < 1e-2

    mlp = nvfp4.nn.SwiGLUMLP.from_float(gate, up, down, x_scale, h_scale)
    y = mlp(x)
    assert y.dtype == dtype and y.shape == x.shape
    hq, hs = nvfp4.dual_gemm_nvfp4(xq, mlp.gate.weight, mlp.up.weight, xs, mlp.gate.weight_scales, mlp.up.weight_scales,
                                   mlp.gate.alpha(), mlp.up.alpha(), global_scale=h_scale)
    composed = nvfp4.gemm(hq, mlp.down.weight, hs, mlp.down.weight_scales, mlp.down.alpha(), out_dtype=dtype)
    assert torch.equal(y.reshape(-1, hidden), composed)
    xf = fake_quant(x.reshape(-1, hidden), x_scale).double()
    h = (F.silu(xf @ weights_of(mlp.gate).double().T) * (xf @ weights_of(mlp.up).double().T)).half()
    want = fake_quant(h, h_scale).double() @ weights_of(mlp.down).double().T
    assert relative_error(y.reshape(-1, hidden), want) < 1e-2

    # A CUDA graph of the block replays on new inputs; torch.compile gives the same values.
    static = x.clone()
    mlp(static)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = mlp(static)
    fresh = torch.randn(x.shape, device=cuda, dtype=dtype, generator=g) * 0.5
    static.copy_(fresh)
    graph.replay()
    assert torch.equal(out, mlp(fresh))
    compiled = torch.compile(mlp, fullgraph=True)
    assert torch.equal(compiled(fresh), mlp(fresh))


def test_experts_match_a_per_expert_reference_and_replay_in_a_graph(cuda):
    g = torch.Generator(device=cuda).manual_seed(12)
    experts, hidden, intermediate, tokens, top_k = 8, 256, 128, 50, 2
    gate_up = torch.randn(experts, 2 * intermediate, hidden, device=cuda, generator=g) * 0.05
    down = torch.randn(experts, hidden, intermediate, device=cuda, generator=g) * 0.05
    x = torch.randn(tokens, hidden, device=cuda, generator=g).to(torch.bfloat16)
    logits = torch.randn(tokens, experts, device=cuda, generator=g)
    top_k_weights, top_k_index = torch.topk(logits.softmax(-1), top_k, dim=-1)
    x_scale = nvfp4.nn.global_scale_for(x.abs().max().item())
    h_scales = torch.full((experts,), 0.5 / 2688.0, device=cuda)
    module = nvfp4.nn.Experts.from_float(gate_up, down, x_scale, h_scales)
    # Freed blocks full of 0xFF bytes (NaN in fp16 and e4m3), which the module's uninitialized
    # intermediates (y, h) are likely to reuse: a byte of them that reached the output would show.
    poison = [torch.full((1 << n,), 255, dtype=torch.uint8, device=cuda) for n in range(10, 20)]
    del poison
    got = module(x, top_k_index, top_k_weights)
    assert got.dtype == torch.bfloat16 and got.shape == x.shape
    assert torch.isfinite(got).all()

    xf = fake_quant(x, x_scale).double()
    want = torch.zeros(tokens, hidden, dtype=torch.float64, device=cuda)
    for e in range(experts):
        rows, slot = (top_k_index == e).nonzero(as_tuple=True)
        if rows.numel() == 0:
            continue
        w13 = dequant(module.w13[e], module.w13_scales[e], module.alpha_gate[e].item() / x_scale).double()
        w2 = dequant(module.w2[e], module.w2_scales[e], module.alpha_down[e].item() / h_scales[e].item()).double()
        gate, up = (xf[rows] @ w13.T).split(intermediate, dim=1)
        h = (F.silu(gate) * up).half()
        y = fake_quant(h, h_scales[e].item()).double() @ w2.T
        want.index_add_(0, rows, y * top_k_weights[rows, slot, None].double())
    assert relative_error(got, want) < 2e-2, relative_error(got, want)

    # Captured once, replayed with new routing and inputs (nothing waits for the GPU).
    static_x, static_index, static_weights = x.clone(), top_k_index.clone(), top_k_weights.clone()
    module(static_x, static_index, static_weights)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = module(static_x, static_index, static_weights)
    new_index = torch.randint(0, experts, (tokens, top_k), device=cuda, generator=g)
    static_index.copy_(new_index)
    graph.replay()
    assert torch.equal(out, module(static_x, new_index, static_weights))


def test_quantize_grouped_places_each_groups_scales_on_its_block(cuda):
    g = torch.Generator(device=cuda).manual_seed(13)
    sizes, k = [3, 0, 130, 1], 320
    x = torch.randn(sum(sizes), k, device=cuda, generator=g).to(torch.bfloat16)
    row_offsets = torch.tensor([0, 3, 3, 133, 134], dtype=torch.int32, device=cuda)
    scale_offsets = torch.tensor([0, 128, 128, 384, 512], dtype=torch.int32, device=cuda)
    scale_rows = nvfp4.nn.grouped_scale_rows(sum(sizes), len(sizes))
    data, scales = nvfp4.nn.quantize_grouped(x, row_offsets, scale_offsets, scale_rows, 0.01)
    want_data, want_scales = nvfp4.quantize(x, 0.01)
    assert torch.equal(data, want_data)
    codes, want_codes = codes_of(scales, scale_rows, k), codes_of(want_scales, sum(sizes), k)
    for start, size, scale_start in [(0, 3, 0), (3, 130, 128), (133, 1, 384)]:
        assert torch.equal(codes[scale_start : scale_start + size], want_codes[start : start + size])
    used = torch.zeros(scale_rows, dtype=torch.bool, device=cuda)
    for size, scale_start in [(3, 0), (130, 128), (1, 384)]:
        used[scale_start : scale_start + size] = True
    assert (codes[~used] == 0).all()

    # Gathered source rows (repeats, any order): the same bytes as quantizing the gathered rows.
    tokens = torch.randn(50, k, device=cuda, generator=g).to(torch.bfloat16)
    source = torch.randint(0, 50, (sum(sizes),), device=cuda, generator=g)
    got = nvfp4.nn.quantize_grouped(tokens, row_offsets, scale_offsets, scale_rows, 0.01, source_rows=source)
    want = nvfp4.nn.quantize_grouped(tokens[source].contiguous(), row_offsets, scale_offsets, scale_rows, 0.01)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1].view(torch.uint8), want[1].view(torch.uint8))


def test_quantize_grouped_moves_each_rows_scales_to_its_groups_block(monkeypatch, cuda):
    """The grouped-layout gather's placement, the quantizer replaced by one whose scale code of
    row r, column c is (r + c) % 97 + 1 and whose packed bytes are r % 251."""
    import nvfp4.checkpoint as ckpt
    import nvfp4.nn

    def fake_quantize(x, global_scale):
        rows, k = x.shape
        codes = ((torch.arange(rows)[:, None] + torch.arange(k // 16)[None, :]) % 97 + 1).to(torch.uint8)
        data = (torch.arange(rows)[:, None] % 251).to(torch.uint8).expand(rows, k // 2).contiguous()
        return data.to(cuda), ckpt.to_blocked(codes.view(torch.float8_e4m3fn)).to(cuda)

    monkeypatch.setattr(nvfp4.nn, "quantize", fake_quantize)
    sizes, k = [3, 0, 130, 1], 64
    rows = sum(sizes) + 2  # two rows past the last group: in no group
    row_offsets = torch.tensor([0, 3, 3, 133, 134], dtype=torch.int32, device=cuda)
    scale_offsets = torch.tensor([0, 128, 128, 384, 512], dtype=torch.int32, device=cuda)
    scale_rows = nvfp4.nn.grouped_scale_rows(rows, len(sizes))
    data, scales = nvfp4.nn.quantize_grouped(torch.zeros(rows, k, device=cuda), row_offsets, scale_offsets,
                                             scale_rows, None)
    assert torch.equal(data[:, 0].cpu(), (torch.arange(rows) % 251).to(torch.uint8))
    codes = ckpt.from_blocked(scales.cpu(), scale_rows, k).view(torch.uint8)
    want = torch.zeros_like(codes)
    for start, size, scale_start in [(0, 3, 0), (3, 130, 128), (133, 1, 384)]:
        r = torch.arange(start, start + size)[:, None]
        want[scale_start : scale_start + size] = ((r + torch.arange(k // 16)[None, :]) % 97 + 1).to(torch.uint8)
    assert torch.equal(codes, want)

    # The same layout from fewer source rows, gathered: layout row i takes row source[i]'s codes.
    source = torch.tensor([(5 * i) % 40 for i in range(rows)])
    data, gathered = nvfp4.nn.quantize_grouped(torch.zeros(40, k, device=cuda), row_offsets, scale_offsets, scale_rows,
                                               None, source_rows=source.to(cuda))
    assert torch.equal(data[:, 0].cpu(), (source % 251).to(torch.uint8))
    codes = ckpt.from_blocked(gathered.cpu(), scale_rows, k).view(torch.uint8)
    want = torch.zeros_like(codes)
    for start, size, scale_start in [(0, 3, 0), (3, 130, 128), (133, 1, 384)]:
        r = source[start : start + size][:, None]
        want[scale_start : scale_start + size] = ((r + torch.arange(k // 16)[None, :]) % 97 + 1).to(torch.uint8)
    assert torch.equal(codes, want)
