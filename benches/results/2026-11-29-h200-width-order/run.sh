#!/bin/bash
# Short fitted launches in width order with every full wave (branch exp/width-order) against
# main: grouped GPU tests, then GPU MODE's grouped cases, main and the branch alternately
# (A B B A, twice).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c24.tgz -C /tmp && B=/tmp/c24
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for t in gpu_grouped gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > /tmp/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' /tmp/test-$t.log | tail -1)"
done
grep -E "FAIL|panicked" /tmp/test-*.log | head -5
r=0
for v in main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$r-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
cat /tmp/test-*.log > $OUT/tests.log; cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
