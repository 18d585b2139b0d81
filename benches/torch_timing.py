"""The timing method of the Rust benches (benches/common), for their PyTorch baselines.

Per case, one call per input set back to back between two CUDA events, the L2 flushed (a
256 MiB zero fill) before each batch; batches until the relative standard error of the mean is
below 0.5 % (at least 5 batches) or `max_seconds` pass (at most 1000 batches).
"""

import math
import time

import torch


def time_calls(call, sets, max_seconds):
    """Mean µs per call of `call(0..sets)` and the relative standard error of that mean."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for i in range(sets):
        call(i)
    samples = []
    started = time.time()
    while True:
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(sets):
            call(i)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / sets)
        count = len(samples)
        mean = sum(samples) / count
        variance = sum((s - mean) ** 2 for s in samples) / max(count - 1, 1)
        relative = math.sqrt(variance / count) / mean
        if count >= 5 and (relative < 0.005 or time.time() - started > max_seconds) or count >= 1000:
            return mean, relative
