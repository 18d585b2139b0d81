#!/bin/bash
# GPU MODE's cases: the separate convention (main's bench), the contiguous convention with one
# weight copy shared by the input sets (main's bench) and with a weight copy per set (this
# bench), in turn twice.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c34.tgz -C /tmp && B=/tmp/c34
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
r=0
for round in 1 2; do
  for v in main-separate main-contiguous new-contiguous; do
    r=$((r + 1))
    case $v in
      main-separate) flags="";;
      *) flags="--fixed-sizes-contiguous";;
    esac
    timeout 60 $B/grouped_${v%%-*} --cases gpumode --sets 10 --max-seconds 0.3 $flags --results /tmp/r > /tmp/gm-$(printf %02d $r)-$v.log 2>&1; echo "gpumode $r $v rc=$?"
  done
done
cat /tmp/gm-*.log > $OUT/gpumode.log
for f in /tmp/gm-*.log; do echo "== $f $(grep '^| gpumode\|^| geomean' $f | cut -d'|' -f9 | tr -d ' ' | tr '\n' ' ')"; done
