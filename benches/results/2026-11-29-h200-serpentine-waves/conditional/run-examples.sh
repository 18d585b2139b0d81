#!/bin/bash
# The README's main example and the MoE example on main with the serpentine waves, the MoE
# example at 128 tokens per expert (fitted tiles) also under compute-sanitizer memcheck.
cd "$(dirname "$0")/../../../.."
tar xzf .gpu-bundle/c25.tgz -C /tmp && B=/tmp/c25
timeout 120 $B/dual_gemm > $OUT/examples.txt 2>&1; echo "dual_gemm rc=$?"
timeout 60 $B/moe >> $OUT/examples.txt 2>&1; echo "moe rc=$?"
timeout 60 $B/moe --tokens 512 --experts 8 --top-k 2 >> $OUT/examples.txt 2>&1; echo "moe 128/expert rc=$?"
timeout 120 compute-sanitizer --tool memcheck $B/moe --tokens 512 --experts 8 --top-k 2 >> $OUT/examples.txt 2>&1; echo "moe memcheck rc=$?"
grep -E "PASS|FAIL|ERROR SUMMARY|max|error" $OUT/examples.txt | tail -12
