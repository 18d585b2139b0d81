#!/bin/bash
# The MLP layer rows (mlp.py's `layer`, each variant in phases of its own sustained load) with
# the wheel before the folded SiLU product (pre) and main's (new), A B B A.
# The bundle held the two wheels; the rows script is ../2026-11-29-h200-interleaved-timing/phased/mlp_rows.py.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/c75 && tar xzf .gpu-bundle/c75.tgz -C /tmp/c75; B=/tmp/c75
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
for v in pre new; do python3 -m pip install -q --no-deps --target /tmp/w-$v $B/$v/*.whl 2>&1 | grep -v WARNING | tail -2; done
export NVFP4_TORCH_BASELINE=0
i=0
for v in pre new new pre; do
  i=$((i+1))
  PYTHONPATH=/tmp/w-$v timeout 130 python3 benches/results/2026-11-29-h200-interleaved-timing/phased/mlp_rows.py 1,16,256 > $OUT/mlp-rows-$i-$v.log 2>&1; echo "rows $v rc=$?"
done
echo "model tokens | pre1 | new2 | new3 | pre4 (op µs) | bf16 (run 1)"
row() { grep -E "^\| (Llama|Deep)" $OUT/mlp-rows-$1.log | cut -d'|' -f$2; }
paste -d'|' <(row 1-pre 2,3,4) <(row 2-new 4) <(row 3-new 4) <(row 4-pre 4) <(row 1-pre 7)
