#!/bin/bash
# Twice the wgmmas a slice (mma), and twice the decode as well (dec), against main: timing only.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c44.tgz -C /tmp && B=/tmp/c44
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
S=$SECONDS
for v in main mma dec dec mma main; do
  [ $((SECONDS - S)) -gt 470 ] && break
  timeout 60 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/grouped-$v.log 2>&1; echo "grouped $v rc=$?"
  grep "^|" $OUT/grouped-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
  timeout 40 $B/gemm_$v --shapes gpumode,256x4096x7168 --max-seconds 0.2 --results /tmp/r > $OUT/gemm-$v.log 2>&1; echo "gemm $v rc=$?"
  grep "^|" $OUT/gemm-$v.log | cut -d'|' -f2,3 | tail -n +3 | tr '\n' ';'; echo
done
rm -f $OUT/*-dec.log.tmp
