#!/bin/bash
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c60.tgz -C /tmp && B=/tmp/c60
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 150 $B/gpu_grouped --test-threads=1 > $OUT/test-et.log 2>&1; echo "gpu_grouped early tables rc=$? $(grep 'test result' $OUT/test-et.log)"
NVFP4_NARROW_PASS=1 timeout 150 $B/gpu_grouped --test-threads=1 > $OUT/test-etn.log 2>&1; echo "gpu_grouped early tables + narrow rc=$? $(grep 'test result' $OUT/test-etn.log)"
i=0
for conv in sep contig; do
  flag=""; [ $conv = contig ] && flag=--fixed-sizes-contiguous
  for v in main et etn etn et main; do i=$((i+1))
    unset NVFP4_NARROW_PASS; bin=$B/grouped
    case $v in main) bin=$B/main-grouped;; etn) export NVFP4_NARROW_PASS=1;; esac
    timeout 60 $bin --cases gpumode $flag --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/gm-$i-$conv-$v.log 2>&1; echo "$conv $i $v rc=$? $(grep '^| gpumode' $OUT/gm-$i-$conv-$v.log | cut -d'|' -f2,9 | tr '\n' ' ')"
  done
done
