#!/bin/bash
# Probe (branch exp/token-lead-probe): every decoded slice loaded one slice later, against
# main: benches/grouped (GPU MODE and prefill rows) in the order main, probe, probe, main.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c38.tgz -C /tmp && B=/tmp/c38
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
mkdir -p $OUT/grouped
r=0
for v in main new new main; do
  r=$((r + 1))
  timeout 90 $B/grouped_$v --cases gpumode,qwen3-30b-prefill,gpt-oss-120b-prefill --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/grouped/$r-$v.log 2>&1; echo "grouped $r $v rc=$?"
  grep -E '^\| (gpumode|deepseek|qwen3|gpt-oss|geomean)' $OUT/grouped/$r-$v.log | cut -d"|" -f2,9 | tr -s ' ' | tr '\n' ';'; echo
done
