#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c57.tgz -C /tmp && B=/tmp/c57
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
NVFP4_PROBE_REPLACE=132 timeout 240 $B/gpu_grouped --test-threads=1 > $OUT/test-replace.log 2>&1; echo "gpu_grouped replace rc=$? $(grep 'test result' $OUT/test-replace.log)"
C=qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill
i=0
for v in main off r132 r264 b132 b132 r264 r132 off main; do i=$((i+1))
  unset NVFP4_PROBE_BESIDE NVFP4_PROBE_REPLACE; bin=$B/grouped
  case $v in main) bin=$B/main-grouped;; r*) export NVFP4_PROBE_REPLACE=${v#r};; b*) export NVFP4_PROBE_BESIDE=${v#b};; esac
  timeout 100 $bin --cases $C --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/run-$i-$v.log 2>&1; echo "run $i $v rc=$? $(grep '^| [gdq]' $OUT/run-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
