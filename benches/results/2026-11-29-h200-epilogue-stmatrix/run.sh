#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c21.tgz -C /tmp && B=/tmp/c21
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
S=$SECONDS
for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"
done
grep -E "FAILED|panicked" $OUT/test-*.log | head -5
for v in main new new main; do
  [ $((SECONDS - S)) -gt 300 ] && break
  timeout 60 $B/grouped_$v --cases gpumode,qwen3-30b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$?"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9,12 | tail -n +3
  timeout 40 $B/gemm_$v --shapes gpumode,256x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/gemm-$v.log 2>&1; echo "gemm $v rc=$?"
  grep "^|" $OUT/gemm-$v.log | cut -d'|' -f2,3,4 | tail -n +3
done
rm -f $OUT/test-gpu.log
