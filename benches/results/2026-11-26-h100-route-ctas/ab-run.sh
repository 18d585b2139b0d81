#!/bin/bash
cd "$(dirname "$0")/.." || exit 1
mkdir -p /tmp/w && tar -xJf .gpu-pack/p5.tar.xz -C /tmp/w
R=/tmp/w/r
pip install --no-index --no-deps --target /tmp/site-new $R/new/*.whl > /dev/null 2>&1
pip install --no-index --no-deps --target /tmp/site-base $R/base/*.whl > /dev/null 2>&1
(cd bindings/python && PYTHONPATH=/tmp/site-new python3 -m pytest -q tests/test_gpu.py -k "route or opcheck" 2>&1 | tail -2) | tee $OUT/pytest-route.txt
for r in 1 2; do for b in base new; do
  echo "## $b round $r" | tee -a $OUT/moe-layer-ab.txt
  PYTHONPATH=/tmp/site-$b python3 bindings/python/benchmarks/moe_layer.py --tokens 64,4096 2>&1 | grep "^|" | tee -a $OUT/moe-layer-ab.txt
done; done
