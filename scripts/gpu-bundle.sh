#!/usr/bin/env bash
# Builds the test, example and bench binaries here (the GPU machine has no Rust) and bundles them
# with scripts/gpu-run.sh into .gpu-bundle/ (git-ignored). Then, with the device tool:
#   run(command="bash .gpu-bundle/run.sh tests|examples|benches|all|sanitize|ab ...", carry=[".gpu-bundle"])
# Each REV of `--baseline REV` (repeatable) adds that revision's benches (dual_gemm, gemm,
# grouped, quantize) and dual_gemm example, built in a temporary worktree, as .gpu-bundle/baseline/BENCH-REV
# (for side-by-side timing with `run.sh ab`) and .gpu-bundle/baseline/example-dual_gemm-REV (its
# reference check: `--m M --n N --k K --check-only`). Only the GPU test binaries (tests/gpu*.rs) are bundled: the
# others need no GPU, and the bundle must stay under the device tool's 64 MiB.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
baselines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baselines+=("$(git rev-parse --short "$2")"); shift 2 ;;
    *) echo "usage: $0 [--baseline REV]..." >&2; exit 2 ;;
  esac
done
bundle=.gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/tests" "$bundle/examples" "$bundle/benches"

# Print "kind<TAB>name<TAB>path" for every executable cargo builds.
executables() {
  python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
        t = msg["target"]
        kind = {"example": "examples", "bench": "benches"}.get(t["kind"][0], "tests")
        print(kind, t["name"], msg["executable"], sep="\t")
'
}

{
  cargo test --release --no-run --message-format=json-render-diagnostics
  cargo build --release --examples --message-format=json-render-diagnostics
  cargo bench --no-run --message-format=json-render-diagnostics
} | executables | sort -u | while IFS=$'\t' read -r kind name path; do
  case "$kind" in tests|examples|benches) cp "$path" "$bundle/$kind/$name" ;; esac
done

# Tests that never touch a GPU: every test binary but tests/gpu*.rs.
find "$bundle/tests" -type f ! -name 'gpu*' -delete

for rev in "${baselines[@]}"; do
  tree="${TMPDIR:-/tmp}/nvfp4-baseline-$rev"
  rm -rf "$tree"
  git worktree add -f --detach "$tree" "$rev" >/dev/null
  mkdir -p "$bundle/baseline"
  (
    cd "$tree"
    export CARGO_TARGET_DIR="${TMPDIR:-/tmp}/nvfp4-baseline-target"
    cargo bench --no-run --bench dual_gemm --bench gemm --bench grouped --bench quantize --message-format=json-render-diagnostics
    cargo build --release --example dual_gemm --message-format=json-render-diagnostics
  ) | executables | while IFS=$'\t' read -r kind name path; do
    case "$kind/$name" in
      benches/dual_gemm|benches/gemm|benches/grouped|benches/quantize) cp "$path" "$bundle/baseline/$name-$rev" ;;
      examples/dual_gemm) cp "$path" "$bundle/baseline/example-dual_gemm-$rev" ;;
    esac
  done
  git worktree remove --force "$tree"
  for built in dual_gemm gemm grouped quantize example-dual_gemm; do
    [ -f "$bundle/baseline/$built-$rev" ] || { echo "no $built built at $rev" >&2; exit 1; }
  done
done

cp scripts/gpu-run.sh "$bundle/run.sh"
git rev-parse --short HEAD > "$bundle/REVISION"
echo "bundled $(find "$bundle" -type f | wc -l) files, $(du -sh "$bundle" | cut -f1), revision $(cat "$bundle/REVISION"):"
find "$bundle" -type f | sort | sed 's/^/  /'
