#!/bin/bash
# 64-token dense tiles decoding their tokens in the CTA (branch exp/t64-in-kernel) against main:
# GPU tests, then benches/gemm, benches/dual_gemm (decode shapes) main new new main, benches/mlp at 64 tokens.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c52.tgz -C /tmp && B=/tmp/c52
export NVFP4_TORCH_BASELINE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_REQUIRE_GPU=1
for t in gpu_dual_gemm gpu; do
  timeout 200 $B/$t --test-threads=1 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log | tail -1)"
done
grep -h "FAILED\|panicked" $OUT/test-*.log | head
i=0
for v in main new new main; do i=$((i+1))
  timeout 100 $B/gemm_$v --shapes gpumode,down,64x7168x2048,64x4096x7168 --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/gemm-$i-$v.log 2>&1; echo "gemm $i $v rc=$?"
  timeout 60 $B/dual_gemm_$v --shapes decode --sets 6 --max-seconds 0.3 --results /tmp/r > $OUT/dual-$i-$v.log 2>&1; echo "dual $i $v rc=$?"
done
for v in main new; do
  timeout 100 $B/mlp_$v --tokens 64,128 --max-seconds 0.3 > $OUT/mlp-$v.log 2>&1; echo "mlp $v rc=$?"
done
for f in $OUT/gemm-*.log; do echo "== $(basename $f)"; grep "^| [0-9]" $f | cut -d'|' -f2,3,5,6 | head -20; done
for f in $OUT/dual-*.log; do echo "== $(basename $f)"; grep "^| [0-9]" $f | cut -d'|' -f2,3 | head -8; done
for f in $OUT/mlp-*.log; do echo "== $(basename $f)"; grep "^|" $f | head -12 | cut -c1-180; done
