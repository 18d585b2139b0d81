#!/bin/bash
# Fourth round (same bundle): the MoE layer (moe_layer.py, 64 and 4096 tokens) from the wheels
# of main and of the new build, new main new main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c46.tgz -C /tmp && B=/tmp/c46
S=$SECONDS
for v in new main new main; do
  [ $((SECONDS - S)) -gt 420 ] && break
  rm -rf /tmp/w && python3 -m pip install -q --no-deps --target /tmp/w $B/wheel-$v/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
  PYTHONPATH=/tmp/w timeout 170 python3 bindings/python/benchmarks/moe_layer.py > $OUT/moe-layer-$v-$((SECONDS - S)).log 2>&1; echo "moe $v rc=$? t=$((SECONDS - S))"
  grep -h "^| [dqg]" $OUT/moe-layer-$v-*.log | tail -6
done
