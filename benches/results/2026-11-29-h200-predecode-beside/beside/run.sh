#!/bin/bash
# Beside pre-decoder: GPU tests, then A/B (NVFP4_PREDECODE_BEFORE=1 = base) in one binary.
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b2.tgz -C /tmp && B=/tmp/b2
export NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
bad=0
for t in gpu_dual_gemm gpu gpu_grouped gpu_coresidency; do
  timeout 150 $B/$t --test-threads=1 > $OUT/test-$t.log 2>&1; rc=$?; [ $rc = 0 ] || bad=1
  echo "test $t rc=$rc $(grep 'test result' $OUT/test-$t.log | tail -1)"
done
grep -h "FAILED\|panicked" $OUT/test-*.log | head -20
if [ $bad = 1 ]; then grep -h "^test .*\.\.\." $OUT/test-*.log | grep -v " ok$" | head; exit 1; fi
SH=128x7168x16384,128x4096x7168,128x7168x2048,64x4096x7168,256x4096x7168,256x2048x8192,256x4096x14336,256x7168x18432,512x2048x8192,1024x2048x8192
for r in 1 2; do
  for v in base new; do
    if [ $v = base ]; then export NVFP4_PREDECODE_BEFORE=1; else unset NVFP4_PREDECODE_BEFORE; fi
    timeout 200 $B/gemm --shapes $SH --sets 20 --max-seconds 1 --results $OUT/r > $OUT/gemm-$v-$r.log 2>&1
    echo "gemm $v r$r rc=$?"
  done
done
for v in base new new base; do
  if [ $v = base ]; then export NVFP4_PREDECODE_BEFORE=1; else unset NVFP4_PREDECODE_BEFORE; fi
  timeout 200 $B/mlp --tokens 128,256,512,1024 --max-seconds 0.3 --results $OUT/r > $OUT/mlp-$v-$RANDOM.log 2>&1
  echo "mlp $v rc=$?"
done
for v in base new; do
  if [ $v = base ]; then export NVFP4_PREDECODE_BEFORE=1; else unset NVFP4_PREDECODE_BEFORE; fi
  timeout 200 $B/dual_gemm --shapes 128x14336x4096,128x8192x2048,100x2048x2880 --sets 20 --max-seconds 1 --results $OUT/r > $OUT/dual-$v.log 2>&1
  echo "dual $v rc=$?"
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
for kind in ['gemm','dual']:
    fs=sorted(glob.glob(f'{out}/{kind}-*.log'))
    R={os.path.basename(f):rows(f) for f in fs}
    shapes=[]
    for d in R.values():
        for s in d:
            if s not in shapes: shapes.append(s)
    print(kind, ' '.join(os.path.basename(f)[:-4] for f in fs))
    for s in shapes: print(f'{s:>16}', ' '.join(f"{R[os.path.basename(f)].get(s,0):8.1f}" for f in fs))
for f in sorted(glob.glob(f'{out}/mlp-*.log')):
    print('==',os.path.basename(f))
    seen=set()
    for l in open(f):
        if l.startswith('| ') and 'model' not in l and '---' not in l and l not in seen:
            seen.add(l); c=[x.strip() for x in l.split('|')]; print('  ',c[1][:14],c[2],'three',c[3],'none',c[4],'x',c[5],'h',c[6],'def',c[8])
PY
