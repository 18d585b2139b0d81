#!/bin/bash
# A/B of the half-wide stream-K rule by env var, same binary, alternating.
cd "$(dirname "$0")/.."
B=.gpu-bundle/b1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
SH=1024x2048x8192,512x4096x14336,512x7168x18432,1024x4096x7168
for r in 1 2; do
  for v in base new; do
    if [ $v = new ]; then export NVFP4_HALF_WIDE=1; else unset NVFP4_HALF_WIDE; fi
    timeout 200 $B/gemm --shapes $SH --sets 20 --max-seconds 1 --results $OUT/gemm-$v-$r > $OUT/gemm-$v-$r.log 2>&1
    echo "gemm $v r$r rc=$?"
  done
done
for v in base new new base; do
  if [ $v = new ]; then export NVFP4_HALF_WIDE=1; else unset NVFP4_HALF_WIDE; fi
  timeout 200 $B/mlp --tokens 512,1024 --max-seconds 0.3 --results $OUT/mlp-$v > $OUT/mlp-$v.log.$RANDOM 2>&1
  echo "mlp $v rc=$?"
done
unset NVFP4_HALF_WIDE
for f in $OUT/gemm-*.log; do echo "== $f"; grep "^| [0-9]" $f | cut -d'|' -f2-4; done
for f in $OUT/mlp-*.log.*; do echo "== $f"; grep "^|" $f | head -12; done
