#!/bin/bash
# benches/mlp with its variants replayed in turn (interleaved timer): the hand-on policy.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c3.tgz -C /tmp && B=/tmp/c3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
for i in 1 2; do
  timeout 270 $B/mlp --tokens 64,128,256,512,1024,4096 --max-seconds 0.3 --results $OUT/r$i > $OUT/mlp-interleaved-$i.log 2>&1
  echo "mlp $i rc=$?"
  cp $OUT/r$i/*.json $OUT/mlp-interleaved-$i.json 2>/dev/null; rm -rf $OUT/r$i
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
for i in 1 2; do echo "== run $i"; grep -v "^device" $OUT/mlp-interleaved-$i.log | grep -v "^| ---\|^| model\|^wrote" | cut -c1-200 | awk '!seen[$0]++' | head -40; done
