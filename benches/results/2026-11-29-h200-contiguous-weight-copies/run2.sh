#!/bin/bash
# GPU MODE's cases: the separate convention (main's bench) against the contiguous convention
# with a weight copy per set, its tokens' scales 1.0 / 2.0 (this bench) or drawn as the separate
# convention's are, e4m3(rand()) (branch exp/contiguous-task-scales), in turn twice.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c35.tgz -C /tmp && B=/tmp/c35
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
r=0
for round in 1 2; do
  for v in main new task; do
    r=$((r + 1))
    flags="--fixed-sizes-contiguous"; [ $v = main ] && flags=""
    timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 $flags --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v.log 2>&1; echo "gpumode $r $v rc=$?"
  done
done
cat /tmp/gm-*.log > $OUT/gpumode2.log
for f in /tmp/gm-*.log; do echo "== $f $(grep '^| gpumode\|^| geomean' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
