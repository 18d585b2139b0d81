#!/bin/bash
# The grouped tiled kernels reading a separate-convention launch's weight maps from their own
# parameters (at most 8 groups; branch exp/parameter-maps) instead of the preparation pass's
# copies in global memory, against main: the grouped GPU tests, GPU MODE A B B A twice, then
# main in the contiguous convention twice for reference.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c33.tgz -C /tmp && B=/tmp/c33
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
r=0
for v in main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
for v in main new; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --fixed-sizes-contiguous --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v-contiguous.log 2>&1; echo "gpumode $r $v contiguous rc=$?"
done
cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f $(grep '^| gpumode\|^| geomean' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
