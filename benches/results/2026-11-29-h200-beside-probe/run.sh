#!/bin/bash
# Probe (branch exp/beside-probe, fitted entries at 160 registers): the preparation pass's decoding
# run a second time beside the running grouped GEMM (NVFP4_PROBE_BESIDE=CTAs, 64 threads each, into
# scratch) against the same build without it: off on on off.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c54.tgz -C /tmp && B=/tmp/c54
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
C=qwen3-30b-prefill,gpt-oss-120b-prefill,deepseek-v3-prefill
i=0
for v in off 132 132 off; do i=$((i+1))
  if [ $v = off ]; then unset NVFP4_PROBE_BESIDE; else export NVFP4_PROBE_BESIDE=$v; fi
  timeout 100 $B/grouped --cases $C --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/beside-$i-$v.log 2>&1; echo "beside $i $v rc=$? $(grep '^| [gdq]' $OUT/beside-$i-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
