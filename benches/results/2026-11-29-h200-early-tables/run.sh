#!/bin/bash
# Grouped kernels acquiring their tables by the preparation pass's epoch flag (branch
# exp/early-tables) against main: grouped GPU tests, GPU MODE's cases (separate convention,
# maps from the pass's parameters: A B B A twice; contiguous: A B B A), the prefill and decode
# rows (A B), then memcheck on GPU MODE's cases' test.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c25.tgz -C /tmp && B=/tmp/c25
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
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 60 $B/grouped_$v --cases gpumode --fixed-sizes-contiguous --sets 10 --max-seconds 0.3 --results /tmp/r > /tmp/gc-$r-$v.log 2>&1; echo "gpumode contiguous $r $v rc=$?"
done
r=0
for v in main new; do
  r=$((r + 1))
  timeout 100 $B/grouped_$v --cases prefill,decode --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/pf-$r-$v.log 2>&1; echo "prefill/decode $r $v rc=$?"
done
cat /tmp/test-*.log > $OUT/tests.log; cat /tmp/gm-*.log > $OUT/gpumode.log; cat /tmp/gc-*.log > $OUT/gpumode-contiguous.log
cat /tmp/pf-*.log > $OUT/prefill-decode.log
for f in /tmp/gm-*.log /tmp/gc-*.log /tmp/pf-*.log; do echo "== $f"; grep "^|" $f | cut -d'|' -f2,9 | tail -n +3; done
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $B/gpu_grouped_new \
  grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions --test-threads 1 \
  > $OUT/sanitize.txt 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize.txt | tail -1)"
