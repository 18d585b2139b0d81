#!/bin/bash
# The narrowest fitted width 112 instead of 64 (exp/fitted-112) against main (2bf833c), A B B A.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c69.tgz -C /tmp && B=/tmp/c69
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 60 $B/gpu_grouped --test-threads=2 > $OUT/test-gpu_grouped.log 2>&1; echo "gpu_grouped rc=$? $(grep 'test result' $OUT/test-gpu_grouped.log)"
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; [ $v = main ] && g=$B/main-grouped
  timeout 100 $g --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$? $(grep '^| [gdq]' $OUT/grouped-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
