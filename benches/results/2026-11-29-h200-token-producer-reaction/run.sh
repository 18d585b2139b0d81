#!/bin/bash
# The token producer's reaction (branch exp/token-producer-reaction): v1 = its wait for a
# released slot without the suspend-time hint, v2 = v1 with an L2 prefetch of the segment's slice
# a ring ahead; benches/grouped (GPU MODE, Qwen3-30B-A3B and gpt-oss-120b prefill) in the order
# main, v1, v2, v2, v1, main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c39.tgz -C /tmp && B=/tmp/c39
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/grouped
r=0
for v in main v1 v2 v2 v1 main; do
  r=$((r + 1))
  timeout 90 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/grouped/$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
  grep -E '^\| (gpumode|deepseek|qwen3|gpt-oss|geomean)' $OUT/grouped/$r-$v.log | cut -d"|" -f2,9 | tr -s ' ' | tr '\n' ';'; echo
done
