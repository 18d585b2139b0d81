#!/usr/bin/env bash
# The pre-decoding pass's bound again, each token buffer decoded on its first call only (real, stale tokens).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b30.tgz -C /tmp/p && B=/tmp/p/b30
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
GS=gpumode,256x4096x7168,1024x4096x7168,4096x4096x7168
DS=bench,64x4096x7168,128x4096x7168
for r in 1 2; do for v in with once; do
  e=; [ $v = once ] && e=NVFP4_SKIP_PREDECODE=1
  env $e timeout 90 $B/gemm-once --shapes $GS --sets 10 --max-seconds 0.3 > $OUT/gemm-$v-r$r.md 2>&1
  echo "== gemm $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/gemm-$v-r$r.md | awk -F'|' '{printf "%s %s %s| ", $2, $3, $4}')"
  env $e timeout 90 $B/dual_gemm-once --shapes $DS --sets 10 --max-seconds 0.3 > $OUT/dual-$v-r$r.md 2>&1
  echo "== dual $v r$r rc=$? $(grep -E '^\| [0-9]' $OUT/dual-$v-r$r.md | head -6 | awk -F'|' '{printf "%s %s| ", $2, $3}')"
done; done
python3 -m pip install -q --no-deps --target /tmp/w $B/wheels/once/*.whl > /dev/null 2>&1; echo "pip rc=$?"
for v in with once; do
  e=; [ $v = once ] && e=NVFP4_SKIP_PREDECODE=1
  env $e PYTHONPATH=/tmp/w timeout 200 python3 bindings/python/examples/mlp.py --sweep > $OUT/mlp-sweep-$v.txt 2>&1
  echo "== mlp $v rc=$?"; grep -E "^\| [LD]" $OUT/mlp-sweep-$v.txt | awk -F'|' '{printf "%s %s %s %s %s\n", $2, $3, $4, $7, $8}'
done
