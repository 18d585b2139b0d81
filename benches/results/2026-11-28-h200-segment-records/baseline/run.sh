#!/usr/bin/env bash
# H200 baseline of main (gemm, dual) + ncu throughput sections of the 256-token plain/dual tiles vs cuBLAS.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b16.tgz -C /tmp/p && B=/tmp/p/b16
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for spec in "gemm 1024x4096x7168 nvfp4_gemm_sm90_t256" "dual 512x4096x7168 nvfp4_dual_gemm_sm90_t256"; do
  set -- $spec
  for k in "$3" "^(sm90|nvjet|cutlass|ampere|sm80)"; do
    tag=$1-$( [ "$k" = "$3" ] && echo ours || echo cublas )
    timeout 120 $NCU --clock-control none -k regex:"$k" --launch-skip 3 --launch-count 1 --set full -o /tmp/$tag $B/$1-main --shapes $2 --sets 2 --max-seconds 0.05 > $OUT/ncu-$tag.log 2>&1; echo "$tag rc=$?"
    $NCU -i /tmp/$tag.ncu-rep --page details --csv > $OUT/$tag-details.csv 2>&1
    python3 - $OUT/$tag-details.csv <<'PY'
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
h=rows[0]
try:
    kn=h.index('Kernel Name'); mn=h.index('Metric Name'); mv=h.index('Metric Value'); mu=h.index('Metric Unit')
except ValueError:
    print(open(sys.argv[1]).read()[:800]); sys.exit()
want=['Duration','SM Frequency','Compute (SM) Throughput','Memory Throughput','L1/TEX Cache Throughput','L2 Cache Throughput','DRAM Throughput','Executed Ipc Active','Issue Slots Busy','L2 Hit Rate','Registers Per Thread','Achieved Occupancy']
seen=set()
for r in rows[1:]:
    if r[mn] in want and r[mn] not in seen:
        seen.add(r[mn]); print(f"  {r[kn][:50]:50s} {r[mn]:28s} {r[mv]} {r[mu]}")
PY
  done
done
$NCU -i /tmp/gemm-ours.ncu-rep --page raw --csv > $OUT/gemm-ours-raw.csv 2>&1
$NCU -i /tmp/gemm-cublas.ncu-rep --page raw --csv > $OUT/gemm-cublas-raw.csv 2>&1
for r in 1; do
  timeout 150 $B/gemm-main --sets 10 --max-seconds 0.4 > $OUT/gemm-main-r$r.log 2>&1; echo "gemm rc=$?"
  timeout 100 $B/dual-main --shapes bench,decode --sets 10 --max-seconds 0.4 > $OUT/dual-main-r$r.log 2>&1; echo "dual rc=$?"
done
grep -E "^\| [0-9]" $OUT/gemm-main-r1.log | awk -F'|' '{print $2,$3,$4,$7,$8}'
grep -E "^\| [0-9]" $OUT/dual-main-r1.log | awk -F'|' '{print $2,$3,$4,$5,$6,$7,$8}'
