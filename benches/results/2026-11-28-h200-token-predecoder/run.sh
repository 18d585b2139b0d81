#!/usr/bin/env bash
# The token pre-decoder: skipped (timing bound, wrong results) and launched programmatically, against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b26.tgz -C /tmp/p && B=/tmp/p/b26
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
GS=gpumode,256x4096x7168,1024x4096x7168,4096x4096x7168
DS=bench,64x4096x7168,128x4096x7168
for r in 1 2; do for v in main env skip pdl; do
  case $v in main) b=main; e=;; env) b=env; e=;; skip) b=env; e=NVFP4_SKIP_PREDECODE=1;; pdl) b=env; e=NVFP4_PDL_PREDECODE=1;; esac
  env $e timeout 90 $B/gemm-$b --shapes $GS --sets 10 --max-seconds 0.3 > $OUT/gemm-$v-r$r.log 2>&1
  echo "== gemm $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$v-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
  env $e timeout 90 $B/dual_gemm-$b --shapes $DS --sets 10 --max-seconds 0.3 > $OUT/dual-$v-r$r.log 2>&1
  echo "== dual $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$v-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
