#!/bin/bash
# Each variant in phases of its own sustained load (A B … … B A): the layer rows against bf16,
# benches/gemm and benches/dual_gemm against cuBLAS.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c9.tgz -C /tmp && B=/tmp/c9
python3 -m pip install -q --no-deps --upgrade --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w NVFP4_TORCH_BASELINE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 230 python3 .gpu-bundle/mlp_rows.py > $OUT/mlp-rows-phased.log 2>&1; echo "rows rc=$?"
timeout 130 $B/gemm --max-seconds 0.3 --results $OUT/r1 > $OUT/gemm-phased.log 2>&1; echo "gemm rc=$?"
timeout 130 $B/dual_gemm --shapes bench,decode --max-seconds 0.3 --results $OUT/r2 > $OUT/dual_gemm-phased.log 2>&1; echo "dual rc=$?"
rm -rf $OUT/r1 $OUT/r2
cat $OUT/mlp-rows-phased.log
grep "^|" $OUT/gemm-phased.log | cut -c1-170
grep "^|" $OUT/dual_gemm-phased.log | head -12 | cut -c1-200
