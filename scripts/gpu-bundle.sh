#!/usr/bin/env bash
# Builds the test, example and bench binaries here (the GPU machine has no Rust) and bundles them
# with scripts/gpu-run.sh into .gpu-bundle/ (git-ignored). Then, with the device tool:
#   run(command="bash .gpu-bundle/run.sh [tests|examples|benches|all] [FILTER]", carry=[".gpu-bundle"])
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
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

cp scripts/gpu-run.sh "$bundle/run.sh"
cp scripts/sanitize.sh "$bundle/sanitize.sh"
cp scripts/ab-bench.sh "$bundle/ab.sh"
git rev-parse --short HEAD > "$bundle/REVISION"
echo "bundled $(find "$bundle" -type f | wc -l) files, $(du -sh "$bundle" | cut -f1), revision $(cat "$bundle/REVISION"):"
find "$bundle" -type f | sort | sed 's/^/  /'
