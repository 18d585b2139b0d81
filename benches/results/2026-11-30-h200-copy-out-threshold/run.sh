#!/bin/bash
# Copy-out warps only in launches of at least three tiles a CTA (branch exp/copy-out-threshold)
# against main: gpu_grouped on the branch, then benches/grouped A B B A.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c74 && tar xzf .gpu-bundle/c74.tgz -C /tmp/c74; B=/tmp/c74
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_REQUIRE_GPU=1
timeout 150 $B/thr/gpu_grouped > $OUT/test-gpu_grouped-thr.log 2>&1; echo "gpu_grouped rc=$?"; grep -E "test result|FAILED|panicked" $OUT/test-gpu_grouped-thr.log | head -5
C=gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill
i=0
for r in main thr thr main; do
  i=$((i+1))
  timeout 100 $B/$r/grouped --bench --cases $C --sets 3 --max-seconds 0.25 --results /tmp/r-$r > $OUT/grouped-$i-$r.log 2>&1; echo "grouped $r rc=$?"
done
echo "case | main1 | thr2 | thr3 | main4"
row() { grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-$1.log | cut -d'|' -f$2; }
paste -d'|' <(row 1-main 2,9) <(row 2-thr 9) <(row 3-thr 9) <(row 4-main 9)
