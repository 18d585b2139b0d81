#!/bin/bash
# main's MLP op: each hand-on variant at 512-4096 tokens, twice.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b5.tgz -C /tmp && B=/tmp/b5
for r in 1 2; do
  timeout 250 $B/mlp --tokens 512,1024,2048,4096 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-$r.log 2>&1
  echo "mlp r$r rc=$?"
done
rm -rf $OUT/r
for f in $OUT/mlp-*.log; do
  echo "== $(basename $f)"
  awk '/^\| model/{n++} n==1 && /^\| [A-Z]/' $f | cut -d'|' -f2-9
done
