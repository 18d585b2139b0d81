#!/bin/bash
# benches/grouped: main's row-order timing and the phased branch, one run; gemm sanity.
cd "$(dirname "$0")/.."
mkdir -p /tmp/c12 && tar xzf .gpu-bundle/c12.tgz -C /tmp/c12
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm --format=csv,noheader
B=/tmp/c12/c12
timeout 200 $B/grouped_phased --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
timeout 150 $B/grouped_main --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/rows > $OUT/grouped-main.log 2>&1; echo "main rc=$?"
timeout 90 $B/gemm --bench --shapes gpumode,128x4096x7168 --sets 10 --max-seconds 0.3 --results /tmp/gemmres > $OUT/gemm.log 2>&1; echo "gemm rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -c1-230
grep -E "^\|" $OUT/grouped-main.log | cut -c1-230
grep -E "^\|" $OUT/gemm.log | cut -c1-200
