#!/usr/bin/env bash
# Timing only: the tiled grouped kernel without its wait on the preparation pass (contiguous GPU MODE cases).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b15.tgz -C /tmp/p && B=/tmp/p/b15
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
for r in 1 2; do for b in final nowait; do
  timeout 40 $B/grouped-$b --cases gpumode --fixed-sizes-contiguous --sets 10 --max-seconds 0.3 > $OUT/abc-$b-r$r.log 2>&1
  echo "== $b r$r rc=$? $(grep -E '^\| (gpumode)' $OUT/abc-$b-r$r.log | awk -F'|' '{printf "%s %s ", $2, $9}')"
done; done
