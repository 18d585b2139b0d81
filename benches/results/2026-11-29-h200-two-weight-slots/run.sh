#!/bin/bash
# Probe (branch exp/two-weight-slots): the grouped kernels' weight ring with two slots instead
# of three, against main: gpu_grouped, then benches/grouped in the order main, new, new, main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c41.tgz -C /tmp && B=/tmp/c41
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/logs
timeout 100 $B/gpu_grouped_new --test-threads 1 > $OUT/logs/test-gpu_grouped.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/logs/test-gpu_grouped.log | tail -1)"
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode-1,gpumode-3,gpumode-4,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/logs/$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
  grep -E '^\| (gpumode|deepseek|qwen3|gpt-oss)' $OUT/logs/$r-$v.log | cut -d"|" -f2,9 | tr -s ' ' | tr '\n' ';'; echo
done
