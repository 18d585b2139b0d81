#!/usr/bin/env bash
# Decode-size A/B on one device call: a pack's `base` and `new` benches in turn, two rounds, then
# the MLP op of each wheel (base, new, new, base). Parameters (environment): PACK (.gpu-pack/PACK.tgz),
# TESTS (GPU test binaries of `new` to run first, may be empty), DUAL and GEMM (shape lists;
# DUAL empty: no dual GEMM rows), MLP_TOKENS. Each experiment's run.sh sets them. Run from the
# repository root with the pack and `mlp_ab.py` in .gpu-pack/; results go to $OUT.
mkdir -p /tmp/p && tar xzf .gpu-pack/$PACK.tgz -C /tmp/p && B=/tmp/p/$PACK
L=$OUT/logs.txt; : > $L
for v in base new; do python3 -m pip install -q --no-deps --target /tmp/w-$v $B/$v/wheels/*.whl > /dev/null 2>&1; done
for t in $TESTS; do timeout 170 $B/new/test-$t >> $OUT/tests.txt 2>&1; echo "$t rc=$?" >> $L; done
[ -n "$TESTS" ] && grep "test result" $OUT/tests.txt >> $L
for r in 1 2; do for v in base new; do
  [ -n "$DUAL" ] && timeout 150 $B/$v/dual_gemm --shapes $DUAL --sets 20 --results /tmp/res > $OUT/r$r-$v-dual.log 2>&1
  timeout 120 $B/$v/gemm --shapes $GEMM --sets 20 --results /tmp/res > $OUT/r$r-$v-gemm.log 2>&1
done; done
for v in base new new base; do
  PYTHONPATH=/tmp/w-$v timeout 150 python3 .gpu-pack/mlp_ab.py $v >> $OUT/mlp.jsonl 2>> $L
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
for kind in ['dual','gemm'] if os.environ.get('DUAL') else ['gemm']:
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
