#!/bin/bash
# SM clock and power while main's and the probe's binaries run one long case each, sampled by
# nvidia-smi every 50 ms (the median of the samples with power above 300 W).
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c44.tgz -C /tmp && B=/tmp/c44
export NVFP4_TORCH_GROUPED_BASELINE=/nonexistent NVFP4_TORCH_BASELINE=/nonexistent
sample() { nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 > $OUT/smi-$1.csv & echo $!; }
summary() { python3 -c '
import sys,statistics as s
rows=[l.split(",") for l in open(sys.argv[1]) if l.strip()]
v=[(float(a),float(b)) for a,b in rows if float(b)>300]
print(sys.argv[2], "samples", len(v), "median MHz", s.median([a for a,_ in v]) if v else "-", "median W", s.median([b for _,b in v]) if v else "-")' $OUT/smi-$1.csv $1; }
for v in main mma main mma; do
  P=$(sample grouped-$v); timeout 60 $B/grouped_$v --cases qwen3-30b-prefill,gpt-oss-120b-prefill --sets 6 --max-seconds 1.5 --results /tmp/r > $OUT/g-$v.log 2>&1; kill $P; sleep 0.2
  grep "^|" $OUT/g-$v.log | cut -d'|' -f2,9 | tail -n +3 | tr '\n' ';'; echo; summary grouped-$v
  P=$(sample gemm-$v); timeout 60 $B/gemm_$v --shapes 128x7168x16384 --max-seconds 1.5 --results /tmp/r > $OUT/m-$v.log 2>&1; kill $P; sleep 0.2
  grep "^|" $OUT/m-$v.log | cut -d'|' -f2,3 | tail -n +3 | tr '\n' ';'; echo; summary gemm-$v
done
