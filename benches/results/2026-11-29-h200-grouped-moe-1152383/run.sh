#!/bin/bash
# benches/grouped (every case, in phases, with the torch baseline) and the MoE layer
# (moe_layer.py, each layer in phases of its own sustained load) at main 1152383.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c31.tgz -C /tmp && B=/tmp/c31
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm --format=csv,noheader
timeout 290 $B/grouped --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -d'|' -f2,8-16
python3 -m pip install -q --no-deps --upgrade --target /tmp/w $B/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w
timeout 220 python3 bindings/python/benchmarks/moe_layer.py --models qwen3-30b,gpt-oss-120b,deepseek-v3 > $OUT/moe-layer-phased.log 2>&1; echo "moe rc=$?"
tail -12 $OUT/moe-layer-phased.log
