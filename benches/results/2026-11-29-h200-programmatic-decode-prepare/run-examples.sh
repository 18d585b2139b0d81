#!/bin/bash
# The MoE example at `main` with the programmatic pass before the decode-size kernel: its
# defaults (16 tokens an expert), then 32 tokens × top-4 over 16 experts (8 an expert: the
# decode-size kernel) under compute-sanitizer memcheck.
cd "$(dirname "$0")/../../.."
tar xzf .gpu-bundle/c30.tgz -C /tmp && B=/tmp/c30
timeout 100 $B/moe > $OUT/examples.txt 2>&1; echo "moe rc=$?"
timeout 150 compute-sanitizer --tool memcheck $B/moe --tokens 32 >> $OUT/examples.txt 2>&1; echo "moe memcheck rc=$?"
grep -E "PASS|FAIL|ERROR SUMMARY|kernel|decode" $OUT/examples.txt | head -12
