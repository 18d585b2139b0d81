#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c58.tgz -C /tmp && B=/tmp/c58
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
NVFP4_PROBE_REPLACE=132 timeout 200 $B/gpu_grouped3 --test-threads=1 > $OUT/test-replace3.log 2>&1; echo "gpu_grouped replace 3 slots rc=$? $(grep 'test result' $OUT/test-replace3.log)"
C=qwen3-30b-prefill,gpt-oss-120b-prefill
i=0
for v in main 2:off 2:b132 2:b132:2 2:b132:4 3:r132 3:b132 3:b132:2 3:b132:4 2:b132 main; do i=$((i+1))
  unset NVFP4_PROBE_BESIDE NVFP4_PROBE_REPLACE NVFP4_PROBE_ROWS_DIV
  IFS=: read -r s m d <<< "$v"
  if [ "$s" = main ]; then bin=$B/main-grouped; else bin=$B/grouped$s; fi
  case $m in r*) export NVFP4_PROBE_REPLACE=${m#r};; b*) export NVFP4_PROBE_BESIDE=${m#b};; esac
  [ -n "$d" ] && export NVFP4_PROBE_ROWS_DIV=$d
  timeout 100 $bin --cases $C --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/run-$i.log 2>&1; echo "run $i $v rc=$? $(grep '^| [gdq]' $OUT/run-$i.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
