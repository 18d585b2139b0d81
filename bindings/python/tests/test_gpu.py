"""GPU tests of the package: every op against a PyTorch reference computed from the dequantized
values (task tolerance rtol = atol = 1e-3 on the fp16 outputs), the GPU quantizer bit for bit
against the library's CPU quantizer, a side stream, a CUDA graph replayed on new inputs,
torch.compile, and torch.library.opcheck. Skipped with a reason without a CUDA device (a failure
when NVFP4_REQUIRE_GPU=1)."""

import pytest
import torch
import torch.nn.functional as F

import nvfp4
from nvfp4 import _nvfp4
from nvfp4_decode import codes_of, dequant, reblock

TOLERANCE = dict(rtol=1e-3, atol=1e-3)


def random_nvfp4(rows: int, k: int, device, generator) -> tuple:
    """Random packed e2m1 bytes and blocked scales (codes 0..0x7E: zeros, subnormals, normals)."""
    data = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, device=device, generator=generator)
    sf = torch.randint(0, 0x3F, nvfp4.scale_shape(rows, k), dtype=torch.uint8, device=device, generator=generator)
    return data, sf.view(torch.float8_e4m3fn)


def captured(cuda, step):
    """``step()`` warmed up on a side stream (plans are made outside the capture), then
    captured in a CUDA graph: the graph and what the captured call returned."""
    side = torch.cuda.Stream(cuda)
    side.wait_stream(torch.cuda.current_stream(cuda))
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream(cuda).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = step()
    return graph, result


def host_quantize(x: torch.Tensor, global_scale):
    data, sf, _ = _nvfp4.quantize_host(x.float().cpu().numpy().tobytes(), x.shape[0], x.shape[1], global_scale)
    return bytes(data), bytes(sf)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("global_scale", [None, 0.37])
def test_gpu_quantizer_is_bit_identical_to_the_cpu_quantizer(cuda, dtype, global_scale):
    g = torch.Generator(device=cuda).manual_seed(1)
    for rows, k in [(1, 16), (7, 48), (129, 64), (300, 2880)]:
        # Full range: magnitudes over many binades, exact zeros, tiny values.
        x = torch.randn(rows, k, device=cuda, generator=g) * torch.exp2(torch.randint(-20, 12, (rows, k), device=cuda, generator=g).float())
        x[:, ::7] = 0.0
        x = x.to(dtype)
        data, sf = nvfp4.quantize(x, global_scale)
        want_data, want_sf = host_quantize(x, global_scale)
        assert bytes(data.cpu().numpy().tobytes()) == want_data, (rows, k, dtype)
        assert bytes(sf.view(torch.uint8).cpu().numpy().tobytes()) == want_sf, (rows, k, dtype)


def test_non_finite_input_is_reported_with_its_first_index(cuda):
    x = torch.ones(9, 64, device=cuda)
    x[4, 44] = float("nan")
    x[7, 3] = float("inf")
    with pytest.raises(ValueError, match="index 300"):
        nvfp4.quantize(x, check_finite=True)
    nvfp4.quantize(torch.ones(9, 64, device=cuda), check_finite=True)  # finite: no error


def test_dequantize_matches_the_reference_decoder(cuda):
    g = torch.Generator(device=cuda).manual_seed(2)
    data, sf = random_nvfp4(130, 320, cuda, g)
    for dtype in [torch.float16, torch.bfloat16]:
        got = nvfp4.dequantize(data, sf, 0.5, dtype=dtype)
        torch.testing.assert_close(got, dequant(data, sf, 0.5).to(dtype), rtol=0, atol=0)


def reference_dual(a, b1, b2, alpha1, alpha2):
    gate = alpha1 * (dequant(*a).double() @ dequant(*b1).double().T)
    up = alpha2 * (dequant(*a).double() @ dequant(*b2).double().T)
    return (F.silu(gate) * up).half()


