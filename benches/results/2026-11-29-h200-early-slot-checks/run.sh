#!/bin/bash
# The tiled consumers' stage-top waits checked one slice early (branch exp/early-slot-checks)
# against main: the GPU tests of the branch, then benches/grouped (GPU MODE and prefill rows),
# benches/dual_gemm (task shapes) and benches/gemm (GPU MODE shapes and two down projections),
# each in the order main, new, new, main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c37.tgz -C /tmp && B=/tmp/c37
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 90 $B/grouped_$v --cases gpumode,prefill --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
  timeout 60 $B/dual_gemm_$v --shapes bench --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/dual-$r-$v.log 2>&1; echo "dual $r $v rc=$?"
  timeout 60 $B/gemm_$v --shapes gpumode,256x4096x7168,1024x4096x7168 --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/gemm-$r-$v.log 2>&1; echo "gemm $r $v rc=$?"
done
for f in $OUT/grouped-*.log $OUT/dual-*.log $OUT/gemm-*.log; do
  echo "== $(basename $f) $(grep -E '^\| [0-9a-z]' $f | grep -v -- '---' | cut -d'|' -f2,4 | tr -s ' ' | tr '\n' ';')"
done
