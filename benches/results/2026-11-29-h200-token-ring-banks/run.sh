#!/bin/bash
# The two-bank decoded token ring in its two forms (offset: 31491f1, new: c2dfe0d) against main:
# GPU tests of both, then the grouped, dense GEMM and dual GEMM rows in turn (main, offset, new, new, offset, main).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c43.tgz -C /tmp && B=/tmp/c43
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent NVFP4_REQUIRE_GPU=1
S=$SECONDS
for v in new offset; do for t in gpu_grouped gpu_dual_gemm gpu; do
  timeout 120 $B/${t}_$v --test-threads 1 > $OUT/test-$t-$v.log 2>&1; echo "$t $v rc=$? $(grep -E 'test result' $OUT/test-$t-$v.log | tail -1)"
done; done
grep -hE "FAILED|panicked" $OUT/test-*.log | head -5
echo "tests took $((SECONDS - S)) s"
for v in main offset new new offset main; do
  [ $((SECONDS - S)) -gt 420 ] && break
  timeout 60 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$?"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
  timeout 40 $B/gemm_$v --shapes gpumode,256x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/gemm-$v.log 2>&1; echo "gemm $v rc=$?"
  grep "^|" $OUT/gemm-$v.log | cut -d'|' -f2,3 | tail -n +3 | tr '\n' ';'; echo
  timeout 40 $B/dual_gemm_$v --shapes bench --max-seconds 0.2 --results /tmp/r > $OUT/dual-$v.log 2>&1; echo "dual $v rc=$?"
  grep "^|" $OUT/dual-$v.log | head -8 | cut -d'|' -f2,3 | tail -n +3 | tr '\n' ';'; echo
done
