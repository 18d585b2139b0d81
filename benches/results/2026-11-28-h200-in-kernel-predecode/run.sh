#!/usr/bin/env bash
# In-kernel token pre-decoding (dense tiled kernels) against main: GPU tests, A/B, MLP (H200).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b49.tgz -C /tmp/p && B=/tmp/p/b49
L=$OUT/logs.txt; : > $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $L
for v in base new; do python3 -m pip install -q --no-deps --target /tmp/w-$v $B/$v/wheels/*.whl > /dev/null 2>&1; done
for t in gpu_dual_gemm gpu gpu_grouped; do timeout 170 $B/new/test-$t >> $OUT/tests.txt 2>&1; echo "$t rc=$?" >> $L; done
grep "test result" $OUT/tests.txt >> $L
DUAL=64x4096x7168,128x4096x7168,256x4096x7168,512x4096x7168,256x3072x4096,512x3072x7168,1024x4096x7168,4096x4096x7168
GEMM=64x4096x7168,128x4096x7168,128x7168x2048,128x7168x16384,256x4096x7168,256x7168x4096,512x4096x7168,1024x4096x7168,4096x4096x7168
for r in 1 2; do for v in base new; do
  timeout 150 $B/$v/dual_gemm --shapes $DUAL --sets 20 --max-seconds 1 --results /tmp/res > $OUT/r$r-$v-dual.log 2>&1
  timeout 150 $B/$v/gemm --shapes $GEMM --sets 20 --max-seconds 1 --results /tmp/res > $OUT/r$r-$v-gemm.log 2>&1
done; done
for v in base new new base; do
  MLP_TOKENS=64,128,256,1024 PYTHONPATH=/tmp/w-$v timeout 200 python3 .gpu-pack/mlp_ab.py $v >> $OUT/mlp.jsonl 2>> $L
done
python3 - <<'PY' > $OUT/summary.txt
import os,json
out=os.environ['OUT']
def rows(f, cub):
    d={}
    for l in open(f):
        c=[x.strip() for x in l.split('|')]
        if len(c)<4 or not l.startswith('| '): continue
        try: v=float(c[2])
        except ValueError: continue
        if c[1] not in d: d[c[1]]=(v, c[cub] if len(c)>cub else '')
    return d
for kind,cub in [('dual',5),('gemm',3)]:
    print(kind, 'µs base -> new (ratio) [cuBLAS fp16 column of new]')
    for r in [1,2]:
        b=rows(f'{out}/r{r}-base-{kind}.log',cub); p=rows(f'{out}/r{r}-new-{kind}.log',cub)
        for s in b: print(f'  r{r} {s:>16} {b[s][0]:8.1f} {p.get(s,(0,))[0]:8.1f} {p.get(s,(0,))[0]/b[s][0]:.3f}  [{p.get(s,(0,""))[1]}]')
runs=[json.loads(l) for l in open(f'{out}/mlp.jsonl')]
print('MLP op µs (bf16 µs)')
for key in runs[0]['rows']:
    print(f'  {key:>24}', '  '.join(f"{r['tag']} {r['rows'][key][0]:6.1f} ({r['rows'][key][1]:6.1f} {r['rows'][key][1]/r['rows'][key][0]:.2f}x)" for r in runs))
PY
cat $OUT/r*-*.log > $OUT/benches.txt; rm $OUT/r*-*.log
cat $L $OUT/summary.txt
