#!/bin/bash
cd "$(dirname "$0")/.." || exit 1
mkdir -p /tmp/w && tar -xJf .gpu-pack/pm.tar.xz -C /tmp/w
for b in base new; do pip install --no-index --no-deps --target /tmp/site-$b /tmp/w/m/$b/*.whl > /dev/null 2>&1; done
for r in 1 2; do for b in base new; do for s in "2048 8192" "4096 14336" "7168 18432"; do for t in 1 16; do
  set -- $s
  us=$(PYTHONPATH=/tmp/site-$b python3 bindings/python/examples/mlp.py --tokens $t --hidden $1 --intermediate $2 2>&1 | grep -E "^\| (nvfp4 \(|PyTorch)" | awk -F'|' '{printf "%s ", $4}')
  echo "$b r$r $1x$2 t$t nvfp4/bf16 µs: $us" | tee -a $OUT/mlp-ab.txt
done; done; done; done
