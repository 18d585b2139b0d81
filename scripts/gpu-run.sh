#!/usr/bin/env bash
# The one runner for the binaries that scripts/gpu-bundle.sh bundles; runs on the GPU machine,
# from the repository root (the benches find benches/*.py there):
#   bash .gpu-bundle/run.sh tests|examples|benches|all [FILTER]   GPU tests must not skip there
#   bash .gpu-bundle/run.sh sanitize [memcheck] [racecheck]        compute-sanitizer on the ops,
#                                                                   each run with its reference check
#   bash .gpu-bundle/run.sh ab ROUNDS "BENCH ARGS" LABEL=BINARY...  side-by-side bench builds
# `ab` runs every binary once per round, in turn, with the same arguments (so clocks and
# neighbours drift alike), each writing its JSON results (`--results`), then prints a table of
# each row's median `ours_us` per build, read from that JSON, and every round's value with the
# median SM clock of its process's timing half (`nvidia-smi` logged every 200 ms), e.g.
#   bash .gpu-bundle/run.sh ab 3 "--shapes bench,decode" old=.gpu-bundle/baseline/dual_gemm-REV \
#       new=.gpu-bundle/benches/dual_gemm
# Every binary is killed after $NVFP4_RUN_TIMEOUT seconds (default 300), so a hung kernel cannot
# eat the whole lease. Logs and results go to $OUT (or /tmp); a summary is printed last.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
logs="${OUT:-/tmp}"
export NVFP4_REQUIRE_GPU=1
summary=()

# Runs one command with the timeout, its output to $logs/NAME.log (and the terminal unless
# QUIET is set), and adds a summary line: NAME, verdict, seconds, and a note picked from the log.
run_logged() { # name note-pattern command...
  local name=$1 pattern=$2; shift 2
  local log="$logs/$name.log" start=$SECONDS
  if [ -n "${QUIET:-}" ]; then
    timeout "${NVFP4_RUN_TIMEOUT:-300}" "$@" >"$log" 2>&1
  else
    timeout "${NVFP4_RUN_TIMEOUT:-300}" "$@" 2>&1 | tee "$log"
    ( exit "${PIPESTATUS[0]}" )
  fi
  local rc=$?
  local note=""
  [ -n "$pattern" ] && note=$(grep -E "$pattern" "$log" | tail -1)
  summary+=("$(printf '%-40s %-7s %4ss  %s' "$name" "$([ "$rc" = 0 ] && echo ok || echo "FAIL:$rc")" \
    $((SECONDS - start)) "$note")")
  return $rc
}

