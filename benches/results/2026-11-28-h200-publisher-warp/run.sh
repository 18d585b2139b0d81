#!/usr/bin/env bash
# The publisher warp: GPU tests, then main against it side by side.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b25.tgz -C /tmp/p && B=/tmp/p/b25
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
if [ "$1" = tests ]; then
for t in gpu gpu_dual_gemm gpu_grouped; do
  timeout 200 $B/test-$t > $OUT/test-$t.log 2>&1
  echo "== test $t rc=$? $(grep -E 'test result' $OUT/test-$t.log)"
done
S=gpumode,128x4096x14336,256x4096x7168,256x4096x14336,1024x4096x7168,4096x4096x7168
for r in 1 2; do for b in main pub; do
  timeout 90 $B/gemm-$b --shapes $S --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
else
for r in 1 2; do for b in main pub; do
  timeout 90 $B/dual_gemm-$b --shapes bench,128x4096x7168,64x4096x7168 --sets 10 --max-seconds 0.3 > $OUT/dual-$b-r$r.log 2>&1
  echo "== dual $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
for b in main pub; do
  timeout 150 $B/grouped-$b --cases gpumode,prefill --sets 10 --max-seconds 0.3 > $OUT/grouped-$b.log 2>&1
  echo "== grouped $b rc=$? $(grep -E '^\| [a-zA-Z]' $OUT/grouped-$b.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done
fi
