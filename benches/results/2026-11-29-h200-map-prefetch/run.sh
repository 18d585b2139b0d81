#!/bin/bash
# Grouped CTAs prefetching the separate convention's weight maps after the table copy (branch
# exp/map-prefetch) against main (with the map copy in the pass's last CTA): the grouped GPU
# tests, then GPU MODE's cases in their own convention, A B B A three times.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c28.tgz -C /tmp && B=/tmp/c28
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
r=0
for v in main new new main main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f $(grep '^| gpumode\|^| geomean' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
