#!/usr/bin/env bash
# Final build (d0d5427): every GPU test binary, then the grouped bench with its peers.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b20.tgz -C /tmp/p && B=/tmp/p/b20
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
for t in gpu gpu_dual_gemm gpu_grouped; do
  timeout 280 $B/$t --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log)"
done
timeout 200 $B/grouped --sets 10 --max-seconds 0.4 > $OUT/grouped-final.log 2>&1; echo "grouped rc=$?"
grep -E '^\| ' $OUT/grouped-final.log | awk -F'|' '{print $2,$9,$11,$12,$13,$14,$15,$16}'
