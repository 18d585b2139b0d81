#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c63.tgz -C /tmp && B=/tmp/c63
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
for t in gpu_dual_gemm gpu_grouped; do timeout 150 $B/$t --test-threads=1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log)"; done
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; d=$B/dual_gemm; [ $v = main ] && g=$B/main-grouped && d=$B/main-dual_gemm
  timeout 100 $g --cases qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill,gpumode --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1; echo "grouped $i $v rc=$? $(grep '^| [gdq]' $OUT/grouped-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
  timeout 60 $d --shapes bench --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/dual-$i-$v.log 2>&1; echo "dual $i $v rc=$? $(grep '^| [0-9]' $OUT/dual-$i-$v.log | head -4 | cut -d'|' -f2,3 | tr '\n' ' ')"
done
