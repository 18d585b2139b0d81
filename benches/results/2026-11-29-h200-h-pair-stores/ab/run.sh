#!/bin/bash
# NVFP4 epilogue's decoded h stored by lane pairs: GPU tests, then the MLP op's variants,
# main's binary (base) against the change (new), base/new/new/base.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b6.tgz -C /tmp && B=/tmp/b6
export NVFP4_REQUIRE_GPU=1
timeout 200 $B/gpu_dual_gemm --test-threads=1 > $OUT/test-gpu_dual_gemm.log 2>&1
echo "test rc=$? $(grep 'test result' $OUT/test-gpu_dual_gemm.log | tail -1)"
grep -h "FAILED\|panicked" $OUT/test-*.log | head
for v in base new new base; do
  timeout 200 $B/mlp-$v --tokens 64,128,256,1024 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-$v-$RANDOM.log 2>&1
  echo "mlp $v rc=$?"
done
rm -rf $OUT/r
for f in $OUT/mlp-*.log; do
  echo "== $(basename $f)"
  awk '/^\| model/{n++} n==1 && /^\| [A-Z]/' $f | cut -d'|' -f2-9
done
