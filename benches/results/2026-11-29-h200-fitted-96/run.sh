#!/bin/bash
# The narrowest fitted width 96 (w96) against main 171c7ec (64): correctness, then alternately.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c49.tgz -C /tmp && B=/tmp/c49
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
timeout 100 $B/gpu_grouped_w96 > $OUT/gpu_grouped_w96.log 2>&1; echo "gpu_grouped w96 rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_grouped_w96.log | tail -3
S=$SECONDS
for v in main w96 w96 main; do
  [ $((SECONDS - S)) -gt 150 ] && break
  timeout 60 $B/grouped_$v --cases gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$? t=$((SECONDS - S))"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
done
