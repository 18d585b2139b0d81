#!/bin/bash
cd "$(dirname "$0")/.."
pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl > /dev/null 2>&1 || exit 3
export PYTHONPATH=/tmp/w
for r in 1; do
  timeout 250 python3 .gpu-bundle/mlp_rows.py > $OUT/mlp-rows-$r.log 2>&1; echo "rows r$r rc=$?"
  cat $OUT/mlp-rows-$r.log | grep "^|"
done
tar xzf .gpu-bundle/b6.tgz -C /tmp
for tool in memcheck synccheck; do
  timeout 95 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b6/gpu_dual_gemm --test-threads=1 --exact the_mlp_op_is_its_three_calls_made_one_by_one_bit_for_bit > $OUT/san-$tool.log 2>&1
  echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' $OUT/san-$tool.log | tr '\n' ' ')"
done
