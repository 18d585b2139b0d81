#!/bin/bash
# Probe (branch exp/prepare-grid-probe): the grouped preparation pass's grid capped (NVFP4_PROBE_PREPARE_GRID), Qwen3-30B-A3B and
# gpt-oss-120b prefill; then main's grouped rows in phases with the peers (torch._grouped_mm included).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c51.tgz -C /tmp && B=/tmp/c51
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
i=0
for g in none 132 66 33 264 none; do i=$((i+1))
  if [ $g = none ]; then unset NVFP4_PROBE_PREPARE_GRID; else export NVFP4_PROBE_PREPARE_GRID=$g; fi
  NVFP4_TORCH_GROUPED_BASELINE=/nonexistent timeout 90 $B/grouped --cases qwen3-30b-prefill,gpt-oss-120b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/probe-$i-$g.log 2>&1; echo "probe $i grid $g rc=$? $(grep '^| [qg]' $OUT/probe-$i-$g.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
unset NVFP4_PROBE_PREPARE_GRID
timeout 300 $B/grouped --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results /tmp/rp > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
cp /tmp/rp/grouped.json $OUT/ 2>/dev/null
grep "^|" $OUT/grouped-phased.log | cut -d'|' -f2,8,9,11,12,13,14,15,16,17 | cut -c1-200
tail -4 $OUT/grouped-phased.log
