#!/usr/bin/env bash
# Kernel durations and DRAM traffic (Nsight Compute, clocks left alone) of the token pre-decoding passes at large M.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b25.tgz -C /tmp/p && B=/tmp/p/b25
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread
run() { # name, kernel regex, launch-skip, binary args...
  local n=$1 r=$2 s=$3; shift 3
  timeout 150 ncu --clock-control none --kernel-name regex:$r --launch-skip $s --launch-count 3 --metrics $M --csv "$@" > $OUT/ncu-$n.csv 2> $OUT/ncu-$n.err
  echo "== $n rc=$?"
  python3 - $OUT/ncu-$n.csv <<'PY'
import csv,sys,collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
if not rows: print("no rows"); sys.exit()
h=rows[0]; ki=h.index("Kernel Name"); mi=h.index("Metric Name"); vi=h.index("Metric Value"); ui=h.index("Metric Unit")
d=collections.defaultdict(list)
for r in rows[1:]: d[(r[ki][:44],r[mi],r[ui])].append(r[vi].replace(',',''))
for (k,m,u),v in sorted(d.items()): print(f"{k:44s} {m[:50]:50s} {u:8s} {' '.join(v[:3])}")
PY
}
run gemm-4096 nvfp4 10 $B/gemm-main --shapes 4096x4096x7168 --sets 2 --max-seconds 0.02
run gemm-1024 nvfp4 10 $B/gemm-main --shapes 1024x4096x7168 --sets 2 --max-seconds 0.02
run dual-512 nvfp4 10 $B/dual_gemm-main --shapes 512x4096x7168 --sets 2 --max-seconds 0.02
run grouped-ds-prefill prepare 2 $B/grouped-main --cases deepseek-v3-prefill --sets 2 --max-seconds 0.02
