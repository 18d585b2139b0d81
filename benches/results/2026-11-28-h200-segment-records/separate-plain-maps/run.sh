#!/usr/bin/env bash
# Hopper separate plain GEMM with one weight map a group: grouped GPU tests, memcheck of the separate tests, GPU MODE A/B against rec; ncu of gpumode-4's tiled kernel.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b19.tgz -C /tmp/p && B=/tmp/p/b19
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
timeout 200 $B/gpu_grouped-upmap --test-threads 1 > $OUT/gpu_grouped-upmap.log 2>&1; echo "tests rc=$? $(grep 'test result' $OUT/gpu_grouped-upmap.log)"
NCS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $NCS --tool memcheck $B/gpu_grouped-upmap separate --test-threads 1 > $OUT/memcheck-separate.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' $OUT/memcheck-separate.log | tr '\n' ' ')"
for r in 1 2; do for b in rec upmap; do
  timeout 60 $B/grouped-$b --cases gpumode --sets 10 --max-seconds 0.4 > $OUT/ab-$b-r$r.log 2>&1
  echo "== $b r$r rc=$? $(grep -E '^\| (gpumode)' $OUT/ab-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done; done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
timeout 120 $NCU --clock-control none -k regex:"nvfp4_grouped_gemm_sm90_t128" --launch-skip 3 --launch-count 1 --set full -o /tmp/g4 $B/grouped-upmap --cases gpumode-4 --sets 2 --max-seconds 0.05 > $OUT/ncu-g4.log 2>&1; echo "ncu rc=$?"
$NCU -i /tmp/g4.ncu-rep --page details --csv > $OUT/ncu-gpumode4-t128-details.csv 2>&1
$NCU -i /tmp/g4.ncu-rep --page raw --csv > $OUT/ncu-gpumode4-t128-raw.csv 2>&1
python3 - $OUT/ncu-gpumode4-t128-raw.csv <<'PY'
import csv,sys
rows=list(csv.reader(open(sys.argv[1]))); h=rows[0]; v=rows[2]
for n in ['gpu__time_duration.sum','sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active','sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed','lts__throughput.avg.pct_of_peak_sustained_elapsed','dram__throughput.avg.pct_of_peak_sustained_elapsed','sm__warps_active.avg.pct_of_peak_sustained_active','smsp__issue_active.avg.pct_of_peak_sustained_active','sm__cycles_active.avg','gpc__cycles_elapsed.max','launch__grid_size']:
    if n in h: print(f"  {n:70s} {v[h.index(n)]}")
PY
