#!/bin/bash
# benches/quantize with the decode sizes' graphs in phases, beside the row-order build.
cd "$(dirname "$0")/.."
mkdir -p /tmp/c18 && tar xzf .gpu-bundle/c18.tgz -C /tmp/c18
B=/tmp/c18/c18
timeout 150 $B/quantize_phased --bench --max-seconds 0.3 --results $OUT/phased > $OUT/quantize-phased.log 2>&1; echo "phased rc=$?"
timeout 150 $B/quantize_rows --bench --max-seconds 0.3 --results $OUT/rows > $OUT/quantize-rows.log 2>&1; echo "rows rc=$?"
paste -d' ' <(grep -E "^\| [0-9]+ ×" $OUT/quantize-phased.log) <(grep -E "^\| [0-9]+ ×" $OUT/quantize-rows.log | cut -d'|' -f3-5)
grep -E "^\| (f32|f16|bf16)" $OUT/quantize-phased.log $OUT/quantize-rows.log
