#!/bin/bash
# moe_layer.py with each layer in phases of its own sustained load.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --upgrade --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w
timeout 170 python3 bindings/python/benchmarks/moe_layer.py --models qwen3-30b,gpt-oss-120b,deepseek-v3 > $OUT/moe-layer-phased.log 2>&1; echo "rc=$?"
cat $OUT/moe-layer-phased.log | tail -12
