"""Summarizes one trace-<case>.txt of the timeline build (exp/timeline): per phase, the min /
median / max over CTAs in µs from the origin. Usage: timeline.py TRACE [SEGMENTS] (8 for run1
and run2, whose build traced 8 segments a CTA; 7 after, with the producer words 28-31)."""
import sys, statistics as st
f = sys.argv[1]
SEG = int(sys.argv[2]) if len(sys.argv) > 2 else 7
rows = {"tiled": [], "prepare": [], "decode": []}
for l in open(f):
    p = l.split()
    rows[p[0]].append((int(p[1]), [int(x) for x in p[2:]]))
def q(v):
    v = sorted(v)
    if not v: return "-"
    return f"{v[0]/1e3:7.2f} {v[len(v)//2]/1e3:7.2f} {v[-1]/1e3:7.2f}"
t = rows["tiled"]
allt = [w for _, r in t for w in r[1:] if w] + [w for _, r in rows["prepare"] for w in r[1:] if w] + [w for _, r in rows["decode"] for w in r[1:] if w]
# origin: the GEMM's latest 'after wait' minus... use the prep pass after-wait min if present else tiled entry min
if rows["prepare"]:
    origin = min(r[2] for _, r in rows["prepare"] if r[2])
    print("origin: prepare pass after its wait (min)")
    pr = rows["prepare"]
    print(f"prepare CTAs {len(pr)}: entry {q([r[1]-origin for _,r in pr])} | after wait {q([r[2]-origin for _,r in pr])} | end {q([r[3]-origin for _,r in pr if r[3]])}")
else:
    origin = min(r[2] for _, r in t)
    print("origin: GEMM after its wait (min)")
if t:
    names = ["entry", "after wait", "table", "producer after wait", "first weights", "seg0 start", "seg0 mainloop end", "seg0 end"]
    print(f"tiled CTAs {len(t)} (min median max µs from origin)")
    for i, n in enumerate(names):
        v = [r[1 + i] - origin for _, r in t if r[1 + i]]
        print(f"  {n:22s} {q(v)}")
    segs = [sum(1 for s in range(SEG) if r[6 + 3*s]) for _, r in t]
    print("  segments per CTA:", sorted(set(segs)), "mean", st.mean(segs))
    end = [r[6 + 3*SEG] - origin for _, r in t if r[6 + 3*SEG]]
    for i, n in ([] if SEG == 8 else [(31, 'wprod: first next()'), (28, 'wprod: first segment'), (29, 'wprod: first stage issued'), (30, 'tprod: first copy issued')]):
        v = [r[i] - origin for _, r in t if r[i]]
        print(f'  {n:22s} {q(v)}')
    print(f"  {'end':22s} {q(end)}")
    ml = [r[7 + 3*s] - r[6 + 3*s] for _, r in t for s in range(SEG) if r[6+3*s] and r[7+3*s]]
    ep = [r[8 + 3*s] - r[7 + 3*s] for _, r in t for s in range(SEG) if r[7+3*s] and r[8+3*s]]
    print(f"  segment mainloop       {q(ml)}")
    print(f"  segment end (epilogue/fix-up) {q(ep)}")
d = rows["decode"]
if d:
    e = sorted(r[1]-origin for _, r in d)
    w = sorted(r[2]-origin for _, r in d)
    x = sorted(r[3]-origin for _, r in d if r[3])
    print(f"decode CTAs {len(d)}: entry {q(e)} | after wait {q(w)} | end {q(x)}")
    dur = [r[3]-r[2] for _, r in d if r[3]]
    print(f"  CTA duration after wait {q(dur)}")
    # concurrency over time: bins of 1 us
    import collections
    end_t = max(x)
    bins = collections.Counter()
    for _, r in d:
        if r[3]:
            a, b = max(r[2], r[1]) - origin, r[3] - origin
            for k in range(int(a//1000), int(b//1000)+1):
                bins[k] += 1
    print("  running CTAs per µs:", " ".join(f"{bins[k]}" for k in range(0, int(end_t//1000)+1)))
    starts = collections.Counter(int((r[2]-origin)//1000) for _, r in d)
    print("  CTA starts (after wait) per µs:", " ".join(f"{starts[k]}" for k in range(0, int(end_t//1000)+1)))
