#!/bin/bash
# Third round (same bundle as run2.sh): every grouped case of the new build in phases with its
# peers (cuBLAS loop, torch._grouped_mm) and floors, then the GPU MODE cases alternately
# against main, three times each.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c46.tgz -C /tmp && B=/tmp/c46
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 300 $B/grouped_new --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased-new.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased-new.log | cut -d'|' -f2,8-16
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent
S=$SECONDS
for v in main new main new main new; do
  [ $((SECONDS - S)) -gt 200 ] && break
  timeout 60 $B/grouped_$v --cases gpumode --sets 10 --max-seconds 0.3 --results /tmp/r > $OUT/gpumode-$v.log 2>&1; echo "gpumode $v rc=$?"
  grep "^|" $OUT/gpumode-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo
done
