#!/bin/bash
# The separate-convention preparation pass with its map copy in the last CTA instead of CTA 0
# (branch exp/map-copy-cta) against main: the grouped GPU tests, memcheck on GPU MODE's cases'
# test, then GPU MODE's cases (their own convention), A B B A three times.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c27.tgz -C /tmp && B=/tmp/c27
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 150 $B/gpu_grouped_new --test-threads 1 > $OUT/tests.log 2>&1; echo "gpu_grouped rc=$? $(grep -E 'test result' $OUT/tests.log | tail -1)"
r=0
for v in main new new main main new new main main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gm-$r-$v.log 2>&1; echo "gpumode $r $v rc=$?"
done
cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ' '; echo; done
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $B/gpu_grouped_new \
  grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions --test-threads 1 \
  > $OUT/sanitize.txt 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize.txt | tail -1)"
