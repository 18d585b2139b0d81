#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c61.tgz -C /tmp && B=/tmp/c61
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 120 $B/mlp --tokens 1,16 --hidden 7168 --max-seconds 0.5 --results /tmp/r > $OUT/mlp.log 2>&1; echo "mlp rc=$?"
timeout 120 $B/dual_gemm --shapes 1x18432x7168,16x18432x7168 --sets 20 --max-seconds 0.5 --results /tmp/r > $OUT/dual.log 2>&1; echo "dual rc=$?"
timeout 120 $B/gemm --shapes 1x7168x18432,16x7168x18432 --sets 20 --max-seconds 0.5 --results /tmp/r > $OUT/gemm.log 2>&1; echo "gemm rc=$?"
timeout 120 $B/quantize --max-seconds 0.5 --results /tmp/r > $OUT/quantize.log 2>&1; echo "quantize rc=$?"
grep "^|" $OUT/mlp.log | head -8
grep "^|" $OUT/dual.log | cut -d'|' -f2-9 | head -5
grep "^|" $OUT/gemm.log | cut -d'|' -f2-7 | head -5
grep "^|" $OUT/quantize.log | head -12
