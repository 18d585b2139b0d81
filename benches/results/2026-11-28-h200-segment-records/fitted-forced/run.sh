#!/usr/bin/env bash
# Fitted tiles forced (--tokens-per-group 150) vs the plan's 128-token tiles: Qwen3 prefill, gpumode-3/-4; then a full grouped baseline (H200).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b16.tgz -C /tmp/p && B=/tmp/p/b16
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
for r in 1 2 3; do for v in t128 fitted; do
  extra=""; [ $v = fitted ] && extra="--tokens-per-group 150"
  timeout 90 $B/grouped-main --cases qwen3-30b-prefill,gpumode-3,gpumode-4 --sets 10 --max-seconds 0.4 $extra > $OUT/ab-$v-r$r.log 2>&1
  echo "== $v r$r rc=$? $(grep -E '^\| (gpumode|qwen)' $OUT/ab-$v-r$r.log | awk -F'|' '{printf "%s %s %s| ", $2, $7, $9}')"
done; done
env -u NVFP4_TORCH_GROUPED_BASELINE timeout 240 $B/grouped-main --sets 10 --max-seconds 0.4 > $OUT/grouped-all-main.log 2>&1; echo "all rc=$?"
grep -E '^\| ' $OUT/grouped-all-main.log | awk -F'|' '{print $2,$7,$8,$9,$10,$11,$12,$13}'