binaries() { # kind filter
  local kind=$1 filter=$2
  for b in "$here/$kind"/*; do
    [ -f "$b" ] || continue
    case "$kind" in
      tests) run_logged "tests-$(basename "$b")" "test result:" "$b" --test-threads=1 $filter ;;
      *) run_logged "$kind-$(basename "$b")" "" "$b" $filter ;;
    esac
  done
}

sanitize() { # tools...
  local tools="${*:-memcheck racecheck}" b="$here"
  one() { # tool name command...
    local tool=$1 name=$2; shift 2
    QUIET=1 run_logged "san-$tool-$name" "ERROR SUMMARY|RACECHECK SUMMARY" \
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$@"
    echo "${summary[-1]}"
  }
  for tool in $tools; do
    one $tool dual-7x512x1024 $b/examples/dual_gemm --m 7 --n 512 --k 1024 --check-only
    one $tool dual-16x4096x7168 $b/examples/dual_gemm --m 16 --n 4096 --k 7168 --check-only
    one $tool dual-3x64x2880 $b/examples/dual_gemm --m 3 --n 64 --k 2880 --check-only # decode-size: 23 splits, a half last step
    one $tool dual-1x14336x4096 $b/examples/dual_gemm --m 1 --n 14336 --k 4096 --check-only # whole-K CTAs of 4 warps
    one $tool dual-5x4096x7232 $b/examples/dual_gemm --m 5 --n 4096 --k 7232 --check-only # whole-K, 16 warps, a half last step
    one $tool dual-16x12544x4096 $b/examples/dual_gemm --m 16 --n 12544 --k 4096 --check-only # two token tiles straight from global memory (no room for the copy)
    one $tool gemm-1x4096x7168 $b/examples/dual_gemm --op gemm --m 1 --n 4096 --k 7168 --check-only # whole-K, tokens loaded beside the weights
    one $tool gemm-6x4096x7232 $b/examples/dual_gemm --op gemm --m 6 --n 4096 --k 7232 --check-only # the same, a half last step
    one $tool gemm-16x2048x8192 $b/examples/dual_gemm --op gemm --m 16 --n 2048 --k 8192 --check-only # two token tiles through the copy
    one $tool dual-30x2048x2304 $b/examples/dual_gemm --m 30 --n 2048 --k 2304 --check-only
    one $tool dual-64x512x1024 $b/examples/dual_gemm --m 64 --n 512 --k 1024 --check-only
    one $tool dual-512x4096x320 $b/examples/dual_gemm --m 512 --n 4096 --k 320 --check-only # 256-token tiles
    one $tool moe-small $b/examples/moe --tokens 24 --experts 8 --top-k 2 --hidden 512 --intermediate 256
    one $tool grouped-benchmark-cases $b/tests/gpu_grouped --test-threads=1 --exact \
      grouped_gemm_matches_the_reference_on_the_benchmark_cases_in_both_conventions
  done
  case " $tools " in *" memcheck "*)
    one memcheck dual-256x4096x7168 $b/examples/dual_gemm --m 256 --n 4096 --k 7168 --check-only
    one memcheck moe-gptoss-2880 $b/examples/moe --tokens 100 --experts 16 --top-k 4 --hidden 2880 --intermediate 2880
    one memcheck plain-gemm-tiles $b/tests/gpu_dual_gemm --test-threads=1 --exact \
      the_plain_gemm_matches_the_reference_on_every_tile_and_decode_size
  ;; esac
}

ab() { # rounds "bench args" label=binary...
  local rounds=$1 args=$2; shift 2
  local labels=()
  for spec in "$@"; do labels+=("${spec%%=*}"); done
  # The SM clock beside the runs (every 200 ms), so that each round can be read with the clock
  # it ran at.
  local clocks="$logs/ab-clocks.csv" clock_log=""
  rm -f "$logs/ab-windows.txt"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,clocks.sm --format=csv,noheader -lms 200 >"$clocks" 2>/dev/null &
    clock_log=$!
  fi
  for round in $(seq 1 "$rounds"); do
    for spec in "$@"; do
      local label=${spec%%=*} binary=${spec#*=}
      local dir="$logs/ab-$label-$round"
      rm -rf "$dir"
      local start; start=$(date +%s.%N)
      QUIET=1 run_logged "ab-$label-$round" "" "$binary" $args --results "$dir"
      echo "$label $round $start $(date +%s.%N)" >>"$logs/ab-windows.txt"
      echo "${summary[-1]}"
    done
  done
  [ -n "$clock_log" ] && kill "$clock_log"
  python3 - "$logs" "$rounds" "${labels[@]}" <<'PY'
import datetime, glob, json, os, statistics, sys, time
logs, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def clock_samples():
    """(epoch seconds, SM MHz) from the clock log (nvidia-smi prints local time)."""
    samples = []
    path = f"{logs}/ab-clocks.csv"
    for line in open(path) if os.path.exists(path) else []:
        try:
            stamp, mhz = [f.strip() for f in line.split(",")[:2]]
            when = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f")
            samples.append((time.mktime(when.timetuple()) + when.microsecond / 1e6, int(mhz.split()[0])))
        except ValueError:
            pass
    return samples

def round_clocks(samples):
    """{(label, round): " @MHz"}: each round's median SM clock over the last half of its process
    (where it times)."""
    clocks = {}
    windows = f"{logs}/ab-windows.txt"
    for line in open(windows) if os.path.exists(windows) else []:
        label, number, start, end = line.split()
        middle, end = (float(start) + float(end)) / 2, float(end)
        inside = [mhz for t, mhz in samples if middle <= t <= end]
        if inside:
            clocks[(label, int(number))] = f" @{round(statistics.median(inside))} MHz"
    return clocks

clock_of = round_clocks(clock_samples())

def rows(document):
    """(row name, ours µs) of a bench's JSON: dual_gemm shapes (and their NVFP4-output times),
    grouped cases, quantize inputs."""
    for s in document.get("shapes", []):
        yield f"{s['m']}x{s['n']}x{s['k']}", s.get("ours_us")
    for s in document.get("shapes", []):
        if s.get("ours_nvfp4_out_us") is not None:
            yield f"{s['m']}x{s['n']}x{s['k']} nvfp4 out", s["ours_nvfp4_out_us"]
    for c in document.get("cases", []):
        yield c["case"], c.get("ours_us")
    for i in document.get("inputs", []):
        yield f"{i['input']} {i['rows']}x{i['k']}", i.get("ours_us")

times, order, rounds_of = {}, [], {}
for label in labels:
    for r in range(1, rounds + 1):
        for path in sorted(glob.glob(f"{logs}/ab-{label}-{r}/*.json")):
            if path.endswith("grouped-cases.json"):
                continue
            for name, us in rows(json.load(open(path))):
                if name not in order:
                    order.append(name)
                if us is not None:
                    times.setdefault(name, {}).setdefault(label, []).append(us)
                    rounds_of.setdefault(name, {}).setdefault(label, []).append(
                        f"r{r} {us:.1f}{clock_of.get((label, r), '')}")
print()
print("| row | " + " | ".join(f"{l} µs (median of {rounds})" for l in labels) + " | " +
      " | ".join(f"{l}/{labels[0]}" for l in labels[1:]) + " |")
print("|" + " --- |" * (2 * len(labels)))
for name in order:
    med = [statistics.median(times[name][l]) if times.get(name, {}).get(l) else None for l in labels]
    cells = [f"{m:.2f}" if m is not None else "—" for m in med]
    ratios = [f"{m / med[0]:.3f}" if m is not None and med[0] else "—" for m in med[1:]]
    print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
# Every round's value too: a round is a process of its own, and a row can sit in one of two
# levels per process (the grouped Qwen3-30B decode case: ≈ 104 or ≈ 114 µs for the same build on
# one H100), so compare rounds of the same level before reading a median ratio; each round's
# median SM clock over the second half of its process (the timing) stands beside it.
print()
print("each round:")
for name in order:
    print(f"  {name}: " + "; ".join(
        f"{l} " + ", ".join(rounds_of.get(name, {}).get(l, [])) for l in labels))
PY
}

echo "revision $(cat "$here/REVISION" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>/dev/null
what="${1:-all}"
[ $# -gt 0 ] && shift
case "$what" in
  tests|examples|benches) binaries "$what" "${1:-}" ;;
  all) for kind in tests examples benches; do binaries $kind "${1:-}"; done ;;
  sanitize) sanitize "$@" ;;
  ab)
    if [ $# -lt 3 ]; then sed -n '2,13p' "$0" >&2; exit 2; fi
    ab "$@" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
echo
echo "== summary =="
printf '%s\n' "${summary[@]}"
grep -h "test result:" "$logs"/tests-*.log 2>/dev/null | sort | uniq -c
