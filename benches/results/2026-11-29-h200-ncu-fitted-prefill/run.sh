#!/bin/bash
# Nsight Compute on Qwen3-30B-A3B's prefill GEMM as main runs it now (the fitted kernel, tile 176).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c62.tgz -C /tmp && B=/tmp/c62
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 240 ncu --clock-control none -k regex:"nvfp4_grouped_dual_gemm_sm90_fitted" --launch-skip 3 --launch-count 1 --set full --import-source no -o $OUT/ncu-fitted $B/grouped --cases qwen3-30b-prefill --sets 2 --max-seconds 0.05 > $OUT/ncu-run.log 2>&1; echo "ncu rc=$?"
if [ -f $OUT/ncu-fitted.ncu-rep ]; then
  ncu -i $OUT/ncu-fitted.ncu-rep --page details --csv > $OUT/ncu-qwen3-prefill-fitted-details.csv
  ncu -i $OUT/ncu-fitted.ncu-rep --page source --csv --print-source sass | gzip > $OUT/ncu-qwen3-prefill-fitted-source.csv.gz
  python3 scripts/ncu-stalls.py <(zcat $OUT/ncu-qwen3-prefill-fitted-source.csv.gz) > $OUT/ncu-qwen3-prefill-fitted-stalls.txt 2>&1 || true
  rm -f $OUT/ncu-fitted.ncu-rep
  grep -E '"(Duration|SM Frequency|Issue Slots Busy|Tensor|Executed Ipc Active)' $OUT/ncu-qwen3-prefill-fitted-details.csv | cut -d, -f12- | head -20
  head -16 $OUT/ncu-qwen3-prefill-fitted-stalls.txt
fi
