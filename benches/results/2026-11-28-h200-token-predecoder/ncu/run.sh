#!/usr/bin/env bash
# Kernel durations (Nsight Compute, clocks left alone) of the tiled GEMM's launches at the GPU MODE shapes.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b25.tgz -C /tmp/p && B=/tmp/p/b25
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum
run() { # name, binary args...
  local n=$1; shift
  timeout 120 ncu --clock-control none --kernel-name regex:nvfp4 --launch-skip 40 --launch-count 8 --metrics $M --csv "$@" > $OUT/ncu-$n.csv 2> $OUT/ncu-$n.err
  echo "== $n rc=$?"
  python3 - $OUT/ncu-$n.csv <<'PY'
import csv,sys,collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
if not rows: print("no rows"); sys.exit()
h=rows[0]; ki=h.index("Kernel Name"); mi=h.index("Metric Name"); vi=h.index("Metric Value"); ui=h.index("Metric Unit")
d=collections.defaultdict(list)
for r in rows[1:]: d[(r[ki][:60],r[mi],r[ui])].append(r[vi].replace(',',''))
for (k,m,u),v in sorted(d.items()): print(f"{k:60s} {m[:45]:45s} {u:8s} {' '.join(v[:8])}")
PY
}
run gemm-128x7168x2048 $B/gemm-main --shapes 128x7168x2048 --sets 4 --max-seconds 0.02
run gemm-128x4096x7168 $B/gemm-main --shapes 128x4096x7168 --sets 4 --max-seconds 0.02
run gemm-256x4096x7168 $B/gemm-main --shapes 256x4096x7168 --sets 4 --max-seconds 0.02
run grouped-gpumode-4 $B/grouped-main --cases gpumode-4 --sets 4 --max-seconds 0.02
