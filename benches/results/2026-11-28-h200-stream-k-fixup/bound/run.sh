#!/usr/bin/env bash
# Bound of a faster stream-K fix-up: main against a timing-only build with no fix-up at all.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b21.tgz -C /tmp/p && B=/tmp/p/b21
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
S=gpumode,128x4096x14336,256x4096x7168,256x4096x14336,512x4096x7168,1024x4096x7168
for r in 1 2; do for b in main nofix; do
  timeout 100 $B/gemm-$b --shapes $S --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s %s| ", $2, $3, $4}')"
done; done
for r in 1; do for b in main nofix; do
  timeout 100 $B/dual_gemm-$b --shapes bench,128x4096x7168,64x4096x7168 --sets 10 --max-seconds 0.3 > $OUT/dual-$b-r$r.log 2>&1
  echo "== dual $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
  timeout 100 $B/grouped-$b --cases gpumode,prefill --sets 6 --max-seconds 0.3 > $OUT/grouped-$b-r$r.log 2>&1
  echo "== grouped $b r$r rc=$? $(grep -E '^\| ' $OUT/grouped-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done; done
