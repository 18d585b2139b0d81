#!/usr/bin/env bash
# Downloads the GPU MODE harness files the Python GPU MODE tests run (gpu-mode/reference-kernels,
# problems/nvidia/: each NVFP4 problem's reference.py, task.py, task.yml and utils.py, and the
# shared utils.py) at a pinned revision into DIR (default .gpu-extra/gpumode), for
#   NVFP4_GPUMODE_DIR=DIR pytest bindings/python/tests/test_gpumode.py
# They are not vendored: the harness is another project's code. Without network access, set
# GPUMODE_GIT_DIR to a clone's git directory holding the revision: the files are read from it.
set -euo pipefail
revision=f83cb92a534cc67fa98d7e9813e7f8238abdb4e0
dir="${1:-.gpu-extra/gpumode}"
base="https://raw.githubusercontent.com/gpu-mode/reference-kernels/$revision/problems/nvidia"
get() { # path-under-problems/nvidia destination
  if [ -n "${GPUMODE_GIT_DIR:-}" ]; then
    git --git-dir "$GPUMODE_GIT_DIR" show "$revision:problems/nvidia/$1" >"$2" 2>/dev/null
  else
    curl -fsSL "$base/$1" -o "$2"
  fi
}
mkdir -p "$dir"
get utils.py "$dir/utils.py"
for problem in nvfp4_gemv nvfp4_gemm nvfp4_dual_gemm nvfp4_group_gemm; do
  mkdir -p "$dir/$problem"
  for file in reference.py task.py task.yml; do
    get "$problem/$file" "$dir/$problem/$file"
  done
  # Problems with their own utils.py (the others use the shared one).
  get "$problem/utils.py" "$dir/$problem/utils.py" || rm -f "$dir/$problem/utils.py"
done
echo "GPU MODE harness files at $revision in $dir"
