"""Summarizes Nsight Compute's per-instruction warp-state samples of one kernel launch.

  ncu --clock-control none -k regex:KERNEL --launch-count 1 --set full --import-source no -o REP BINARY ...
  ncu -i REP.ncu-rep --page source --csv --print-source sass > SOURCE.csv
  python3 scripts/ncu-stalls.py SOURCE.csv [TOP] [WINDOW]

Prints the samples per stall reason, the TOP (default 40) instructions with the most samples
(their index in the SASS, executions and two largest reasons), then the share of samples in
every window of WINDOW (default 100) consecutive instructions that holds at least 0.4 % of them
(with the window's executions and wgmmas: the stage loop, the epilogue and the producer stand
out as separate windows).
"""
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def main(path, top=40, window=100):
    rows = list(csv.reader(open(path)))
    # The first row names the kernel; the second holds the column names.
    header, data = rows[1], rows[2:]
    column = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def value(row, name):
        return float(row[column[name]] or 0)

    def opcode(row):
        words = row[column["Source"]].split()
        return words[1] if words[0].startswith("@") else words[0]

    total = sum(value(r, SAMPLES) for r in data)
    executed = sum(value(r, EXECUTED) for r in data)
    print(f"total samples {total:.0f}, instructions executed {executed:.0f}")
    by_reason = sorted(((sum(value(r, h) for r in data), h) for h in reasons), reverse=True)
    for samples, reason in by_reason[:12]:
        print(f"  {reason:28s} {samples:8.0f} {100 * samples / total:5.1f}%")
    print(f"\nthe {top} instructions with the most samples (index, samples, share, executions):")
    ranked = sorted(enumerate(data), key=lambda item: -value(item[1], SAMPLES))
    for index, row in ranked[:top]:
        samples = value(row, SAMPLES)
        largest = sorted(((value(row, h), h[len("stall_"):]) for h in reasons), reverse=True)[:2]
        source = row[column["Source"]].strip()[:58]
        print(
            f"{index:5d} {samples:6.0f} {100 * samples / total:4.1f}% ex={value(row, EXECUTED):9.0f} "
            f"{source:58s} {largest[0][1]}:{largest[0][0]:.0f} {largest[1][1]}:{largest[1][0]:.0f}"
        )
    print(f"\nwindows of {window} instructions with at least 0.4 % of the samples:")
    for start in range(0, len(data), window):
        chunk = data[start : start + window]
        samples = sum(value(r, SAMPLES) for r in chunk)
        if samples / total < 0.004:
            continue
        wgmmas = sum(1 for r in chunk if opcode(r).startswith("HGMMA"))
        first = chunk[0][column["Source"]].strip()[:50]
        print(
            f"{start:5d}-{start + window - 1:5d} samples {100 * samples / total:5.1f}%  "
            f"executed {sum(value(r, EXECUTED) for r in chunk) / 1e6:7.2f}M  wgmmas {wgmmas}  first: {first}"
        )


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
