"""µs per ``nvfp4.dual_gemm`` call from Python (eager: argument checks, the custom op's
dispatch, the native call; and replayed from a CUDA graph), on the task shapes and M = 1, to
set beside the Rust bench (``cargo bench --bench dual_gemm``) run on the same device.

    python bindings/python/benchmarks/dual_gemm.py
"""

import torch

import nvfp4

SHAPES = [(256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168), (1, 4096, 7168)]


def random_nvfp4(rows, k):
    data = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, device="cuda") & 0b1011_1011
    sf = torch.randint(0, 0x38, nvfp4.scale_shape(rows, k), dtype=torch.uint8, device="cuda")
    return data, sf.view(torch.float8_e4m3fn)


def time_us(fn, calls=100):
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def main():
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time")
        return
    arch, name, sms = nvfp4.device_info()
    print(f"device: {name} ({arch}, {sms} SMs); torch {torch.__version__}")
    print("| M × N × K | eager µs / call | CUDA graph µs / call |")
    print("| --- | --- | --- |")
    for m, n, k in SHAPES:
        a, b1, b2 = random_nvfp4(m, k), random_nvfp4(n, k), random_nvfp4(n, k)
        out = torch.empty((m, n), dtype=torch.float16, device="cuda")

        def call():
            nvfp4.dual_gemm(a[0], b1[0], b2[0], a[1], b1[1], b2[1], 1.0, 1.0, out=out)

        eager = time_us(call)
        call()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(10):
                call()
        replay = time_us(graph.replay, calls=10) / 10
        print(f"| {m}×{n}×{k} | {eager:.1f} | {replay:.1f} |")


if __name__ == "__main__":
    main()
