#!/bin/bash
# benches/mlp with the phased timer (new hand-on limits): the limits checked under that method.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c9.tgz -C /tmp && B=/tmp/c9
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 280 $B/mlp --tokens 64,128,256,512,1024,4096 --max-seconds 0.25 --results $OUT/r > $OUT/mlp-phased.log 2>&1
echo "mlp rc=$?"; cp $OUT/r/*.json $OUT/mlp-phased.json 2>/dev/null; rm -rf $OUT/r
grep "^| [A-Z]" $OUT/mlp-phased.log | awk '!seen[$0]++' | cut -c1-200
