#!/bin/bash
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c73 && tar xzf .gpu-bundle/c73.tgz -C /tmp/c73 && B=/tmp/c73
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_REQUIRE_GPU=1
timeout 150 $B/new/gpu_grouped > $OUT/test-gpu_grouped-new.log 2>&1; echo "gpu_grouped rc=$?"; grep -E "test result|FAILED|panicked" $OUT/test-gpu_grouped-new.log | head -5
timeout 60 $B/new/moe > $OUT/moe-new.log 2>&1; echo "moe rc=$?"; tail -3 $OUT/moe-new.log
C=gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill,decode
for r in base new new base; do
  timeout 100 $B/$r/grouped --bench --cases $C --sets 3 --max-seconds 0.25 --results /tmp/r-$r > $OUT/grouped-$r-$((++i)).log 2>&1; echo "grouped $r rc=$?"
done
python3 -m pip install -q --no-deps --target /tmp/w $B/new/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
(cd bindings/python && PYTHONPATH=/tmp/w NVFP4_GPUMODE_DIR=$B/gpumode timeout 200 python3 -m pytest -q -rs -x -k "grouped or group_gemm or moe" tests > $OUT/pytest-grouped-new.log 2>&1; echo "pytest rc=$?"; tail -3 $OUT/pytest-grouped-new.log)
echo "case | base1 | new2 | new3 | base4"
paste -d'|' <(grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-base-1.log | cut -d'|' -f2,9) <(grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-new-2.log | cut -d'|' -f9) <(grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-new-3.log | cut -d'|' -f9) <(grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-base-4.log | cut -d'|' -f9)
