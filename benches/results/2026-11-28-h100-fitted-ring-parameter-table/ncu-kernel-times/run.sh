#!/usr/bin/env bash
# Per-kernel durations (ncu) of the GPU MODE grouped cases, final build: preparation pass vs tiled kernel.
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b14.tgz -C /tmp/p && B=/tmp/p/b14
export NVFP4_TORCH_BASELINE=/none NVFP4_REQUIRE_GPU=1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for c in gpumode-1 gpumode-2 gpumode-3 gpumode-4; do
  timeout 100 $NCU -k regex:nvfp4 --launch-skip 10 --launch-count 12 --metrics gpu__time_duration.sum,launch__grid_size --csv $B/grouped-final --cases $c --sets 2 --max-seconds 0.05 > $OUT/ncu-$c.csv 2>$OUT/ncu-$c.err
  echo "== $c rc=$?"; python3 - $OUT/ncu-$c.csv <<'PY'
import csv,sys,collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
h=rows[0]; k=h.index('Kernel Name'); m=h.index('Metric Name'); v=h.index('Metric Value')
d=collections.defaultdict(list)
for r in rows[1:]:
    d[(r[k][:40],r[m])].append(r[v])
for key,vals in d.items(): print(key, vals[:6])
PY
done
