#!/bin/bash
# The phased bar set on main (the copy-out warps, bulk copies for the small tiles): benches/grouped
# every case in phases with the torch._grouped_mm baseline, and the MoE layer in phases.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c77 && [ -d /tmp/c77/small ] || tar xzf .gpu-bundle/c77.tgz -C /tmp/c77; B=/tmp/c77
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 320 $B/small/grouped --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -d'|' -f2,9,12-17
python3 -m pip install -q --no-deps --upgrade --target /tmp/w $B/small/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w
timeout 240 python3 bindings/python/benchmarks/moe_layer.py --models qwen3-30b,gpt-oss-120b,deepseek-v3 > $OUT/moe-layer-phased.log 2>&1; echo "moe rc=$?"
tail -12 $OUT/moe-layer-phased.log
