#!/usr/bin/env bash
# Tests and benches of one build against main's binaries, side by side.
mkdir -p p && tar xJf .gpu-pack/bins.tar.xz -C p
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
export NVFP4_REQUIRE_GPU=1
for t in gpu_dual_gemm gpu gpu_grouped; do
  timeout 300 p/test-$t --test-threads 1 > $OUT/test-$t.txt 2>&1; echo "test $t rc $?: $(grep -E 'test result|passed|failed' $OUT/test-$t.txt | tail -1)"
done
bash .gpu-pack/run.sh ab 3 "--shapes 1x4096x7168,16x4096x7168,1x2048x8192,16x2048x8192,12x2048x8192,1x4096x14336,16x4096x14336,1x7168x18432,1x7168x2048,8x4096x7168 --sets 20 --max-seconds 1" gbase=p/gemm-main gnew=p/gemm-new > $OUT/ab-gemm.txt 2>&1
bash .gpu-pack/run.sh ab 2 "--shapes 1x4096x7168,16x4096x7168,1x8192x2048,16x8192x2048 --sets 20 --max-seconds 1" dbase=p/dual-main dnew=p/dual-new > $OUT/ab-dual.txt 2>&1
bash .gpu-pack/run.sh ab 3 "--max-seconds 0.5" qbase=p/quantize-main qnew=p/quantize-new > $OUT/ab-quantize.txt 2>&1
for f in gemm dual quantize; do echo "== $f"; grep "^|" $OUT/ab-$f.txt; done
#!/usr/bin/env bash
# The MLP layer from CUDA graphs, wheels of main and of the working tree in turn.
for w in base new; do pip install -q --no-index --no-deps --target /tmp/site-$w .gpu-pack/whl-$w/*.whl > /dev/null 2>&1; done
cases="2048x8192x1 2048x8192x16 2048x8192x64 4096x14336x1 4096x14336x16 7168x18432x1 7168x18432x16"
for w in base new new base; do PYTHONPATH=/tmp/site-$w python3 .gpu-pack/mlp_ab.py $w $cases 2>&1 | grep -v -i warn; done | tee $OUT/mlp-ab.txt
