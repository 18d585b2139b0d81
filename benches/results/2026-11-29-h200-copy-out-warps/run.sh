#!/bin/bash
# Copy-out warps (exp/copy-out-warps) against main (2bf833c): gpu_grouped, then A B B A.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c71.tgz -C /tmp && B=/tmp/c71
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 90 $B/gpu_grouped --test-threads=2 > $OUT/test-gpu_grouped.log 2>&1; echo "gpu_grouped rc=$? $(grep 'test result' $OUT/test-gpu_grouped.log)"; grep -E "FAILED|panicked" $OUT/test-gpu_grouped.log | head -5
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; [ $v = main ] && g=$B/main-grouped
  timeout 75 $g --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill --sets 3 --max-seconds 0.25 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$? $(grep '^| [gdq]' $OUT/grouped-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
