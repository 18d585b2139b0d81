#!/bin/bash
cd "$(dirname "$0")/.."
tar xzf .gpu-bundle/b3.tgz -C /tmp && B=/tmp/b3
SH=128x7168x2048,128x4096x7168,1024x2048x8192
run() { name=$1; shift; env "$@" timeout 100 $B/gemm --shapes $SH --sets 20 --max-seconds 1 --results $OUT/r > $OUT/g-$name.log 2>&1; echo "$name rc=$?"; }
run A-base NVFP4_PREDECODE_BEFORE=1
run B-beside X=1
run C-beside-plain NVFP4_PLAIN_LAUNCH=1
run D-base-plain NVFP4_PREDECODE_BEFORE=1 NVFP4_PLAIN_LAUNCH=1
rm -rf $OUT/r
for f in $OUT/g-*.log; do echo "== $(basename $f)"; grep "^| [0-9]" $f | cut -d'|' -f2-4; done
