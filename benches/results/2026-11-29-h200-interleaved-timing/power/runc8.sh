#!/bin/bash
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/w
date; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 200 python3 .gpu-bundle/power.py > $OUT/power.log 2>&1; echo "rc=$?"
cat $OUT/power.log | tail -20
