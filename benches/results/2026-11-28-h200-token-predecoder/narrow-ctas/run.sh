#!/usr/bin/env bash
# The token pre-decoder in 64-thread CTAs that fit beside a tiled CTA, plain and programmatic, against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b28.tgz -C /tmp/p && B=/tmp/p/b28
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
NVFP4_PDL_PREDECODE=1 timeout 200 $B/test-gpu_dual_gemm > $OUT/test-gpu_dual_gemm.txt 2>&1
echo "== test gpu_dual_gemm (programmatic pass) rc=$? $(grep -E 'test result' $OUT/test-gpu_dual_gemm.txt)"
NVFP4_PDL_PREDECODE=1 timeout 100 $B/test-gpu > $OUT/test-gpu.txt 2>&1
echo "== test gpu (programmatic pass) rc=$? $(grep -E 'test result' $OUT/test-gpu.txt)"
GS=gpumode,256x4096x7168,1024x4096x7168,4096x4096x7168
DS=bench,64x4096x7168,128x4096x7168
for r in 1 2; do for v in main plain pdl; do
  case $v in main) b=main; e=;; plain) b=p64; e=;; pdl) b=p64; e=NVFP4_PDL_PREDECODE=1;; esac
  env $e timeout 90 $B/gemm-$b --shapes $GS --sets 10 --max-seconds 0.3 > $OUT/gemm-$v-r$r.md 2>&1
  echo "== gemm $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$v-r$r.md | awk -F'|' '{printf "%s %s| ", $2, $3}')"
  env $e timeout 90 $B/dual_gemm-$b --shapes $DS --sets 10 --max-seconds 0.3 > $OUT/dual-$v-r$r.md 2>&1
  echo "== dual $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$v-r$r.md | head -6 | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
