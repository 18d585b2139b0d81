#!/bin/bash
# benches/grouped at main (StreamK's first iteration once), timed in phases, with the torch baseline.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/c20.tgz -C /tmp && B=/tmp/c20
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm --format=csv,noheader
timeout 280 $B/grouped --bench --cases gpumode,decode,prefill --sets 10 --max-seconds 0.3 --results $OUT/phased > $OUT/grouped-phased.log 2>&1; echo "phased rc=$?"
rm -f $OUT/*/*.svg $OUT/*/grouped-cases.json
grep -E "^\|" $OUT/grouped-phased.log | cut -c1-260
