#!/usr/bin/env bash
# Host time of the GPU MODE group_gemm adapter (wheel of HEAD).
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --target /tmp/w-head .gpu-pack/wheels/head/*.whl > /dev/null 2>&1; echo "pip rc=$?"
export NVFP4_GPUMODE_DIR=$PWD/.gpu-pack/gpumode
PYTHONPATH=/tmp/w-head timeout 200 python3 .gpu-pack/hostprof.py 2>&1 | tee $OUT/hostprof.log | head -80