@pytest.mark.parametrize("m, n, k", [(1, 256, 512), (40, 512, 576), (130, 256, 2880), (256, 1024, 1024)])
def test_dual_gemm_and_gemm_match_the_reference(cuda, m, n, k):
    g = torch.Generator(device=cuda).manual_seed(m + n + k)
    a, b1, b2 = (random_nvfp4(r, k, cuda, g) for r in (m, n, n))
    out = nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02)
    torch.testing.assert_close(out, reference_dual(a, b1, b2, 0.03, 0.02), **TOLERANCE)
    plain = nvfp4.gemm(a[0], b1[0], a[1], b1[1], alpha=0.01)
    want = (0.01 * (dequant(*a).double() @ dequant(*b1).double().T)).half()
    torch.testing.assert_close(plain, want, **TOLERANCE)
    # The 6-D permuted scale view (the GPU MODE harness's) is the same bytes.
    r, c = nvfp4.scale_shape(m, k)
    permuted = a[1].as_strided((32, 4, r // 128, 4, c // 4, 1), (16, 4, (c // 4) * 512, 1, 512, 1))
    again = nvfp4.gemm(a[0], b1[0], permuted, b1[1], alpha=0.01)
    torch.testing.assert_close(again, plain, rtol=0, atol=0)


@pytest.mark.parametrize("m, n, k", [(1, 256, 512), (13, 512, 576), (130, 256, 2880), (300, 1024, 1024)])
def test_dual_gemm_nvfp4_is_the_quantized_dual_gemm_bit_for_bit(cuda, m, n, k):
    g = torch.Generator(device=cuda).manual_seed(m + 3 * n + k)
    a, b1, b2 = (random_nvfp4(r, k, cuda, g) for r in (m, n, n))
    fp16 = nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02)
    fitted = fp16.abs().max().item() / 2688.0
    for scale in [fitted, fitted / 64.0, fitted * 512.0]:
        want = nvfp4.quantize(fp16, scale)
        data = torch.full((m, n // 2), 0xA5, dtype=torch.uint8, device=cuda)
        scales = torch.full(nvfp4.scale_shape(m, n), 0x5A, dtype=torch.uint8, device=cuda).view(torch.float8_e4m3fn)
        got = nvfp4.dual_gemm_nvfp4(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02, global_scale=scale, out=(data, scales))
        assert torch.equal(got[0], want[0]), (m, n, k, scale)
        assert torch.equal(got[1].view(torch.uint8), want[1].view(torch.uint8)), (m, n, k, scale)
        again = nvfp4.dual_gemm_nvfp4(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02, global_scale=scale)
        assert torch.equal(again[0], want[0]) and torch.equal(again[1].view(torch.uint8), want[1].view(torch.uint8))


@pytest.mark.parametrize("t, h, i", [(1, 512, 1024), (13, 576, 2880), (64, 320, 1088), (256, 1024, 2880), (300, 768, 2880)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_swiglu_mlp_is_quantize_dual_gemm_nvfp4_and_gemm_bit_for_bit(cuda, t, h, i, dtype):
    g = torch.Generator(device=cuda).manual_seed(t + 7 * h + i)
    w1, w3 = (random_nvfp4(i, h, cuda, g) for _ in range(2))
    w2 = random_nvfp4(h, i, cuda, g)
    for x_scale, h_scale in [(0.01, 0.05), (None, 0.3)]:
        x = (torch.randn(t, h, device=cuda, generator=g) * 4).to(dtype)
        xq, xs = nvfp4.quantize(x, x_scale)
        s = x_scale or 1.0
        hq, hs = nvfp4.dual_gemm_nvfp4(xq, w1[0], w3[0], xs, w1[1], w3[1], s * 0.5, s * 0.25, global_scale=h_scale)
        want = nvfp4.gemm(hq, w2[0], hs, w2[1], h_scale * 0.125, out_dtype=dtype)
        out = torch.full((t, h), float("nan"), dtype=dtype, device=cuda)
        got = nvfp4.swiglu_mlp(x, w1[0], w3[0], w2[0], w1[1], w3[1], w2[1], 0.5, 0.25, 0.125,
                               x_scale=x_scale, h_scale=h_scale, out=out)
        assert got is out
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (t, h, i, x_scale)
        again = nvfp4.swiglu_mlp(x, w1[0], w3[0], w2[0], w1[1], w3[1], w2[1], 0.5, 0.25, 0.125,
                                 x_scale=x_scale, h_scale=h_scale, out_dtype=dtype)
        assert torch.equal(again.view(torch.int16), want.view(torch.int16))


def test_swiglu_mlp_rejects_weights_that_do_not_form_an_mlp(cuda):
    g = torch.Generator(device=cuda).manual_seed(9)
    w1, w3 = (random_nvfp4(256, 128, cuda, g) for _ in range(2))
    w2 = random_nvfp4(192, 256, cuda, g)  # hidden 192, not x's 128
    x = torch.randn(4, 128, device=cuda, dtype=torch.bfloat16, generator=g)
    with pytest.raises(ValueError, match="w2"):
        nvfp4.swiglu_mlp(x, w1[0], w3[0], w2[0], w1[1], w3[1], w2[1], x_scale=0.1, h_scale=0.1)


def test_a_cuda_graph_of_the_mlp_op_replays_on_new_inputs(cuda):
    g = torch.Generator(device=cuda).manual_seed(10)
    t, h, i = 256, 512, 1024
    w1, w3 = (random_nvfp4(i, h, cuda, g) for _ in range(2))
    w2 = random_nvfp4(h, i, cuda, g)
    x = torch.randn(t, h, device=cuda, dtype=torch.bfloat16, generator=g)

    def step():
        return nvfp4.swiglu_mlp(x, w1[0], w3[0], w2[0], w1[1], w3[1], w2[1], x_scale=0.01, h_scale=0.05)

    def three_calls():
        xq, xs = nvfp4.quantize(x, 0.01)
        hq, hs = nvfp4.dual_gemm_nvfp4(xq, w1[0], w3[0], xs, w1[1], w3[1], 0.01, 0.01, global_scale=0.05)
        return nvfp4.gemm(hq, w2[0], hs, w2[1], 0.05)

    graph, out = captured(cuda, step)
    for replay in range(3):
        x.copy_(torch.randn(t, h, device=cuda, dtype=torch.bfloat16, generator=g))
        graph.replay()
        assert torch.equal(out, three_calls()), replay


@pytest.mark.parametrize("m, n, k", [(1, 256, 512), (130, 256, 1024)])
def test_alphas_as_device_tensors_give_the_float_alphas_results_bit_for_bit(cuda, m, n, k):
    g = torch.Generator(device=cuda).manual_seed(11 + m)
    a, b1, b2 = (random_nvfp4(r, k, cuda, g) for r in (m, n, n))
    t = lambda v: torch.tensor(v, dtype=torch.float32, device=cuda)  # noqa: E731
    ops = (a[0], b1[0], b2[0], a[1], b1[1], b2[1])
    want = nvfp4.dual_gemm(*ops, 0.03, 0.02)
    assert torch.equal(nvfp4.dual_gemm(*ops, t(0.03), t([0.02])), want)
    assert torch.equal(nvfp4.dual_gemm(*ops, t(0.03), 0.02), want)
    plain = nvfp4.gemm(a[0], b1[0], a[1], b1[1], alpha=0.01)
    assert torch.equal(nvfp4.gemm(a[0], b1[0], a[1], b1[1], alpha=t(0.01)), plain)
    h = nvfp4.dual_gemm_nvfp4(*ops, 0.03, 0.02, global_scale=0.05)
    h_t = nvfp4.dual_gemm_nvfp4(*ops, t(0.03), t(0.02), global_scale=0.05)
    assert torch.equal(h[0], h_t[0]) and torch.equal(h[1].view(torch.uint8), h_t[1].view(torch.uint8))
    # Read when the kernel runs: a CUDA graph replays with the tensor's current value.
    alpha = t(0.03)
    nvfp4.dual_gemm(*ops, alpha, 0.02)  # plans outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = nvfp4.dual_gemm(*ops, alpha, 0.02)
    for value in (0.03, 0.5, 0.001):
        alpha.fill_(value)
        graph.replay()
        assert torch.equal(out, nvfp4.dual_gemm(*ops, value, 0.02)), value
    for bad in (t([0.1, 0.2]), torch.tensor(0.1, dtype=torch.float64, device=cuda)):
        with pytest.raises(ValueError, match="alpha1"):
            nvfp4.dual_gemm(*ops, bad, 0.02)
    with pytest.raises(ValueError, match="alpha"):
        nvfp4.gemm(a[0], b1[0], a[1], b1[1], alpha=torch.tensor([0.1], device="cpu"))


@pytest.mark.parametrize("m, n, k", [(1, 256, 512), (130, 256, 1024)])
def test_bfloat16_output_is_the_float16_output_rounded_to_bfloat16(cuda, m, n, k):
    g = torch.Generator(device=cuda).manual_seed(19 + m)
    a, b1, b2 = (random_nvfp4(r, k, cuda, g) for r in (m, n, n))
    ops = (a[0], b1[0], b2[0], a[1], b1[1], b2[1])
    pairs = [
        (nvfp4.dual_gemm(*ops, 0.03, 0.02), nvfp4.dual_gemm(*ops, 0.03, 0.02, out_dtype=torch.bfloat16)),
        (nvfp4.gemm(a[0], b1[0], a[1], b1[1], 0.01), nvfp4.gemm(a[0], b1[0], a[1], b1[1], 0.01, out_dtype=torch.bfloat16)),
    ]
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=cuda)
    pairs.append((pairs[0][0], nvfp4.dual_gemm(*ops, 0.03, 0.02, out=out)))
    for half, brain in pairs:
        assert brain.dtype == torch.bfloat16 and half.abs().max() > 0
        # One f32 value rounded both ways: half a bfloat16 step and half a float16 step apart.
        h, b = half.float(), brain.float()
        assert torch.all((h - b).abs() <= h.abs() * (1 / 256 + 1 / 1024) + 1e-7)
    with pytest.raises(ValueError, match="out_dtype"):
        nvfp4.dual_gemm(*ops, 0.03, 0.02, out_dtype=torch.float32)


def test_a_side_stream_and_a_preallocated_output(cuda):
    g = torch.Generator(device=cuda).manual_seed(3)
    a, b1, b2 = (random_nvfp4(r, 512, cuda, g) for r in (64, 256, 256))
    want = reference_dual(a, b1, b2, 0.05, 0.05)
    side = torch.cuda.Stream(cuda)
    out = torch.full((64, 256), float("nan"), dtype=torch.float16, device=cuda)
    side.wait_stream(torch.cuda.current_stream(cuda))
    with torch.cuda.stream(side):
        nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.05, 0.05, out=out)
    torch.cuda.current_stream(cuda).wait_stream(side)
    torch.testing.assert_close(out, want, **TOLERANCE)


def test_a_cuda_graph_of_quantize_and_dual_gemm_replays_on_new_inputs(cuda):
    g = torch.Generator(device=cuda).manual_seed(4)
    m, n, k = 48, 256, 512
    b1, b2 = (random_nvfp4(n, k, cuda, g) for _ in range(2))
    x = torch.randn(m, k, device=cuda, dtype=torch.bfloat16, generator=g)

    def step():
        data, sf = nvfp4.quantize(x, 0.01)
        return nvfp4.dual_gemm(data, b1[0], b2[0], sf, b1[1], b2[1], 0.01, 0.01), data, sf

    graph, (out, data, sf) = captured(cuda, step)
    for replay in range(3):
        x.copy_(torch.randn(m, k, device=cuda, dtype=torch.bfloat16, generator=g))
        graph.replay()
        want_data, want_sf = host_quantize(x, 0.01)
        assert bytes(data.cpu().numpy().tobytes()) == want_data, replay
        # alpha = the activations' global scale (0.01) × the weights' (none).
        torch.testing.assert_close(out, reference_dual((data, sf), b1, b2, 0.01, 0.01), **TOLERANCE)


def test_a_shape_first_called_inside_a_graph_capture_is_a_clear_error_and_the_next_call_works(cuda):
    g = torch.Generator(device=cuda).manual_seed(5)
    m, n, k = 24, 192, 320  # a shape no other test plans
    a, b1, b2 = (random_nvfp4(r, k, cuda, g) for r in (m, n, n))
    out = torch.zeros((m, n), dtype=torch.float16, device=cuda)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ValueError, match="before capturing"):
        with torch.cuda.graph(graph):
            nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02, out=out)
    with pytest.raises(ValueError, match="before capturing"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            nvfp4.quantize(torch.ones(4, 64, device=cuda), check_finite=True)
    got = nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02)
    torch.testing.assert_close(got, reference_dual(a, b1, b2, 0.03, 0.02), **TOLERANCE)
    # Planned once outside, the shape captures and replays.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.03, 0.02, out=out)
    graph.replay()
    torch.testing.assert_close(out, got, rtol=0, atol=0)


FIRST_CALL_INSIDE_A_CAPTURE = """
import torch, nvfp4
x = torch.ones((4, 64), device="cuda")
try:
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        nvfp4.quantize(x)
except ValueError as error:
    print("rejected:", error)
data, scales = nvfp4.quantize(x)
torch.cuda.synchronize()
print("then:", tuple(data.shape))
"""


def test_the_first_call_of_a_process_inside_a_capture_is_a_clear_error_and_the_next_call_works(cuda):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", FIRST_CALL_INSIDE_A_CAPTURE], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "rejected:" in run.stdout and "before capturing" in run.stdout, run.stdout
    assert "then: (4, 32)" in run.stdout, run.stdout


def test_the_first_call_of_a_process_before_pytorch_uses_the_gpu_works(cuda):
    import subprocess
    import sys

    # No CUDA context exists yet (PyTorch creates its own lazily): opening the GPU must not
    # depend on one.
    code = "import torch, nvfp4; print(nvfp4.device_info()); x = torch.ones(4, 64, device='cuda'); print(nvfp4.quantize(x, 1.0)[0].shape)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "torch.Size([4, 32])" in run.stdout, run.stdout


def test_scales_that_overflow_after_the_kernels_rescale_are_rejected_and_zero_inputs_give_zeros(cuda):
    a = (torch.zeros((8, 32), dtype=torch.uint8, device=cuda), torch.zeros(nvfp4.scale_shape(8, 64), dtype=torch.float8_e4m3fn, device=cuda))
    b = random_nvfp4(64, 64, cuda, torch.Generator(device=cuda).manual_seed(6))
    with pytest.raises(ValueError, match="alpha1"):
        nvfp4.dual_gemm(a[0], b[0], b[0], a[1], b[1], b[1], 3e38, 1.0)
    # The gated product divides by the reciprocal of α1 · α2 (times the kernels' rescale, 2^28
    # each on Hopper): products past 2^126 are refused, the extremes within give exact zeros.
    with pytest.raises(ValueError, match="2\\^126"):
        nvfp4.dual_gemm(a[0], b[0], b[0], a[1], b[1], b[1], 1e30, 1e30)
    for alpha1, alpha2 in [(1e30, 1e-30), (1e-30, 1e30), (1e10, 1e10)]:
        out = nvfp4.dual_gemm(a[0], b[0], b[0], a[1], b[1], b[1], alpha1, alpha2)
        assert torch.equal(out, torch.zeros_like(out))
    out = nvfp4.gemm(a[0], b[0], a[1], b[1], 1e30)
    assert torch.equal(out, torch.zeros_like(out))


def test_invalid_device_offsets_are_reported_by_grouped_status_and_a_valid_launch_follows(cuda):
    g = torch.Generator(device=cuda).manual_seed(7)
    groups, rows, n, k = 2, 40, 64, 64
    a = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, device=cuda, generator=g)
    a_sf = torch.randint(0, 0x3F, nvfp4.scale_shape(256, k), dtype=torch.uint8, device=cuda, generator=g)
    b = torch.randint(0, 256, (groups, n, k // 2), dtype=torch.uint8, device=cuda, generator=g)
    b_sf = torch.randint(0, 0x3F, (groups,) + nvfp4.scale_shape(n, k), dtype=torch.uint8, device=cuda, generator=g)
    scale_offsets = torch.tensor([0, 128, 256], dtype=torch.int32, device=cuda)
    decreasing = torch.tensor([0, 30, 20], dtype=torch.int32, device=cuda)
    out = nvfp4.grouped_gemm(a, b, a_sf, b_sf, decreasing, scale_offsets)
    with pytest.raises(ValueError, match="row_offsets must not decrease"):
        nvfp4.grouped_status()
    assert (out == 0).all()  # nothing written
    valid = torch.tensor([0, 30, 40], dtype=torch.int32, device=cuda)
    out = nvfp4.grouped_gemm(a, b, a_sf, b_sf, valid, scale_offsets)
    nvfp4.grouped_status()
    a_codes = codes_of(a_sf, 256, k)
    for i, (r0, r1) in enumerate([(0, 30), (30, 40)]):
        ai = (a[r0:r1], reblock(a_codes[128 * i : 128 * i + r1 - r0], r1 - r0, k).view(torch.float8_e4m3fn))
        want = (dequant(*ai).double() @ dequant(b[i], b_sf[i].view(torch.float8_e4m3fn)).double().T).half()
        torch.testing.assert_close(out[r0:r1], want, **TOLERANCE)


def test_outputs_are_allocated_only_after_the_inputs_pass(cuda):
    # 2^31 rows of stride 0: the rule it breaks, not an out-of-memory error from the output.
    huge = torch.zeros((1, 32), dtype=torch.uint8, device=cuda).expand(2**31, 32)
    b = random_nvfp4(64, 64, cuda, torch.Generator(device=cuda).manual_seed(8))
    with pytest.raises(ValueError, match="`a`"):
        nvfp4.gemm(huge, b[0], torch.zeros(nvfp4.scale_shape(8, 64), dtype=torch.float8_e4m3fn, device=cuda), b[1])
    with pytest.raises(ValueError, match="`x`"):
        nvfp4.quantize(torch.zeros((1, 64), device=cuda).expand(2**31, 64))
    a = random_nvfp4(8, 64, cuda, torch.Generator(device=cuda).manual_seed(9))
    out = nvfp4.gemm(a[0], b[0], a[1], b[1], 0.5)
    want = (0.5 * (dequant(*a).double() @ dequant(*b).double().T)).half()
    torch.testing.assert_close(out, want, **TOLERANCE)


def test_the_finite_check_reports_each_streams_own_quantization(cuda):
    bad = torch.ones((4, 64), device=cuda)
    bad[2, 5] = float("inf")
    side = torch.cuda.Stream(device=cuda)
    side.wait_stream(torch.cuda.current_stream(cuda))
    with torch.cuda.stream(side):
        with pytest.raises(ValueError, match="133"):
            nvfp4.quantize(bad, check_finite=True)
    # The side stream's failure does not leak into the default stream's check.
    data, scales = nvfp4.quantize(torch.ones((4, 64), device=cuda), check_finite=True)
    assert data.shape == (4, 32)
    # Nor into the same stream's next call.
    with pytest.raises(ValueError, match="133"):
        nvfp4.quantize(bad, check_finite=True)
    ones = torch.ones((4, 64), device=cuda)
    data, scales = nvfp4.quantize(ones, check_finite=True)
    # Every byte as the host quantizer's, the scale padding's zeros included.
    assert (bytes(data.cpu().numpy().tobytes()), bytes(scales.view(torch.uint8).cpu().numpy().tobytes())) == host_quantize(ones, None)


def test_grouped_gemm_and_grouped_dual_gemm_match_the_reference(cuda):
    g = torch.Generator(device=cuda).manual_seed(5)
    sizes, n, k = [130, 0, 7, 1, 64], 256, 320
    groups = len(sizes)
    rows = sum(sizes) + 5
    # Each group's scale rows start on a 128-row block.
    row_offsets, scale_offsets = [0], [0]
    for s in sizes:
        row_offsets.append(row_offsets[-1] + s)
        scale_offsets.append(scale_offsets[-1] + (s + 127) // 128 * 128)
    scale_rows = scale_offsets[-1] + 128
    a = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, device=cuda, generator=g)
    a_sf = torch.randint(0, 0x3F, nvfp4.scale_shape(scale_rows, k), dtype=torch.uint8, device=cuda, generator=g)
    w1, w3 = (torch.randint(0, 256, (groups, n, k // 2), dtype=torch.uint8, device=cuda, generator=g) for _ in range(2))
    w1_sf, w3_sf = (torch.randint(0, 0x3F, (groups,) + nvfp4.scale_shape(n, k), dtype=torch.uint8, device=cuda, generator=g) for _ in range(2))
    alpha1 = torch.rand(groups, device=cuda, generator=g) * 0.05 + 0.01
    alpha3 = torch.rand(groups, device=cuda, generator=g) * 0.05 + 0.01
    offsets = torch.tensor(row_offsets, dtype=torch.int32, device=cuda)
    scale_offsets_t = torch.tensor(scale_offsets, dtype=torch.int32, device=cuda)
    plain = nvfp4.grouped_gemm(a, w1, a_sf, w1_sf, offsets, scale_offsets_t, alpha1)
    dual = nvfp4.grouped_dual_gemm(a, w1, w3, a_sf, w1_sf, w3_sf, offsets, scale_offsets_t, alpha1, alpha3)
    # The same weights as one concatenated w13 per group (gate rows, then up rows).
    w13 = torch.cat([w1, w3], dim=1)
    w13_sf = torch.stack([
        reblock(torch.cat([codes_of(w1_sf[i], n, k), codes_of(w3_sf[i], n, k)]), 2 * n, k) for i in range(groups)
    ])
    fused = nvfp4.grouped_dual_gemm_w13(a, w13, a_sf, w13_sf, offsets, scale_offsets_t, alpha1, alpha3)
    a_codes = codes_of(a_sf, scale_rows, k)
    for i, s in enumerate(sizes):
        r0 = row_offsets[i]
        if s == 0:
            continue
        a_rows = a[r0 : r0 + s]
        a_scales = reblock(a_codes[scale_offsets[i] : scale_offsets[i] + s], s, k)
        ai = (a_rows, a_scales.view(torch.float8_e4m3fn))
        b1i, b3i = (w1[i], w1_sf[i].view(torch.float8_e4m3fn)), (w3[i], w3_sf[i].view(torch.float8_e4m3fn))
        want_plain = (alpha1[i].item() * (dequant(*ai).double() @ dequant(*b1i).double().T)).half()
        torch.testing.assert_close(plain[r0 : r0 + s], want_plain, **TOLERANCE)
        want_dual = reference_dual(ai, b1i, b3i, alpha1[i].item(), alpha3[i].item())
        torch.testing.assert_close(dual[r0 : r0 + s], want_dual, **TOLERANCE)
        torch.testing.assert_close(fused[r0 : r0 + s], want_dual, **TOLERANCE)
    # Rows past the last group are not written (zeros in a new output).
    assert (plain[row_offsets[-1] :] == 0).all() and (dual[row_offsets[-1] :] == 0).all()
    # NVFP4 output in A's layout: each group bit for bit the quantizer on its fp16 rows.
    global_scales = torch.tensor([dual[row_offsets[i] : row_offsets[i + 1]].abs().max().item() / 2688.0 if s else 1.0 for i, s in enumerate(sizes)], device=cuda)
    for weights in [(w1, w3, w1_sf, w3_sf), (w13, None, w13_sf, None)]:
        b1, b3, b1_sf, b3_sf = weights
        h_data, h_scales = nvfp4.grouped_dual_gemm_nvfp4(a, b1, b3, a_sf, b1_sf, b3_sf, offsets, scale_offsets_t, alpha1, alpha3, global_scales=global_scales)
        h_codes = codes_of(h_scales, scale_rows, n)
        for i, s in enumerate(sizes):
            if s == 0:
                continue
            r0 = row_offsets[i]
            want_data, want_sf = nvfp4.quantize(dual[r0 : r0 + s], global_scales[i].item())
            assert torch.equal(h_data[r0 : r0 + s], want_data), i
            assert torch.equal(h_codes[scale_offsets[i] : scale_offsets[i] + s], codes_of(want_sf, s, n)), i


def test_separate_grouped_ops_batched_gemm_and_gemv_match_the_reference(cuda):
    g = torch.Generator(device=cuda).manual_seed(8)
    # Groups of their own M, N and K (one without tokens), in their own tensors.
    shapes = [(40, 256, 512), (0, 128, 256), (1, 384, 1536), (129, 128, 64)]
    a = [random_nvfp4(m, k, cuda, g) if m else (None, None) for m, _, k in shapes]
    b1, b3 = ([random_nvfp4(n, k, cuda, g) for _, n, k in shapes] for _ in range(2))
    alpha1, alpha3 = [0.02, 0.5, 0.03, 0.01], [0.04, 0.5, 0.01, 0.02]
    plain = nvfp4.grouped_gemm_separate([x[0] for x in a], [w[0] for w in b1], [x[1] for x in a], [w[1] for w in b1], alpha1)
    dual = nvfp4.grouped_dual_gemm_separate(
        [x[0] for x in a], [w[0] for w in b1], [w[0] for w in b3], [x[1] for x in a], [w[1] for w in b1],
        [w[1] for w in b3], alpha1, alpha3,
    )
    for i, (m, n, k) in enumerate(shapes):
        if m == 0:
            assert plain[i] is None and dual[i] is None
            continue
        want = (alpha1[i] * (dequant(*a[i]).double() @ dequant(*b1[i]).double().T)).half()
        torch.testing.assert_close(plain[i], want, **TOLERANCE)
        torch.testing.assert_close(dual[i], reference_dual(a[i], b1[i], b3[i], alpha1[i], alpha3[i]), **TOLERANCE)
    # A batch in one tensor per operand (batch-first, as PyTorch batches), one launch.
    batches, m, n, k = 3, 17, 256, 768
    xs = [random_nvfp4(m, k, cuda, g) for _ in range(batches)]
    ws = [random_nvfp4(n, k, cuda, g) for _ in range(batches)]
    out = nvfp4.batched_gemm(
        torch.stack([x[0] for x in xs]), torch.stack([w[0] for w in ws]),
        torch.stack([x[1] for x in xs]), torch.stack([w[1] for w in ws]), alpha=0.05,
    )
    for i in range(batches):
        want = (0.05 * (dequant(*xs[i]).double() @ dequant(*ws[i]).double().T)).half()
        torch.testing.assert_close(out[i], want, **TOLERANCE)
    # The matrix-vector product: one row of k values against 4096 weight rows.
    w, x = random_nvfp4(4096, 7168, cuda, g), random_nvfp4(1, 7168, cuda, g)
    y = nvfp4.gemv(w[0], w[1], x[0][0], x[1], alpha=0.01)
    want = (0.01 * (dequant(*w).double() @ dequant(*x).double()[0])).half()
    torch.testing.assert_close(y, want, **TOLERANCE)


def test_moe_combine_matches_the_weighted_sum_of_each_tokens_rows(cuda):
    g = torch.Generator(device=cuda).manual_seed(8)
    rows, tokens, top_k, width = 300, 40, 6, 264
    y = (torch.randn(rows, width, device=cuda, generator=g) * 100).half()
    sources = torch.randint(0, rows, (tokens, top_k), device=cuda, generator=g, dtype=torch.int32)
    sources[::7, 2] = -1  # an expert elsewhere: adds nothing
    sources[3, 5] = rows  # past the rows: adds nothing
    weights = torch.rand(tokens, top_k, device=cuda, generator=g)
    taken = (sources >= 0) & (sources < rows)
    picked = y.double()[sources.clamp(0, rows - 1).long()] * (weights.double() * taken)[..., None]
    want = picked.sum(1)
    for dtype in (torch.float16, torch.bfloat16):
        got = nvfp4.moe_combine(y, sources, weights, dtype=dtype)
        assert got.dtype == dtype and got.shape == (tokens, width)
        step = 2.0**-10 if dtype == torch.float16 else 2.0**-7
        torch.testing.assert_close(got.double(), want, rtol=step, atol=1e-3)
    out = torch.full((tokens, width), float("nan"), dtype=torch.bfloat16, device=cuda)
    assert nvfp4.moe_combine(y, sources, weights, out=out) is out and not out.isnan().any()
    # Half-precision weights are read as they are: the same as their float32 values.
    for half in (torch.float16, torch.bfloat16):
        short = weights.to(half)
        assert torch.equal(nvfp4.moe_combine(y, sources, short), nvfp4.moe_combine(y, sources, short.float()))
    with pytest.raises(ValueError, match="`weights`"):
        nvfp4.moe_combine(y, sources, weights.double())
    with pytest.raises(ValueError, match="`sources`"):
        nvfp4.moe_combine(y, sources.long(), weights)
    with pytest.raises(ValueError, match="`rows`"):
        nvfp4.moe_combine(y[:, :260], sources, weights)


def test_moe_route_is_the_stable_sort_by_expert_with_its_offsets(cuda):
    g = torch.Generator(device=cuda).manual_seed(9)
    # One CTA up to 4096 slots, then one per 4096 after a counting pass (here up to 8).
    for tokens, top_k, experts in [(64, 8, 128), (3000, 4, 256), (7, 2, 3), (1024, 4, 60), (4096, 8, 128)]:
        index = torch.stack([torch.randperm(experts, device=cuda, generator=g)[:top_k] for _ in range(tokens)])
        index[1, 0] = -1  # an expert on another GPU: last, in no group, source -1
        token_rows, sources, row_offsets, scale_offsets = nvfp4.moe_route(index, experts)
        flat = index.reshape(-1)
        bins = torch.where(flat < 0, experts, flat)
        order = torch.argsort(bins, stable=True)
        assert torch.equal(token_rows.long(), order // top_k)
        want_sources = torch.empty_like(order)
        want_sources[order] = torch.arange(order.numel(), device=cuda)
        want_sources[flat < 0] = -1
        assert torch.equal(sources.reshape(-1).long(), want_sources)
        counts = torch.bincount(bins, minlength=experts + 1)[:experts]
        zero = counts.new_zeros(1)
        assert torch.equal(row_offsets.long(), torch.cat([zero, counts.cumsum(0)]))
        assert torch.equal(scale_offsets.long(), torch.cat([zero, ((counts + 127) // 128 * 128).cumsum(0)]))
    with pytest.raises(ValueError, match="experts"):
        nvfp4.moe_route(index, 257)
    with pytest.raises(ValueError, match="`top_k_index`"):
        nvfp4.moe_route(index.int(), experts)
    # Above 4096 slots (the last case: 32768) the kernels need their count table: a short one is
    # refused.
    words = nvfp4._nvfp4.route_count_words(index.numel(), experts)
    assert words == -(-index.numel() // 4096) * (experts + 1)
    outs = [torch.empty(index.numel(), dtype=torch.int32, device=cuda), torch.empty_like(index, dtype=torch.int32),
            torch.empty(experts + 1, dtype=torch.int32, device=cuda), torch.empty(experts + 1, dtype=torch.int32, device=cuda)]
    with pytest.raises(ValueError, match="`counts`"):
        torch.ops.nvfp4.moe_route_out(index, *outs, torch.empty(words - 1, dtype=torch.int32, device=cuda))


def test_torch_compile_of_an_mlp_block(cuda):
    g = torch.Generator(device=cuda).manual_seed(6)
    t, h, i = 32, 512, 256
    w1, w3 = (random_nvfp4(i, h, cuda, g) for _ in range(2))
    w2 = random_nvfp4(h, i, cuda, g)

    def block(x):
        xq, xs = nvfp4.quantize(x, 0.02)
        yq, ys = nvfp4.dual_gemm_nvfp4(xq, w1[0], w3[0], xs, w1[1], w3[1], 0.02, 0.02, global_scale=0.05)
        return nvfp4.gemm(yq, w2[0], ys, w2[1], 0.05)

    x = torch.randn(t, h, device=cuda, dtype=torch.bfloat16, generator=g)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x), block(x), rtol=0, atol=0)


def test_opcheck_passes_for_every_op(cuda):
    g = torch.Generator(device=cuda).manual_seed(7)
    # Scales as uint8 codes (the ops take both): opcheck's schema check compares inputs with
    # torch.allclose, which PyTorch does not implement for float8_e4m3fn.
    a, b1, b2 = ((d, s.view(torch.uint8)) for d, s in (random_nvfp4(r, 256, cuda, g) for r in (64, 128, 128)))
    x = torch.randn(64, 256, device=cuda, generator=g)
    w2t = (lambda d, s: (d, s.view(torch.uint8)))(*random_nvfp4(256, 128, cuda, g))
    out = torch.empty(64, 128, dtype=torch.float16, device=cuda)
    alpha = torch.tensor([0.1], device=cuda)
    cases = [
        (torch.ops.nvfp4.quantize.default, (x, 0.5)),
        (torch.ops.nvfp4.dequantize.default, (a[0], a[1], 0.5, torch.float16)),
        (torch.ops.nvfp4.dual_gemm.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.1, 0.1)),
        (torch.ops.nvfp4.dual_gemm_out.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.1, 0.1, out)),
        (torch.ops.nvfp4.gemm.default, (a[0], b1[0], a[1], b1[1], 0.1)),
        (torch.ops.nvfp4.dual_gemm_nvfp4.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.1, 0.1, 0.5)),
        (torch.ops.nvfp4.swiglu_mlp.default, (x, b1[0], b1[0], w2t[0], b1[1], b1[1], w2t[1], 0.1, 0.1, 0.1, 0.5, 0.5)),
        # α as device tensors.
        (torch.ops.nvfp4.dual_gemm.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 1.0, 1.0, alpha, alpha)),
        (torch.ops.nvfp4.gemm.default, (a[0], b1[0], a[1], b1[1], 1.0, alpha)),
        (torch.ops.nvfp4.dual_gemm_nvfp4.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 1.0, 1.0, 0.5, alpha, None)),
        # bfloat16 output.
        (torch.ops.nvfp4.dual_gemm.default, (a[0], b1[0], b2[0], a[1], b1[1], b2[1], 0.1, 0.1, None, None, torch.bfloat16)),
        (torch.ops.nvfp4.gemm.default, (a[0], b1[0], a[1], b1[1], 0.1, None, torch.bfloat16)),
        (torch.ops.nvfp4.moe_combine.default, (x.half(), torch.tensor([[3, 0], [-1, 63]], dtype=torch.int32, device=cuda),
                                               torch.rand(2, 2, device=cuda), torch.bfloat16)),
        (torch.ops.nvfp4.moe_route_out.default,
         (torch.tensor([[3, 0], [1, 3]], device=cuda), torch.empty(4, dtype=torch.int32, device=cuda),
          torch.empty(2, 2, dtype=torch.int32, device=cuda), torch.empty(5, dtype=torch.int32, device=cuda),
          torch.empty(5, dtype=torch.int32, device=cuda), torch.empty(1, dtype=torch.int32, device=cuda))),
        (torch.ops.nvfp4.gather_grouped_out.default,
         (a[0], a[1], torch.tensor([3, 0, 7], dtype=torch.int32, device=cuda),
          torch.tensor([0, 1, 3], dtype=torch.int32, device=cuda), torch.tensor([0, 128, 256], dtype=torch.int32, device=cuda),
          torch.empty(3, 128, dtype=torch.uint8, device=cuda), torch.empty(256, 16, dtype=torch.uint8, device=cuda))),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
