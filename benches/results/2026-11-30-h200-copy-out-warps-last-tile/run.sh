#!/bin/bash
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c73 && [ -d /tmp/c73/new ] || tar xzf .gpu-bundle/c73.tgz -C /tmp/c73; B=/tmp/c73
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
C=gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill,decode
i=0
for r in base new new base; do
  i=$((i+1))
  timeout 100 $B/$r/grouped --bench --cases $C --sets 3 --max-seconds 0.25 --results /tmp/r-$r > $OUT/grouped-$i-$r.log 2>&1; echo "grouped $r rc=$?"
done
echo "case | base1 | new2 | new3 | base4"
row() { grep -E "^\| (gpumode|qwen|gpt|deepseek)" $OUT/grouped-$1.log | cut -d'|' -f$2; }
paste -d'|' <(row 1-base 2,9) <(row 2-new 9) <(row 3-new 9) <(row 4-base 9)
