#!/bin/bash
# The beside probe at 128 threads and 32 registers a CTA (one warp a sub-partition): beside the
# 160-register fitted entries (1 024 registers left on each sub-partition: fits) and the 168-register
# ones (256: does not fit), Qwen3-30B-A3B prefill, probe off and on.
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c56.tgz -C /tmp && B=/tmp/c56
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
i=0
for v in 160:off 160:132 168:132 168:off; do i=$((i+1))
  b=${v%%:*}; p=${v##*:}
  if [ $p = off ]; then unset NVFP4_PROBE_BESIDE; else export NVFP4_PROBE_BESIDE=$p; fi
  timeout 50 $B/grouped_$b --cases qwen3-30b-prefill --sets 3 --max-seconds 0.2 --results /tmp/r > $OUT/w32-$i-$b-$p.log 2>&1; echo "$i fitted $b probe $p rc=$? $(grep '^| q' $OUT/w32-$i-$b-$p.log | cut -d'|' -f2,9 | tr '\n' ' ')"
done
