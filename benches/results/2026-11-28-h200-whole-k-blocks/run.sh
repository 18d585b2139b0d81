#!/usr/bin/env bash
# Whole-K decode blocks with fewer warps an SM and more steps a warp (planner constants) against main (H200).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b53.tgz -C /tmp/p && B=/tmp/p/b53
L=$OUT/logs.txt; : > $L
for v in base new; do python3 -m pip install -q --no-deps --target /tmp/w-$v $B/$v/wheels/*.whl > /dev/null 2>&1; done
DUAL=1x4096x7168,1x14336x4096,1x18432x7168,1x8192x2048,4x14336x4096
GEMM=1x4096x7168,4x4096x7168,1x4096x14336,1x7168x18432,1x7168x16384,1x7168x2048,1x2048x8192
for r in 1 2; do for v in base new; do
  timeout 150 $B/$v/dual_gemm --shapes $DUAL --sets 20 --results /tmp/res > $OUT/r$r-$v-dual.log 2>&1
  timeout 120 $B/$v/gemm --shapes $GEMM --sets 20 --results /tmp/res > $OUT/r$r-$v-gemm.log 2>&1
done; done
for v in base new new base; do
  MLP_TOKENS=1 PYTHONPATH=/tmp/w-$v timeout 150 python3 .gpu-pack/mlp_ab.py $v >> $OUT/mlp.jsonl 2>> $L
done
python3 - <<'PY' > $OUT/summary.txt
import os,json
out=os.environ['OUT']
def rows(f):
    d={}
    for l in open(f):
        c=[x.strip() for x in l.split('|')]
        if len(c)<4 or not l.startswith('| '): continue
        try: v=float(c[2])
        except ValueError: continue
        if c[1] not in d: d[c[1]]=v
    return d
for kind in ['dual','gemm']:
    print(kind, 'µs base -> new (ratio)')
    for r in [1,2]:
        b=rows(f'{out}/r{r}-base-{kind}.log'); p=rows(f'{out}/r{r}-new-{kind}.log')
        for s in b: print(f'  r{r} {s:>16} {b[s]:8.2f} {p.get(s,0):8.2f} {p.get(s,0)/b[s]:.3f}')
runs=[json.loads(l) for l in open(f'{out}/mlp.jsonl')]
print('MLP op µs (bf16 µs)')
for key in runs[0]['rows']:
    print(f'  {key:>24}', '  '.join(f"{r['tag']} {r['rows'][key][0]:6.1f} ({r['rows'][key][1]:6.1f} {r['rows'][key][1]/r['rows'][key][0]:.2f}x)" for r in runs))
PY
cat $OUT/r*-*.log > $OUT/benches.txt; rm $OUT/r*-*.log
cat $L $OUT/summary.txt
