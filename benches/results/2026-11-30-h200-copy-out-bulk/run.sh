#!/bin/bash
# Copy-out warps storing by bulk copies (branch exp/copy-out-bulk) against main: gpu_grouped
# and the MoE example on the branch, then benches/grouped A B B A.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c76 && tar xzf .gpu-bundle/c76.tgz -C /tmp/c76; B=/tmp/c76
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_REQUIRE_GPU=1
timeout 150 $B/bulk/gpu_grouped > $OUT/test-gpu_grouped-bulk.log 2>&1; echo "gpu_grouped rc=$?"; grep -E "test result|FAILED|panicked" $OUT/test-gpu_grouped-bulk.log | head -5
timeout 60 $B/bulk/moe > $OUT/moe-bulk.log 2>&1; echo "moe rc=$?"; tail -1 $OUT/moe-bulk.log
C=gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill
i=0
for r in main bulk bulk main; do
  i=$((i+1))
  timeout 100 $B/$r/grouped --bench --cases $C --sets 3 --max-seconds 0.25 --results /tmp/r-$r > $OUT/grouped-$i-$r.log 2>&1; echo "grouped $r rc=$?"
done
echo "case | main1 | bulk2 | bulk3 | main4"
row() { grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-$1.log | cut -d'|' -f$2; }
paste -d'|' <(row 1-main 2,9) <(row 2-bulk 9) <(row 3-bulk 9) <(row 4-main 9)
