#!/bin/bash
# The grouped preparation pass as a programmatic launch (branch exp/programmatic-prepare)
# against main: the grouped GPU tests, GPU MODE's cases (A B B A twice), the prefill and
# decode rows (A B B A).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c26.tgz -C /tmp && B=/tmp/c26
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
r=0
for v in main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$r-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 100 $B/grouped_$v --cases prefill,decode --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/pf-$r-$v.log 2>&1; echo "prefill/decode $r $v rc=$?"
done
cat /tmp/gm-*.log > $OUT/gpumode.log; cat /tmp/pf-*.log > $OUT/prefill-decode.log
for f in /tmp/gm-*.log /tmp/pf-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
