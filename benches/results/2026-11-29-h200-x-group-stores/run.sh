#!/bin/bash
# main (base) GPU tests, then the x group-store experiment (new): tests, quantize and MLP benches.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c1.tgz -C /tmp && B=/tmp/c1
export NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in gpu_dual_gemm-base gpu_dual_gemm-new gpu-new; do
  timeout 170 $B/$t --test-threads=1 > $OUT/test-$t.log 2>&1
  echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log | tail -1)"
done
grep -h "FAILED\|panicked" $OUT/test-*.log | head
for v in base new; do
  timeout 60 $B/quantize-$v --results $OUT/r > $OUT/quantize-$v.log 2>&1; echo "quantize $v rc=$?"
done
for v in base new new base; do
  timeout 75 $B/mlp-$v --tokens 256,1024,4096 --max-seconds 0.2 --results $OUT/r > $OUT/mlp-$v-$RANDOM.log 2>&1
  echo "mlp $v rc=$?"
done
rm -rf $OUT/r
for v in base new; do echo "== quantize $v"; grep "^|" $OUT/quantize-$v.log | head -30; done
for f in $OUT/mlp-*.log; do
  echo "== $(basename $f)"
  awk '/^\| model/{n++} n==1 && /^\| [A-Z]/' $f | cut -d'|' -f2-9
done
