#!/bin/bash
# The folded gated product's checks, four calls on one H200 (bundles built from the branch named
# in README.md; `main-*` binaries from `main` at ca53c8d). Call 1 and 4: every GPU test, Rust
# and Python (GPU MODE harness files from scripts/fetch-gpumode.sh); call 2: A B B A benches;
# call 3: the scale rule's first form, tests and one A B pair.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c67.tgz -C /tmp && B=/tmp/c67
for t in gpu gpu_dual_gemm gpu_grouped gpu_coresidency; do timeout 150 $B/$t --test-threads=2 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $OUT/test-$t.log)"; done
python3 -m pip install -q --no-deps --upgrade --target /tmp/w $B/*.whl
(cd bindings/python && PYTHONPATH=/tmp/w NVFP4_REQUIRE_GPU=1 NVFP4_GPUMODE_DIR=$B/gpumode timeout 240 python3 -m pytest -q -rs tests > $OUT/pytest.log 2>&1)
# Call 2 (bundle c65: the branch at ba98c18 and main's binaries):
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
i=0
for v in main new new main; do i=$((i+1))
  g=$B/grouped; d=$B/dual_gemm; [ $v = main ] && g=$B/main-grouped && d=$B/main-dual_gemm
  timeout 80 $d --shapes bench,decode --sets 6 --max-seconds 0.25 --results /tmp/r > $OUT/dual-$i-$v.log 2>&1
  timeout 60 $g --cases decode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill --sets 3 --max-seconds 0.25 --results /tmp/r > $OUT/grouped-$i-$v.log 2>&1
done
