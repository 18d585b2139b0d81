#!/bin/bash
cd "$(dirname "$0")/.." || exit 1
mkdir -p /tmp/w && tar -xJf .gpu-pack/p8.tar.xz -C /tmp/w
R=/tmp/w/r
$R/gpu --test-threads 1 moe_combine > $OUT/test-gpu-combine.txt 2>&1; echo "gpu combine rc $?"; grep -E "test result" $OUT/test-gpu-combine.txt
pip install --no-index --no-deps --target /tmp/site-new $R/new/*.whl > /dev/null 2>&1
pip install --no-index --no-deps --target /tmp/site-base $R/base/*.whl > /dev/null 2>&1
cp $R/base/py/*.py /tmp/site-base/nvfp4/
(cd bindings/python && PYTHONPATH=/tmp/site-new python3 -m pytest -q tests/test_nn.py tests/test_gpu.py 2>&1 | tail -2) | tee $OUT/pytest.txt
for r in 1 2; do for b in base new; do
  echo "## $b round $r" | tee -a $OUT/moe-layer-ab.txt
  PYTHONPATH=/tmp/site-$b python3 bindings/python/benchmarks/moe_layer.py --tokens 64,4096 2>&1 | grep "^| [qgd]" | tee -a $OUT/moe-layer-ab.txt
done; done
