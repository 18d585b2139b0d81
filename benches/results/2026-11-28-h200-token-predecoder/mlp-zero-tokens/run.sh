#!/usr/bin/env bash
# The SwiGLU MLP layer sweep with the dense token pre-decoding pass and without it (timing only), one wheel.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b29.tgz -C /tmp/p && B=/tmp/p/b29
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
python3 -m pip install -q --no-deps --target /tmp/w $B/wheels/skip/*.whl > /dev/null 2>&1; echo "pip rc=$?"
for v in with without; do
  e=; [ $v = without ] && e=NVFP4_SKIP_PREDECODE=1
  env $e PYTHONPATH=/tmp/w timeout 280 python3 bindings/python/examples/mlp.py --sweep > $OUT/mlp-sweep-$v.txt 2>&1
  echo "== mlp $v rc=$?"; grep -E "^\|" $OUT/mlp-sweep-$v.txt | head -30
done
