#!/bin/bash
cd "$(dirname "$0")/.."
pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl > /dev/null 2>&1 || exit 3
export PYTHONPATH=/tmp/w
for r in 2 3; do
  timeout 80 python3 .gpu-bundle/mlp_rows.py > $OUT/mlp-rows-$r.log 2>&1; echo "rows r$r rc=$?"
  grep "^| [A-Z]" $OUT/mlp-rows-$r.log
done
