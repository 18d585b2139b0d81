#!/bin/bash
# Variants replayed in turn under sustained load: benches/mlp (new limits) and mlp.py's rows.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c5.tgz -C /tmp && B=/tmp/c5
python3 -m pip install -q --no-deps --target /tmp/w .gpu-bundle/wheel/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $B/mlp --tokens 64,128,256,512,1024,4096 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-sustained.log 2>&1
echo "mlp rc=$?"; cp $OUT/r/*.json $OUT/mlp-sustained.json 2>/dev/null; rm -rf $OUT/r
timeout 250 python3 .gpu-bundle/mlp_rows.py > $OUT/mlp-rows-sustained.log 2>&1; echo "rows rc=$?"
grep -v "^device" $OUT/mlp-sustained.log | grep -v "^| ---\|^| model\|^wrote" | cut -c1-200 | awk '!seen[$0]++'
cat $OUT/mlp-rows-sustained.log
