#!/bin/bash
# main 171c7ec (the widest fitted width 176): the grouped GPU tests, every grouped case in
# phases with its peers and floors, and the MoE layer from wheels of 171c7ec (new), a7df45d
# (before the 144-token width, old) and 8821241 (144 and 192, prev), in turn.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c48.tgz -C /tmp && B=/tmp/c48
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 150 $B/gpu_grouped_new > $OUT/gpu_grouped_new.log 2>&1; echo "gpu_grouped new rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_grouped_new.log | tail -3
timeout 300 $B/grouped_new --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased-new.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased-new.log | cut -d'|' -f2,8-16
S=$SECONDS
for v in new old prev new old prev; do
  [ $((SECONDS - S)) -gt 200 ] && break
  rm -rf /tmp/w && python3 -m pip install -q --no-deps --target /tmp/w $B/wheel-$v/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
  PYTHONPATH=/tmp/w timeout 120 python3 bindings/python/benchmarks/moe_layer.py > $OUT/moe-layer-$v-$((SECONDS - S)).log 2>&1; echo "moe $v rc=$? t=$((SECONDS - S))"
  grep -h "^| [dqg]" $OUT/moe-layer-$v-*.log | tail -6 | tr '\n' ';'; echo
done
