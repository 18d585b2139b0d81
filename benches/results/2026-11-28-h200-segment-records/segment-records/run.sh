#!/usr/bin/env bash
# Segment records from the weight producer: grouped GPU tests, MoE example, racecheck, A/B against main (all grouped cases, 2 rounds).
cd "$(dirname "$0")/.."
mkdir -p /tmp/p && tar xzf .gpu-pack/b17.tgz -C /tmp/p && B=/tmp/p/b17
export NVFP4_TORCH_BASELINE=/none NVFP4_TORCH_GROUPED_BASELINE=/none NVFP4_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader
timeout 200 $B/gpu_grouped-rec --test-threads 1 > $OUT/gpu_grouped-rec.log 2>&1; echo "tests rc=$? $(grep 'test result' $OUT/gpu_grouped-rec.log)"
timeout 60 $B/moe-rec --tokens 128 --experts 16 --top-k 4 > $OUT/moe-rec.log 2>&1; echo "moe rc=$? $(tail -2 $OUT/moe-rec.log | tr '\n' ' ')"
for r in 1 2; do for b in main rec; do
  timeout 150 $B/grouped-$b --sets 10 --max-seconds 0.4 > $OUT/ab-$b-r$r.log 2>&1
  echo "== $b r$r rc=$? $(grep -E '^\| (gpumode|deep|qwen|gpt)' $OUT/ab-$b-r$r.log | awk -F'|' '{printf "%s %s| ", $2, $9}')"
done; done
python3 - $OUT <<'PY'
import sys,re,glob,statistics,collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1]+'/ab-*-r*.log'):
    b=re.search(r'ab-(\w+)-r',f).group(1)
    for l in open(f):
        c=l.split('|')
        if len(c)>9 and re.match(r' (gpumode|deep|qwen|gpt)',c[1]):
            d[c[1].strip()][b].append(float(c[8]))
for k,v in d.items():
    m=statistics.median(v['main']); r=statistics.median(v['rec'])
    print(f"{k:24s} main {m:9.1f} rec {r:9.1f} ratio {r/m:.3f}")
PY
NCS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $NCS --tool racecheck $B/gpu_grouped-rec groups_without_rows --test-threads 1 > $OUT/racecheck.log 2>&1; echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|test result' $OUT/racecheck.log | tr '\n' ' ')"
