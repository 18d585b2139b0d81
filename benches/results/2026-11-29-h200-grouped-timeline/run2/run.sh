#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c15.tgz -C /tmp && B=/tmp/c15
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/trace
NVFP4_TRACE_OUT=$OUT/trace timeout 200 $B/grouped_trace --cases all --sets 4 --max-seconds 0.2 --results /tmp/r1 > $OUT/grouped-trace.log 2>&1; echo "trace rc=$?"
grep -E "host|tile" $OUT/grouped-trace.log
grep "^|" $OUT/grouped-trace.log | cut -d'|' -f2,9,11,12
