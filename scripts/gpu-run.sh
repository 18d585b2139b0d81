#!/usr/bin/env bash
# Runner for the binaries that scripts/gpu-bundle.sh bundles; runs on the GPU machine.
#   bash .gpu-bundle/run.sh [tests|examples|benches|all] [FILTER]
# GPU tests must not skip there (NVFP4_REQUIRE_GPU=1). Each binary is killed after
# $NVFP4_RUN_TIMEOUT seconds (default 300), so a hung kernel cannot eat the whole lease.
# Logs go to $OUT (or /tmp) and a summary table is printed last.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
what="${1:-all}"
filter="${2:-}"
logs="${OUT:-/tmp}"
export NVFP4_REQUIRE_GPU=1
summary=()

echo "revision $(cat "$here/REVISION" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>/dev/null

run_one() { # kind name args...
  local kind=$1 name=$2; shift 2
  local log="$logs/$kind-$name.log"
  local start=$SECONDS
  timeout "${NVFP4_RUN_TIMEOUT:-300}" "$here/$kind/$name" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  summary+=("$(printf '%-9s %-28s %-6s %4ss' "$kind" "$name" "$([ "$rc" = 0 ] && echo ok || echo FAIL:$rc)" $((SECONDS - start)))")
}

if [ "$what" = tests ] || [ "$what" = all ]; then
  for t in "$here"/tests/*; do
    run_one tests "$(basename "$t")" --test-threads=1 $filter
  done
fi
if [ "$what" = examples ] || [ "$what" = all ]; then
  for e in "$here"/examples/*; do run_one examples "$(basename "$e")" $filter; done
fi
if [ "$what" = benches ] || [ "$what" = all ]; then
  for b in "$here"/benches/*; do run_one benches "$(basename "$b")" $filter; done
fi

echo
echo "== summary =="
printf '%s\n' "${summary[@]}"
grep -h "test result:" "$logs"/tests-*.log 2>/dev/null | sort | uniq -c
