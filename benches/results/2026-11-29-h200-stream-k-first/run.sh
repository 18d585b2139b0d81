#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c19.tgz -C /tmp && B=/tmp/c19
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"
done
for r in 1 2; do for v in main new; do
  timeout 100 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,qwen3-30b-decode --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v-$r.log 2>&1; echo "grouped $v $r rc=$?"
done; done
for r in 1 2; do for v in main new; do
  timeout 60 $B/gemm_$v --shapes gpumode,1x4096x7168,256x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/gemm-$v-$r.log 2>&1; echo "gemm $v $r rc=$?"
  timeout 60 $B/dual_gemm_$v --shapes 256x4096x7168,512x3072x7168,128x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/dual-$v-$r.log 2>&1; echo "dual $v $r rc=$?"
done; done
for f in $OUT/grouped-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
for f in $OUT/gemm-*.log $OUT/dual-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,3 | tail -n +3 | head -8; done
