#!/bin/bash
# The widest fitted width 176 (g176) against 192 (g144: main 8821241) and the build before the
# 144-token width (main: a7df45d): correctness of g176, then the grouped rows alternately.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c47.tgz -C /tmp && B=/tmp/c47
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_g176 > $OUT/gpu_grouped_g176.log 2>&1; echo "gpu_grouped g176 rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_grouped_g176.log | tail -3
S=$SECONDS
for v in main g144 g176 g176 g144 main g176 g144; do
  [ $((SECONDS - S)) -gt 380 ] && break
  timeout 90 $B/grouped_$v --cases gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$? t=$((SECONDS - S))"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
done
