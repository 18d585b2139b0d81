#!/usr/bin/env bash
# Grouped preparation pass, CTA 0 tables only, without the extra CTA at the resident limit: prefill and GPU MODE against main.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b31.tgz -C /tmp/p && B=/tmp/p/b31
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
for r in 1 2; do for b in main cta0; do
  c=prefill; [ $r = 2 ] && c=gpumode,qwen3-30b-decode
  timeout 100 $B/grouped-$b --cases $c --sets 10 --max-seconds 0.3 > $OUT/grouped-$b-r$r.md 2>&1
  echo "== grouped $b r$r rc=$? $(grep -E '^\| [a-zA-Z]' $OUT/grouped-$b-r$r.md | grep -v case | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done; done
