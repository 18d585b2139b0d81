#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck on the dual GEMM and the grouped ops, each run with its
# reference check; runs on the GPU machine from the bundle (scripts/gpu-bundle.sh):
#   run(command="TOOLS='memcheck racecheck' bash .gpu-bundle/sanitize.sh", carry=[".gpu-bundle"])
# Logs go to $OUT; one summary line per run (exit code, sanitizer summary, pass lines).
b=.gpu-bundle
OUT=${OUT:-/tmp}
S=compute-sanitizer
summary=()
one() { # tool name command...
  local tool=$1 name=$2; shift 2
  local log=$OUT/san-$tool-$name.log
  local start=$SECONDS
  timeout 240 $S --tool $tool --error-exitcode 9 "$@" > $log 2>&1
  local rc=$?
  local verdict=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $log | tail -1)
  local check=$(grep -cE "pass|PASS|test result: ok" $log)
  summary+=("$(printf '%-9s %-34s rc=%-3s %4ss  %s  (pass lines: %s)' $tool $name $rc $((SECONDS-start)) "$verdict" $check)")
  echo "${summary[-1]}"
}
export NVFP4_REQUIRE_GPU=1
for tool in ${TOOLS:-memcheck racecheck}; do
  one $tool dual-7x512x1024 $b/examples/dual_gemm --m 7 --n 512 --k 1024 --check-only
  one $tool dual-16x4096x7168 $b/examples/dual_gemm --m 16 --n 4096 --k 7168 --check-only
  one $tool dual-3x64x2880 $b/examples/dual_gemm --m 3 --n 64 --k 2880 --check-only # decode-size: 23 splits, a half last step, a half row group
  one $tool dual-30x2048x2304 $b/examples/dual_gemm --m 30 --n 2048 --k 2304 --check-only
  one $tool dual-64x512x1024 $b/examples/dual_gemm --m 64 --n 512 --k 1024 --check-only
  one $tool dual-512x4096x320 $b/examples/dual_gemm --m 512 --n 4096 --k 320 --check-only # 256-token tiles
  one $tool moe-small $b/examples/moe --tokens 24 --experts 8 --top-k 2 --hidden 512 --intermediate 256
  one $tool grouped-benchmark-cases $b/tests/gpu_grouped --test-threads=1 --exact grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions
done
case " ${TOOLS:-memcheck racecheck} " in *" memcheck "*)
one memcheck dual-256x4096x7168 $b/examples/dual_gemm --m 256 --n 4096 --k 7168 --check-only
one memcheck moe-gptoss-2880 $b/examples/moe --tokens 100 --experts 16 --top-k 4 --hidden 2880 --intermediate 2880
;; esac
echo "== summary"
printf '%s\n' "${summary[@]}"
