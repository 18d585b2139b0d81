#!/usr/bin/env bash
# Side-by-side timing of several builds of benches/dual_gemm on the GPU machine: each round runs
# every binary once, in turn, on the same shapes (so clocks and neighbours drift alike), then a
# table of each shape's median µs per binary is printed last. Run from the repository root so
# that the bench finds benches/torch_baseline.py (its PyTorch columns).
#   bash .gpu-bundle/ab.sh ROUNDS SHAPES LABEL=BINARY [LABEL=BINARY ...]
# e.g. bash .gpu-bundle/ab.sh 3 bench,decode main=.gpu-bundle/exp/dual_gemm-main new=.gpu-bundle/benches/dual_gemm
# Logs: $OUT/ab-LABEL-ROUND.log (or /tmp).
set -u
if [ $# -lt 3 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
rounds=$1 shapes=$2
shift 2
logs="${OUT:-/tmp}"
labels=()
for spec in "$@"; do
  labels+=("${spec%%=*}")
done
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    label=${spec%%=*} binary=${spec#*=}
    echo "== round $round: $label ($binary)"
    timeout "${NVFP4_RUN_TIMEOUT:-300}" "$binary" --shapes "$shapes" --max-seconds "${AB_MAX_SECONDS:-2}" \
      >"$logs/ab-$label-$round.log" 2>&1 || echo "   $label failed in round $round: exit $?"
    grep '^| [0-9]' "$logs/ab-$label-$round.log" | cut -d'|' -f2,3 | tr '\n' ';'
    echo
  done
done
python3 - "$logs" "$rounds" "${labels[@]}" <<'PY'
import statistics, sys
logs, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = {}  # shape -> label -> [µs]
order = []
for label in labels:
    for r in range(1, rounds + 1):
        try:
            lines = open(f"{logs}/ab-{label}-{r}.log").read().splitlines()
        except OSError:
            continue
        for line in lines:
            cells = [c.strip() for c in line.split("|")]
            if len(cells) > 2 and cells[1][:1].isdigit():
                shape = cells[1]
                if shape not in times:
                    order.append(shape)
                try:
                    times.setdefault(shape, {}).setdefault(label, []).append(float(cells[2]))
                except ValueError:
                    pass
print()
print("| shape | " + " | ".join(f"{l} µs (median of {rounds})" for l in labels) + " | " +
      " | ".join(f"{l}/{labels[0]}" for l in labels[1:]) + " |")
print("|" + " --- |" * (1 + 2 * len(labels) - 1))
for shape in order:
    med = [statistics.median(times[shape][l]) if times[shape].get(l) else None for l in labels]
    cells = [f"{m:.1f}" if m is not None else "—" for m in med]
    ratios = [f"{m / med[0]:.3f}" if m is not None and med[0] else "—" for m in med[1:]]
    print(f"| {shape} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
PY
