#!/bin/bash
# compute-sanitizer memcheck on the grouped GPU test of GPU MODE's four cases (gpumode-2 runs
# its four waves in serpentine order), both conventions, the merged form's build.
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c23.tgz -C /tmp && B=/tmp/c23
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
timeout 400 compute-sanitizer --tool memcheck --print-limit 20 $B/gpu_grouped_new \
  grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions --test-threads 1 \
  > $OUT/sanitize.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|test result|passed|FAILED" $OUT/sanitize.txt | tail -5
