#!/bin/bash
# Serpentine waves for grouped launches of a few waves against main: GPU tests, then the grouped
# rows and the dense rows, main and the branch alternately (A B B A).
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c23.tgz -C /tmp && B=/tmp/c23
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > /tmp/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' /tmp/test-$t.log | tail -1)"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 100 $B/grouped_$v --cases gpumode,prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 60 $B/gemm_$v --shapes gpumode,256x4096x7168 --max-seconds 0.2 --results /tmp/r > /tmp/gemm-$r-$v.log 2>&1; echo "gemm $r $v rc=$?"
  timeout 60 $B/dual_gemm_$v --shapes 256x4096x7168,512x3072x7168 --max-seconds 0.2 --results /tmp/r > /tmp/dual-$r-$v.log 2>&1; echo "dual $r $v rc=$?"
done
cat /tmp/gemm-*.log > $OUT/gemm.log; cat /tmp/dual-*.log > $OUT/dual.log; cat /tmp/test-*.log > $OUT/tests.log
for f in $OUT/grouped-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
for f in /tmp/gemm-*.log /tmp/dual-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,3 | tail -n +3 | head -5; done
