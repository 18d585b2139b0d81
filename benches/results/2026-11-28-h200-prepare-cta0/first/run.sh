#!/usr/bin/env bash
# Grouped preparation pass: CTA 0 writes the tables only, the other CTAs decode the tokens; against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b31.tgz -C /tmp/p && B=/tmp/p/b31
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
timeout 120 $B/test-gpu_grouped > $OUT/test-gpu_grouped.txt 2>&1
echo "== test gpu_grouped rc=$? $(grep -E 'test result' $OUT/test-gpu_grouped.txt)"
for r in 1 2; do for b in main cta0; do
  c=gpumode; [ $r = 1 ] && c=gpumode,decode,prefill
  timeout 150 $B/grouped-$b --cases $c --sets 10 --max-seconds 0.3 > $OUT/grouped-$b-r$r.md 2>&1
  echo "== grouped $b r$r rc=$? $(grep -E '^\| [a-zA-Z]' $OUT/grouped-$b-r$r.md | grep -v case | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done; done
