#!/bin/bash
# Grouped decode: the next window's first weights loaded by the stream before it. A/B against
# main (16bd354), alternately, three rounds; then the grouped GPU tests.
cd "$(dirname "$0")/.."
mkdir -p /tmp/c19 && tar xzf .gpu-bundle/c19.tgz -C /tmp/c19
B=/tmp/c19/c19
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for r in 1 2; do
  for v in main new; do
    timeout 100 $B/grouped_$v --bench --cases decode --sets 10 --max-seconds 0.3 --results /tmp/r-$v-$r > /tmp/g-$v-$r.log 2>&1; echo "$v $r rc=$?"
    grep -E "^\| [a-z]" /tmp/g-$v-$r.log | grep -v "^| case" | awk -F'|' -v t=$v -v r=$r '{print t, r, $2, $9, $11, $15}'
  done
done
cat /tmp/g-*.log > $OUT/grouped-decode-ab.log
timeout 100 $B/gpu_grouped --test-threads 1 > $OUT/gpu_grouped.log 2>&1; echo "gpu_grouped rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_grouped.log | head -5
