#!/usr/bin/env bash
# Reducer reads in chunks of 8 row groups of two partial sums: GPU tests, A/B against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b23.tgz -C /tmp/p && B=/tmp/p/b23
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
for t in gpu_grouped gpu_dual_gemm; do
  timeout 150 $B/$t-chunk --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log)"
  grep -E "panicked|FAILED" $OUT/test-$t.log | head -5
done
S=gpumode,128x4096x14336,256x4096x7168,256x4096x14336,1024x4096x7168
for r in 1 2 3; do for b in main chunk; do
  timeout 60 $B/gemm-$b --shapes $S --sets 10 --max-seconds 0.3 > $OUT/gemm-$b-r$r.log 2>&1
  echo "== gemm $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
for r in 1 2; do for b in main chunk; do
  timeout 60 $B/dual_gemm-$b --shapes bench,128x4096x7168,64x4096x7168 --sets 10 --max-seconds 0.3 > $OUT/dual-$b-r$r.log 2>&1
  echo "== dual $b r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$b-r$r.log | head -6 | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
for b in main chunk; do
  timeout 100 $B/grouped-$b --cases gpumode,prefill --sets 6 --max-seconds 0.3 > $OUT/grouped-$b.log 2>&1
  echo "== grouped $b rc=$? $(grep -E '^\| (gpumode|deep|qwen|gpt)' $OUT/grouped-$b.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done
