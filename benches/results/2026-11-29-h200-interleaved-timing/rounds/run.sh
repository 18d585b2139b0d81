#!/bin/bash
# benches/mlp with four rounds a row (orders and their reverses, rotated): the hand-on policy.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c2.tgz -C /tmp && B=/tmp/c2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
timeout 560 $B/mlp --tokens 64,128,256,512,1024 --rounds 4 --max-seconds 0.2 --results $OUT/r > $OUT/mlp-rounds.log 2>&1
echo "mlp rc=$?"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cp $OUT/r/*.json $OUT/ 2>/dev/null; rm -rf $OUT/r
grep -v "^device" $OUT/mlp-rounds.log | grep -v "^| ---\|^| model" | cut -c1-200 | awk '!seen[$0]++' | head -80
