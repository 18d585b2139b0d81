#!/bin/bash
# Weighted stream-K split (branch exp/weighted-split) against main: GPU tests, then the grouped
# rows and a few dense rows, main and the branch alternately (A B B A).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c21.tgz -C /tmp && B=/tmp/c21
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 100 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
done
for v in main new; do
  timeout 60 $B/gemm_$v --shapes gpumode,256x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/gemm-$v.log 2>&1; echo "gemm $v rc=$?"
  timeout 60 $B/dual_gemm_$v --shapes 256x4096x7168,512x3072x7168 --max-seconds 0.2 --results /tmp/r > $OUT/dual-$v.log 2>&1; echo "dual $v rc=$?"
done
for f in $OUT/grouped-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
for f in $OUT/gemm-*.log $OUT/dual-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,3 | tail -n +3 | head -8; done
