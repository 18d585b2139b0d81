#!/usr/bin/env bash
# 64-token tiles decoding their tokens in the kernel (no pre-decoding pass) against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b27.tgz -C /tmp/p && B=/tmp/p/b27
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
timeout 200 $B/test-gpu_dual_gemm > $OUT/test-gpu_dual_gemm.log 2>&1
echo "== test gpu_dual_gemm rc=$? $(grep -E 'test result' $OUT/test-gpu_dual_gemm.log)"
GS=gpumode,64x4096x7168,64x4096x14336,256x7168x4096
DS=64x4096x7168,64x14336x4096,64x18432x7168,128x4096x7168
for r in 1 2; do for b in main dec64; do
  timeout 90 $B/gemm-$b --shapes $GS --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
  timeout 90 $B/dual_gemm-$b --shapes $DS --sets 10 --max-seconds 0.3 > $OUT/dual-$b-r$r.log 2>&1
  echo "== dual $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
