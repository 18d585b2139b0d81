#!/bin/bash
# benches/grouped (every case, in phases, with the torch baseline) and the MoE layer
# (moe_layer.py, each layer in phases of its own sustained load) at main 3885e82, the MoE rows' token scales drawn as the reference harness draws them.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c36.tgz -C /tmp && B=/tmp/c36
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm --format=csv,noheader
timeout 290 $B/grouped --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -d'|' -f2,8-16
python3 -m pip install -q --no-deps --upgrade --target /tmp/w $B/nvfp4-*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/w
timeout 220 python3 bindings/python/benchmarks/moe_layer.py --models qwen3-30b,gpt-oss-120b,deepseek-v3 > $OUT/moe-layer-phased.log 2>&1; echo "moe rc=$?"
tail -12 $OUT/moe-layer-phased.log
# Nsight Compute on one Qwen3-30B-A3B prefill launch of the 128-token grouped dual GEMM (as
# entry 117 did at its revision), to see where its time goes now.
which ncu > /dev/null && timeout 200 ncu --clock-control none -k regex:"nvfp4_grouped_dual_gemm_sm90_t128" --launch-skip 3 --launch-count 1 --set full --import-source no -o $OUT/ncu-qwen3-prefill $B/grouped --cases qwen3-30b-prefill --sets 2 --max-seconds 0.05 > $OUT/ncu-run.log 2>&1; echo "ncu rc=$?"
if [ -f $OUT/ncu-qwen3-prefill.ncu-rep ]; then
  ncu -i $OUT/ncu-qwen3-prefill.ncu-rep --page details --csv > $OUT/ncu-qwen3-prefill-details.csv
  ncu -i $OUT/ncu-qwen3-prefill.ncu-rep --page source --csv --print-source sass | gzip > $OUT/ncu-qwen3-prefill-source.csv.gz
  python3 scripts/ncu-stalls.py <(zcat $OUT/ncu-qwen3-prefill-source.csv.gz) > $OUT/ncu-qwen3-prefill-stalls.txt 2>&1 || true
  rm -f $OUT/ncu-qwen3-prefill.ncu-rep
  grep -E '"(Duration|SM Frequency|Issue Slots Busy|Tensor|Executed Ipc Active)' $OUT/ncu-qwen3-prefill-details.csv | cut -d, -f12- | head -20
fi
