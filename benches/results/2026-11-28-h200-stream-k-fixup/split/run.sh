#!/usr/bin/env bash
# Where the stream-K fix-up's time goes: main, a reducer that waits but reads nothing, no fix-up.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b24.tgz -C /tmp/p && B=/tmp/p/b24
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
S=gpumode,128x4096x14336,256x4096x7168,256x4096x14336
for r in 1 2; do for b in main noreads nofix; do
  timeout 60 $B/gemm-$b --shapes $S --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
for b in main noreads nofix; do
  timeout 60 $B/dual_gemm-$b --shapes 128x4096x7168,64x4096x7168,256x3072x4096 --sets 10 --max-seconds 0.3 > $OUT/dual-$b.log 2>&1
  echo "== dual $b rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$b.log | head -3 | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done
