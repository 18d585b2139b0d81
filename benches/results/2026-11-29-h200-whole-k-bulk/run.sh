#!/bin/bash
# Whole-K plain GEMM rows by bulk copies: GPU tests, then benches/gemm A/B (main, bulk) x2.
cd "$(dirname "$0")/.."
mkdir -p /tmp/c14 && tar xzf .gpu-bundle/c14.tgz -C /tmp/c14
B=/tmp/c14/c14
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
S=1x4096x7168,1x7168x2048,1x2048x8192,4x4096x7168,8x4096x7168,1x7168x16384,1x4096x14336
for r in 1 2; do
  for v in main bulk; do
    timeout 100 $B/gemm_$v --bench --shapes $S --sets 10 --max-seconds 0.3 --results /tmp/res-$v-$r > /tmp/gemm-$v-$r.log 2>&1; echo "$v $r rc=$?"
  done
done
cat /tmp/gemm-*.log > $OUT/gemm-ab.log
python3 - <<'PY'
import re,glob
rows={}
for f in sorted(glob.glob('/tmp/gemm-*.log')):
    v,r=f.split('-')[1],f.split('-')[2][0]
    for l in open(f):
        m=re.match(r'\|\s*(\d+×\d+×\d+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)',l)
        if m: rows.setdefault(m.group(1),{})[(v,r)]=(float(m.group(2)),float(m.group(3)))
print('| shape | main r1 | bulk r1 | main r2 | bulk r2 | bulk/main | cuBLAS fp16 (main r1) |')
for s,d in rows.items():
    g=lambda k: d.get(k,(float('nan'),0))[0]
    ratio=(g(('bulk','1'))+g(('bulk','2')))/(g(('main','1'))+g(('main','2')))
    print(f"| {s} | {g(('main','1')):.2f} | {g(('bulk','1')):.2f} | {g(('main','2')):.2f} | {g(('bulk','2')):.2f} | {ratio:.3f} | {d.get(('main','1'),(0,0))[1]:.2f} |")
PY
timeout 150 $B/gpu_dual_gemm --test-threads 1 > $OUT/gpu_dual_gemm.log 2>&1; echo "gpu_dual_gemm rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_dual_gemm.log | head -5
timeout 100 $B/gpu --test-threads 1 > $OUT/gpu.log 2>&1; echo "gpu rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu.log | head -5
