#!/usr/bin/env bash
# The whole-K plain GEMM with staged token rows against main: tests, A/B, MLP (H200).
# Run from the repository root (see decode-ab.sh).
PACK=b51 TESTS="gpu_dual_gemm gpu" DUAL= GEMM=1x4096x7168,2x4096x7168,4x4096x7168,8x4096x7168,1x4096x14336,8x4096x14336,1x7168x18432,1x7168x16384,1x7168x2048,1x2048x8192 MLP_TOKENS=1,8 \
  bash "$(dirname "$0")/../2026-11-28-h200-uniform-decode-bounds/decode-ab.sh"
