#!/bin/bash
# Bulk copies for the 8-128-token tiles' copy-out warps (branch exp/copy-out-bulk-small) against
# main: gpu_grouped, the MoE example and the Python grouped tests on the branch, then
# benches/grouped A B B A.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c77 && tar xzf .gpu-bundle/c77.tgz -C /tmp/c77; B=/tmp/c77
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_REQUIRE_GPU=1
timeout 150 $B/small/gpu_grouped > $OUT/test-gpu_grouped-small.log 2>&1; echo "gpu_grouped rc=$?"; grep -E "test result|FAILED|panicked" $OUT/test-gpu_grouped-small.log | head -5
timeout 60 $B/small/moe > $OUT/moe-small.log 2>&1; echo "moe rc=$?"; tail -1 $OUT/moe-small.log
python3 -m pip install -q --no-deps --target /tmp/w $B/small/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
(cd bindings/python && PYTHONPATH=/tmp/w NVFP4_GPUMODE_DIR=$B/gpumode timeout 120 python3 -m pytest -q -rs -x -k "grouped or group_gemm or moe" tests > $OUT/pytest-grouped-small.log 2>&1; echo "pytest rc=$?"; tail -1 $OUT/pytest-grouped-small.log)
C=gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill
i=0
for r in main small small main; do
  i=$((i+1))
  timeout 100 $B/$r/grouped --bench --cases $C --sets 3 --max-seconds 0.25 --results /tmp/r-$r > $OUT/grouped-$i-$r.log 2>&1; echo "grouped $r rc=$?"
done
echo "case | main1 | small2 | small3 | main4"
row() { grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-$1.log | cut -d'|' -f$2; }
paste -d'|' <(row 1-main 2,9) <(row 2-small 9) <(row 3-small 9) <(row 4-main 9)
