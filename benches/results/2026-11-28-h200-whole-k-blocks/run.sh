#!/usr/bin/env bash
# Whole-K decode blocks with fewer warps an SM and more steps a warp (planner constants) against main (H200).
# Run from the repository root (see decode-ab.sh).
PACK=b53 TESTS="" DUAL=1x4096x7168,1x14336x4096,1x18432x7168,1x8192x2048,4x14336x4096 GEMM=1x4096x7168,4x4096x7168,1x4096x14336,1x7168x18432,1x7168x16384,1x7168x2048,1x2048x8192 MLP_TOKENS=1 \
  bash "$(dirname "$0")/../2026-11-28-h200-uniform-decode-bounds/decode-ab.sh"
