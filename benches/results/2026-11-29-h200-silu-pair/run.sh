#!/bin/bash
# The paired SiLU (branch exp/silu-pair) against main: grouped rows and dense dual GEMM, main new new main; then GPU tests.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c50.tgz -C /tmp && B=/tmp/c50
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
C=gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill
i=0
for v in main new new main; do i=$((i+1))
  timeout 100 $B/grouped_$v --cases $C --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$?"
done
i=0
for v in main new new main; do i=$((i+1))
  timeout 80 $B/dual_${v/new/gemm_new} --shapes bench --max-seconds 0.3 --results /tmp/r > $OUT/dual-$i-$v.log 2>&1; echo "dual $i $v rc=$?"
done
export NVFP4_REQUIRE_GPU=1
for t in gpu_dual_gemm gpu_grouped gpu; do
  timeout 240 $B/$t --test-threads=1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log | tail -1)"
done
grep -h "FAILED\|panicked" $OUT/test-*.log | head
for f in $OUT/grouped-*.log; do echo "== $(basename $f)"; grep "^| [gdq]" $f | cut -d'|' -f2,9 | head -8; done
for f in $OUT/dual-*.log; do echo "== $(basename $f)"; grep "^| [0-9]" $f | cut -d'|' -f2,3 | head -12; done
