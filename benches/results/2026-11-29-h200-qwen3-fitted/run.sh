#!/bin/bash
# Qwen3-30B-A3B prefill (about 256 tokens a group): the plan's 128-token tiles against the
# fitted tiles (--tokens-per-group 192 / 160), alternately, two rounds.
cd "$(dirname "$0")/.."
mkdir -p /tmp/c16 && tar xzf .gpu-bundle/c16.tgz -C /tmp/c16
B=/tmp/c16/c16
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for r in 1 2; do
  for t in default 192 160; do
    if [ $t = default ]; then A=""; else A="--tokens-per-group $t"; fi
    timeout 120 $B/grouped --bench --cases qwen3-30b-prefill,gpumode-3 --sets 10 --max-seconds 0.3 $A --results /tmp/r-$t-$r > /tmp/g-$t-$r.log 2>&1; echo "$t $r rc=$?"
    grep -E "^\| (qwen3|gpumode)" /tmp/g-$t-$r.log | awk -F'|' -v t=$t -v r=$r '{print t, r, $2, $8, $9, $15}'
  done
done
cat /tmp/g-*.log > $OUT/qwen3-fitted.log
