#!/bin/bash
# Probe (branch exp/in-kernel-decode-128): dense 64/128-token tiles decoding their tokens in the
# CTA, against main: the branch's dense GPU tests, then benches/gemm and benches/dual_gemm rows
# on those tiles in the order main, new, new, main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c40.tgz -C /tmp && B=/tmp/c40
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_BASELINE=/nonexistent
mkdir -p $OUT/logs
for t in gpu_dual_gemm gpu; do
  timeout 150 $B/${t}_new --test-threads 1 > $OUT/logs/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/logs/test-$t.log | tail -1)"
done
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 60 $B/gemm_$v --shapes gpumode,64x4096x7168,256x4096x7168 --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/logs/gemm-$r-$v.log 2>&1; echo "gemm $r $v rc=$?"
  grep -E "^\| [0-9]+×" $OUT/logs/gemm-$r-$v.log | cut -d"|" -f2,3 | tr -s ' ' | tr '\n' ';'; echo
  timeout 60 $B/dual_gemm_$v --shapes bench,64x4096x7168 --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/logs/dual-$r-$v.log 2>&1; echo "dual $r $v rc=$?"
  grep -E "^\| [0-9]+×" $OUT/logs/dual-$r-$v.log | head -5 | cut -d"|" -f2,3 | tr -s ' ' | tr '\n' ';'; echo
done
