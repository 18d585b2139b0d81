#!/bin/bash
# The phased bar set on the copy-out warps' build: benches/grouped (every case, in phases, with
# the torch._grouped_mm baseline) and the MoE layer (moe_layer.py, each layer in phases).
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c73 && [ -d /tmp/c73/new ] || tar xzf .gpu-bundle/c73.tgz -C /tmp/c73; B=/tmp/c73
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 320 $B/new/grouped --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -d'|' -f2,9,12-17
python3 -m pip install -q --no-deps --upgrade --target /tmp/w $B/new/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w
timeout 240 python3 bindings/python/benchmarks/moe_layer.py --models qwen3-30b,gpt-oss-120b,deepseek-v3 > $OUT/moe-layer-phased.log 2>&1; echo "moe rc=$?"
tail -12 $OUT/moe-layer-phased.log
