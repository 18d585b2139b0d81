#!/usr/bin/env bash
mkdir -p p && tar xJf .gpu-pack/bins.tar.xz -C p
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export NVFP4_REQUIRE_GPU=1
timeout 300 p/test-gpu_dual_gemm --test-threads 1 > $OUT/test-gpu_dual_gemm.txt 2>&1; echo "test rc $?: $(grep -E 'test result' $OUT/test-gpu_dual_gemm.txt | tail -1)"
grep -E "40960" $OUT/test-gpu_dual_gemm.txt | head -8
for w in base new; do pip install -q --no-index --no-deps --target /tmp/site-$w .gpu-pack/whl-$w/*.whl > /dev/null 2>&1; done
cases="7168x18432x1 7168x18432x8 4096x14336x1 2048x8192x1"
for w in base new new base; do PYTHONPATH=/tmp/site-$w python3 .gpu-pack/mlp_ab.py $w $cases 2>&1 | grep -v -i warn; done | tee $OUT/mlp-ab.txt
bash .gpu-pack/run.sh ab 2 "--shapes 1x18432x7168,8x18432x7168,1x4096x7168,16x4096x7168,1x14336x4096 --sets 10 --max-seconds 1" dbase=p/dual-base dnew=p/dual-new > $OUT/ab-dual.txt 2>&1
bash .gpu-pack/run.sh ab 2 "--shapes 1x7168x18432,5x40960x256,1x4096x7168 --sets 10 --max-seconds 1" gbase=p/gemm-base gnew=p/gemm-new > $OUT/ab-gemm.txt 2>&1
for f in dual gemm; do grep "^|" $OUT/ab-$f.txt; done
cd $OUT && tar czf logs.tgz ab-*-[12]* && rm -rf ab-*-[12]*
