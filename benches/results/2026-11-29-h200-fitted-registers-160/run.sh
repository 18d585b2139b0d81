#!/bin/bash
# The fitted grouped entries at 160 registers (branch exp/fitted-registers-160) against main:
# gpu_grouped on the new build, then benches/grouped main new new main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c53.tgz -C /tmp && B=/tmp/c53
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
NVFP4_REQUIRE_GPU=1 timeout 150 $B/gpu_grouped --test-threads=1 > $OUT/test-gpu_grouped.log 2>&1; echo "gpu_grouped rc=$? $(grep 'test result' $OUT/test-gpu_grouped.log | tail -1)"
grep -h "FAILED\|panicked" $OUT/test-*.log | head
C=gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill
i=0
for v in main new new main; do i=$((i+1))
  timeout 100 $B/grouped_$v --cases $C --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$?"
done
for f in $OUT/grouped-*.log; do echo "== $(basename $f)"; grep "^| [gdq]" $f | cut -d'|' -f2,9 | head -8; done
