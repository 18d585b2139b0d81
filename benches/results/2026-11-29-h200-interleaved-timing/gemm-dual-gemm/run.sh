#!/bin/bash
# benches/gemm and benches/dual_gemm with ours and the peers timed in turn under sustained load.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c6.tgz -C /tmp && B=/tmp/c6
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export NVFP4_TORCH_BASELINE=0
timeout 270 $B/gemm --max-seconds 0.3 --results $OUT/r1 > $OUT/gemm.log 2>&1; echo "gemm rc=$?"
timeout 270 $B/dual_gemm --shapes bench,decode --max-seconds 0.3 --results $OUT/r2 > $OUT/dual_gemm.log 2>&1; echo "dual rc=$?"
cp $OUT/r1/*.json $OUT/gemm.json 2>/dev/null; cp $OUT/r2/*.json $OUT/dual_gemm.json 2>/dev/null; rm -rf $OUT/r1 $OUT/r2
grep "^|\|ceilings" $OUT/gemm.log | cut -c1-220
grep "^|\|ceilings" $OUT/dual_gemm.log | cut -c1-220
tail -3 $OUT/dual_gemm.log
