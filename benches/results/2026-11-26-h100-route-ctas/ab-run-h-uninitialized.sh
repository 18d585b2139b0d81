#!/bin/bash
cd "$(dirname "$0")/.." || exit 1
mkdir -p /tmp/w && tar -xJf .gpu-pack/p7.tar.xz -C /tmp/w
pip install --no-index --no-deps --target /tmp/site-a /tmp/w/r/*.whl > /dev/null 2>&1
pip install --no-index --no-deps --target /tmp/site-b /tmp/w/r/*.whl > /dev/null 2>&1
cp bindings/python/python/nvfp4/*.py /tmp/site-b/nvfp4/
(cd bindings/python && PYTHONPATH=/tmp/site-b python3 -m pytest -q tests/test_nn.py tests/test_gpu.py -k "route or opcheck or experts or grouped" 2>&1 | tail -2) | tee $OUT/pytest.txt
for r in 1 2; do for b in a b; do
  echo "## $b round $r" | tee -a $OUT/moe-layer-ab.txt
  PYTHONPATH=/tmp/site-$b python3 bindings/python/benchmarks/moe_layer.py --tokens 64,4096 --models qwen3-30b,gpt-oss-120b 2>&1 | grep "^| [qg]" | tee -a $OUT/moe-layer-ab.txt
done; done
