#!/bin/bash
# Second round: the widths as constants and the plan's two-tile rule (new, 9e1c287) against main
# a7df45d: the grouped GPU tests, the grouped rows alternately, the MoE layer at 4096 tokens
# from a wheel of each.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c46.tgz -C /tmp && B=/tmp/c46
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new > $OUT/gpu_grouped_new.log 2>&1; echo "gpu_grouped new rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_grouped_new.log | tail -3
S=$SECONDS
for v in main new new main; do
  timeout 90 $B/grouped_$v --cases gpumode,deepseek-v3-prefill,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$? t=$((SECONDS - S))"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
done
for v in new main; do
  [ $((SECONDS - S)) -gt 330 ] && break
  rm -rf /tmp/w && python3 -m pip install -q --no-deps --target /tmp/w $B/wheel-$v/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
  PYTHONPATH=/tmp/w timeout 120 python3 bindings/python/benchmarks/moe_layer.py --tokens 4096 > $OUT/moe-layer-$v.log 2>&1; echo "moe $v rc=$? t=$((SECONDS - S))"
  grep "^| [dqg]" $OUT/moe-layer-$v.log
done
