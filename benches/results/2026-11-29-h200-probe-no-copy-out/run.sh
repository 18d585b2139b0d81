#!/bin/bash
# Timing probe (exp/probe-no-copy-out): the fp16 epilogue's copy-out left out, against main, A B B A.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c70.tgz -C /tmp && B=/tmp/c70
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; [ $v = main ] && g=$B/main-grouped
  timeout 100 $g --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$? $(grep '^| [gdq]' $OUT/grouped-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
