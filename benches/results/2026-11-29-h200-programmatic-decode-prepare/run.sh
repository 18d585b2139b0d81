#!/bin/bash
# The grouped preparation pass as a programmatic launch before the decode-size kernel only
# (branch exp/programmatic-decode-prepare) against main: the grouped GPU tests, then the
# routed-decode rows, A B B A twice.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c29.tgz -C /tmp && B=/tmp/c29
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
r=0
for v in main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases decode --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/dc-$r-$v.log 2>&1; echo "decode $r $v rc=$?"
done
cat /tmp/dc-*.log > $OUT/decode.log
for f in /tmp/dc-*.log; do echo "== $f $(grep '^| .*decode' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
