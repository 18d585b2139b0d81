#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c14.tgz -C /tmp && B=/tmp/c14
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/trace
NVFP4_TRACE_OUT=$OUT/trace timeout 150 $B/grouped_trace --cases gpumode,qwen3-30b-decode,qwen3-30b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r1 > $OUT/grouped-trace.log 2>&1; echo "trace rc=$?"
timeout 150 $B/grouped_main --cases gpumode,qwen3-30b-decode,qwen3-30b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r2 > $OUT/grouped-main.log 2>&1; echo "main rc=$?"
ls -la $OUT/trace
grep "^|" $OUT/grouped-trace.log | cut -d'|' -f2,9,11,12 ; grep "^|" $OUT/grouped-main.log | cut -d'|' -f2,9,11,12
