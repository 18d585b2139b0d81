#!/bin/bash
# Grouped tiled kernels whose decoded token slices are gathered row by row by cp.async (the
# producer warpgroup's last two warps; branch exp/token-gather) against main's one TMA box a
# slice: the grouped GPU tests, GPU MODE's cases A B B A twice, the prefills A B B A.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c29.tgz -C /tmp && B=/tmp/c29
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
grep -E "FAILED|panicked" $OUT/tests.log | head -5
r=0
for v in main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f $(grep '^| gpumode\|^| geomean' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 120 $B/grouped_$v --cases prefill --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/pf-$(printf %02d $r)-$v.log 2>&1; echo "prefill $r $v rc=$?"
done
cat /tmp/pf-*.log > $OUT/prefill.log
for f in /tmp/pf-*.log; do echo "== $f $(grep '^| [dqg].*prefill' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
