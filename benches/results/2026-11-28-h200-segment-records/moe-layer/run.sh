#!/usr/bin/env bash
# MoE layer (moe_layer.py, 64 and 4096 tokens) with wheels of main (eebfc68 kernels) and the segment-record build, alternating, 2 rounds; a third grouped A/B round.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b18.tgz -C /tmp/p && B=/tmp/p/b18
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
for b in main rec; do python3 -m pip install -q --no-deps --target /tmp/w-$b $B/wheels/$b/*.whl > /dev/null 2>&1; echo "pip $b rc=$?"; done
for r in 1 2; do for b in main rec; do
  PYTHONPATH=/tmp/w-$b timeout 200 python3 bindings/python/benchmarks/moe_layer.py --tokens 64,4096 > $OUT/moe-layer-$b-r$r.log 2>&1; echo "moe_layer $b r$r rc=$?"
  grep -E "^\|" $OUT/moe-layer-$b-r$r.log | tail -7
done; done
for b in main rec; do
  timeout 150 $B/grouped-$b --sets 10 --max-seconds 0.4 > $OUT/ab-$b-r3.log 2>&1
  echo "== $b r3 rc=$? $(grep -E '^\| (gpumode|deep|qwen|gpt)' $OUT/ab-$b-r3.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done
