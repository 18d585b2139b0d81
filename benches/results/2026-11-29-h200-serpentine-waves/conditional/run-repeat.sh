#!/bin/bash
# The rows that moved by 1-2.5 % in run.sh's round, six alternating runs each: the dual GEMM's
# 256×4096×7168 and gpumode-3/-4 (main, new, main, new, ...).
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c23.tgz -C /tmp && B=/tmp/c23
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
for r in 1 2 3; do for v in main new; do
  timeout 60 $B/dual_gemm_$v --shapes 256x4096x7168 --max-seconds 0.2 --results /tmp/r > /tmp/dual-$r-$v.log 2>&1
  timeout 60 $B/grouped_$v --cases gpumode-3,gpumode-4 --sets 4 --max-seconds 0.3 --results /tmp/r > /tmp/grouped-$r-$v.log 2>&1
  echo "$r $v dual $(grep '^| 256' /tmp/dual-$r-$v.log | head -1 | cut -d'|' -f3,5) grouped $(grep '^| gpumode' /tmp/grouped-$r-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done; done
cat /tmp/dual-*.log > $OUT/dual.log; cat /tmp/grouped-*.log > $OUT/grouped.log
