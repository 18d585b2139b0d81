#!/bin/bash
# Which way the beside probe ran: the fitted entries at 168 registers (no room beside them: the
# probe's CTAs run after the GEMM's) against 160 (room), probe off and on, Qwen3-30B-A3B prefill.
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c55.tgz -C /tmp && B=/tmp/c55
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
i=0
for v in 168:off 168:132 160:132 160:off; do i=$((i+1))
  b=${v%%:*}; p=${v##*:}
  if [ $p = off ]; then unset NVFP4_PROBE_BESIDE; else export NVFP4_PROBE_BESIDE=$p; fi
  timeout 60 $B/grouped_$b --cases qwen3-30b-prefill --sets 4 --max-seconds 0.3 --results /tmp/r > $OUT/which-$i-$b-$p.log 2>&1; echo "$i fitted $b probe $p rc=$? $(grep '^| q' $OUT/which-$i-$b-$p.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
