#!/bin/bash
# Descriptors into L1 beside the table copy (branch exp/desc-prefetch) against main (the
# serpentine waves' build): two grouped GPU tests, then the GPU MODE cases alternately.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c24.tgz -C /tmp && B=/tmp/c24
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for t in grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions \
    every_token_tile_matches_the_reference_on_groups_around_its_size; do
  timeout 90 $B/gpu_grouped_new $t --test-threads 1 >> $OUT/tests.log 2>&1; echo "$t rc=$?"
done
grep 'test result' $OUT/tests.log
for r in 1 2 3; do for v in main new; do
  timeout 60 $B/grouped_$v --cases gpumode --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/grouped-$r-$v.log 2>&1
  echo "$r $v $(grep '^| gpumode' /tmp/grouped-$r-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done; done
cat /tmp/grouped-*.log > $OUT/grouped.log
