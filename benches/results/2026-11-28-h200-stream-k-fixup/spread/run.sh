#!/usr/bin/env bash
# Spread stream-K fix-up: GPU tests, then gemm A/B on the split shapes.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b22.tgz -C /tmp/p && B=/tmp/p/b22
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
for t in gpu_dual_gemm gpu_grouped gpu; do
  timeout 200 $B/$t-fix --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log)"
  grep -E "panicked|FAILED" $OUT/test-$t.log | head -5
done
S=gpumode,128x4096x14336,256x4096x7168,256x4096x14336,1024x4096x7168,4096x4096x7168
for r in 1 2; do for b in main fix; do
  timeout 100 $B/gemm-$b --shapes $S --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s %s| ", $2, $3, $4}')"
done; done
