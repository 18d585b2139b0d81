#!/bin/bash
# GPU tests of the final state (new hand-on limits), then the layer bench's two timing methods A/B.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c7.tgz -C /tmp && B=/tmp/c7
python3 -m pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/w NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $B/gpu_dual_gemm --test-threads=1 > $OUT/test-gpu_dual_gemm.log 2>&1
echo "gpu_dual_gemm rc=$? $(grep 'test result' $OUT/test-gpu_dual_gemm.log | tail -1)"
grep -h "FAILED\|panicked" $OUT/test-*.log | head
timeout 300 python3 .gpu-bundle/mlp_ab.py > $OUT/mlp-methods.log 2>&1; echo "ab rc=$?"
cat $OUT/mlp-methods.log | tail -30
