#!/bin/bash
# The wheel (new hand-on limits, interleaved timing in mlp.py) through the layer bench's rows.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  timeout 280 python3 .gpu-bundle/mlp_rows.py > $OUT/mlp-rows-$r.log 2>&1; echo "rows $r rc=$?"
done
paste -d'#' $OUT/mlp-rows-1.log $OUT/mlp-rows-2.log | awk -F'#' '{print $1; print "      " $2}' | cut -c1-160
