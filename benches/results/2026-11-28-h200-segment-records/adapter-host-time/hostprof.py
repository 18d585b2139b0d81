"""Host time of nvfp4.gpumode.group_gemm per call, split: the adapter's Python part, the native call."""
import cProfile, pstats, sys, time, os
from pathlib import Path
import torch
sys.path.insert(0, "bindings/python/benchmarks")
import gpumode as gb
import nvfp4, nvfp4.gpumode as gm
from nvfp4 import _nvfp4
d = Path(os.environ["NVFP4_GPUMODE_DIR"])
ref = gb.load_reference(d, "nvfp4_group_gemm")
N = 300
for spec in gb.benchmark_shapes(d, "nvfp4_group_gemm"):
    data = ref.generate_input(**dict(spec, seed=spec["seed"] + 42))
    for _ in range(5): gm.group_gemm(data)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(N): gm.group_gemm(data)
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    # the Python part alone
    abc, _, scales, _ = data
    def prep():
        groups = []
        for (a_g, b_g, c_g), (sfa_g, sfb_g) in zip(abc, scales):
            a, b, sfa, sfb, out = gm._described((a_g, b_g, sfa_g, sfb_g, c_g), range(5), c_g.shape[2])
            groups.extend((a.matrix(i), b.matrix(i), sfa.scales(i), sfb.scales(i), out.matrix(i)) for i in range(c_g.shape[2]))
        return gm._stream(abc[0][2]), [(a, b, None, a_sf, b_sf, None, 1.0, 1.0, out) for a, b, a_sf, b_sf, out in groups]
    t3 = time.perf_counter()
    for _ in range(N): stream, groups = prep()
    t4 = time.perf_counter()
    torch.cuda.synchronize()
    t5 = time.perf_counter()
    for _ in range(N): _nvfp4.grouped_separate(stream, False, groups)
    t6 = time.perf_counter(); torch.cuda.synchronize(); t7 = time.perf_counter()
    g = len(abc)
    print(f"groups {g} {spec}: adapter host {1e6*(t1-t0)/N:.1f} us/call (with drain {1e6*(t2-t0)/N:.1f}); python part {1e6*(t4-t3)/N:.1f}; native call {1e6*(t6-t5)/N:.1f} (with drain {1e6*(t7-t5)/N:.1f})")
    if g == 2:
        pr = cProfile.Profile(); pr.enable()
        for _ in range(N): gm.group_gemm(data)
        pr.disable(); torch.cuda.synchronize()
        pstats.Stats(pr).sort_stats("tottime").print_stats(8)
