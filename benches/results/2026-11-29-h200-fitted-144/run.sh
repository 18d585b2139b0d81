#!/bin/bash
# The 144-token fitted width (a), with Qwen3's plan on the fitted tiles up to 288 tokens a
# group (b), against main: correctness of (a), then the grouped rows alternately.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c45.tgz -C /tmp && B=/tmp/c45
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_a > $OUT/gpu_grouped_a.log 2>&1; echo "gpu_grouped a rc=$?"; grep -E "test result|passed|FAILED|panicked" $OUT/gpu_grouped_a.log | tail -3
S=$SECONDS
for v in main a b b a main; do
  [ $((SECONDS - S)) -gt 400 ] && break
  timeout 90 $B/grouped_$v --cases gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$? t=$((SECONDS - S))"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
done
