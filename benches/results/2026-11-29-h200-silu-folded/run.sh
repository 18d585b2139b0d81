#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c64.tgz -C /tmp && B=/tmp/c64
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 60 $B/gpu_grouped --test-threads=1 > $OUT/test-gpu_grouped.log 2>&1; echo "gpu_grouped rc=$? $(grep 'test result' $OUT/test-gpu_grouped.log)"
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; [ $v = main ] && g=$B/main-grouped
  timeout 60 $g --cases qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill --sets 3 --max-seconds 0.25 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$? $(grep '^| [gdq]' $OUT/grouped-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
timeout 120 $B/gpu_dual_gemm --test-threads=2 > $OUT/test-gpu_dual_gemm.log 2>&1; echo "gpu_dual_gemm rc=$? $(grep 'test result' $OUT/test-gpu_dual_gemm.log)"
