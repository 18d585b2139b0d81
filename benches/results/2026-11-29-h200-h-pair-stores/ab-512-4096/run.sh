#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b6.tgz -C /tmp && B=/tmp/b6
timeout 150 $B/mlp-new --tokens 512,2048,4096 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-new-512-4096.log 2>&1
echo "mlp rc=$?"
rm -rf $OUT/r
awk '/^\| model/{n++} n==1 && /^\| [A-Z]/' $OUT/mlp-new-512-4096.log | cut -d'|' -f2-9
