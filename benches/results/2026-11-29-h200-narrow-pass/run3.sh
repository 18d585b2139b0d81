#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c59.tgz -C /tmp && B=/tmp/c59
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
C=qwen3-30b-prefill,gpt-oss-120b-prefill
i=0
for v in main grouped2:off grouped2:b132 grouped-v1:b132 grouped-v2:b132 grouped-v2:b132 grouped-v1:b132 grouped2:b132 grouped2:off main; do i=$((i+1))
  unset NVFP4_PROBE_BESIDE
  IFS=: read -r s m <<< "$v"
  if [ "$s" = main ]; then bin=$B/main-grouped; else bin=$B/$s; fi
  case $m in b*) export NVFP4_PROBE_BESIDE=${m#b};; esac
  timeout 100 $bin --cases $C --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/run-$i.log 2>&1; echo "run $i $v rc=$? $(grep '^| [gdq]' $OUT/run-$i.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
