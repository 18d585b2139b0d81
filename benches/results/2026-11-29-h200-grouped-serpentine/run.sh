#!/bin/bash
# benches/grouped's GPU MODE cases at the serpentine waves' build (the code merged to main),
# each backend in phases, 10 input sets, the torch._grouped_mm baseline included.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c23.tgz -C /tmp && B=/tmp/c23
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 300 $B/grouped_new --cases gpumode --sets 10 --results $OUT > $OUT/grouped.log 2>&1; echo "rc=$?"
grep "^|" $OUT/grouped.log | head -12
