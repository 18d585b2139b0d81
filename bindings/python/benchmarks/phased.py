"""The Python layer benches' timer (``examples/mlp.py``, ``benchmarks/moe_layer.py``), as
``benches/common``'s phased timer times the Rust benches' backends (perf log entry 144).

Under its power limit an H200 runs each workload at its own clocks (an NVFP4 layer at higher
ones than the same layer in bf16), so layers replayed in turn would all run at their mix's
clocks, and layers timed once one after another drift with the GPU's temperature. So each graph
is replayed in two phases of its own, back to back, about ``seconds`` each, in the order
A B … … B A, the L2 flushed before each replay and each replay between two CUDA events; only
each phase's second half is kept.
"""

import statistics
import time

import torch


def phased_us(graphs, seconds=0.4, min_replays=10):
    """Median µs of a replay of each of the CUDA graphs ``graphs`` (see the module doc)."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # more than any L2

    def replay(g):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        return start, end

    # One replay of each as a warm-up, one timed alone: the phase's replay count.
    counts = []
    for g in graphs:
        g.replay()
        began = time.perf_counter()
        replay(g)[1].synchronize()
        counts.append(max(2 * min_replays, min(1000, int(seconds / (time.perf_counter() - began)))))
    samples = [[] for _ in graphs]
    for k in list(range(len(graphs))) + list(reversed(range(len(graphs)))):
        marks = [replay(graphs[k]) for _ in range(counts[k])]
        torch.cuda.synchronize()
        samples[k] += [start.elapsed_time(end) * 1000.0 for start, end in marks[len(marks) // 2:]]
    return [statistics.median(s) for s in samples]
