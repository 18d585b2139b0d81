#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b3.tgz -C /tmp && B=/tmp/b3
SH=128x7168x16384,128x4096x7168,128x7168x2048,64x4096x7168,256x4096x7168,256x7168x18432,1024x2048x8192
for r in 1 2; do
  for v in base new; do
    if [ $v = base ]; then export NVFP4_PREDECODE_BEFORE=1; else unset NVFP4_PREDECODE_BEFORE; fi
    timeout 200 $B/gemm --shapes $SH --sets 20 --max-seconds 1 --results $OUT/r > $OUT/gemm-$v-$r.log 2>&1
    echo "gemm $v r$r rc=$?"
  done
done
for v in base new; do
  if [ $v = base ]; then export NVFP4_PREDECODE_BEFORE=1; else unset NVFP4_PREDECODE_BEFORE; fi
  timeout 200 $B/mlp --tokens 1024 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-$v.log 2>&1
  echo "mlp $v rc=$?"
done
rm -rf $OUT/r
python3 - <<'PY'
import glob,re,os
out=os.environ['OUT']
def rows(f):
    d={}
    for l in open(f):
        c=[x.strip() for x in l.split('|')]
        if len(c)>3 and re.match(r'\d+×\d+×\d+',c[1]):
            try: d[c[1]]=float(c[2])
            except: pass
    return d
fs=sorted(glob.glob(f'{out}/gemm-*.log'))
R={os.path.basename(f):rows(f) for f in fs}
shapes=[]
for d in R.values():
    for s in d:
        if s not in shapes: shapes.append(s)
print(' '.join(os.path.basename(f)[:-4] for f in fs))
for s in shapes: print(f'{s:>16}', ' '.join(f"{R[os.path.basename(f)].get(s,0):8.1f}" for f in fs))
for f in sorted(glob.glob(f'{out}/mlp-*.log')):
    print('==',os.path.basename(f))
    seen=set()
    for l in open(f):
        if l.startswith('| ') and 'model' not in l and '---' not in l and l not in seen:
            seen.add(l); c=[x.strip() for x in l.split('|')]; print('  ',c[1][:14],c[2],'three',c[3],'none',c[4],'x',c[5],'h',c[6],'def',c[8])
PY
