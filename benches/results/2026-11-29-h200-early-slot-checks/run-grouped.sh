#!/bin/bash
# The grouped rows of run.sh again (its grouped logs did not come back from the device), with
# each log's table printed: benches/grouped for main and the branch in the order A B B A.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c37.tgz -C /tmp && B=/tmp/c37
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/grouped
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 90 $B/grouped_$v --cases gpumode,prefill --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/grouped/$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
  grep -E '^\| (gpumode|deepseek|qwen3|gpt-oss|geomean)' $OUT/grouped/$r-$v.log | cut -d"|" -f2,9 | tr -s ' ' | tr '\n' ';'; echo
done
