#!/usr/bin/env bash
# Decode-size kernels triggering their dependents at their start against main (H200).
# Run from the repository root (see decode-ab.sh).
PACK=b52 TESTS="gpu_dual_gemm gpu" DUAL=1x4096x7168,16x4096x7168,1x14336x4096,1x18432x7168,16x14336x4096,1x8192x2048,8x14336x4096 GEMM=1x4096x7168,16x4096x7168,1x4096x14336,16x4096x14336,1x7168x18432,16x7168x18432,1x7168x2048,1x2048x8192 MLP_TOKENS=1,16 \
  bash "$(dirname "$0")/../2026-11-28-h200-uniform-decode-bounds/decode-ab.sh"
