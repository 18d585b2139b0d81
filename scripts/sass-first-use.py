#!/usr/bin/env python3
"""Lists, for every global load of a kernel's mainloop, how far its first consumer comes after it.

    cuobjdump -sass -fun nvfp4_gemm_sm90_t128 module.cubin > gemm.sass
    python3 scripts/sass-first-use.py gemm.sass [MMA]

A load whose destination registers are read a few instructions later stalls its warp there
for the load's whole round trip; in the tiled mainloops a weight or scale load's first use
belongs in the stage's last slice (about 250 instructions and 12 `HGMMA` on), and in the
decode-size loops one step on (8 or 16 `HMMA`). Perf log entry 92: a shift placed next to an
8-byte scale load made every plain row 5–25 % slower.

The mainloop is taken as the span around the kernel's MMA instructions (`HGMMA`, or the
opcode given, e.g. `HMMA`). For each `LDG` there the first later instruction that reads one of
its destination registers is printed with the distance in instructions and MMAs. Registers
are matched by number only, so a register reused for another value can end the search early:
read the printed consumer.
"""
import re
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")
REGISTER = re.compile(r"\bR(\d+)\b")
PREDICATE = re.compile(r"^@!?U?P\w+\s+")


def instructions(path):
    """The SASS instructions of a `cuobjdump -sass` listing, without predicates."""
    found = []
    for line in open(path):
        match = INSTRUCTION.match(line)
        if match:
            found.append(PREDICATE.sub("", match.group(2).strip()))
    return found


def sources(instruction, mma):
    """The register numbers an instruction reads (all operands after the destination; an MMA
    also reads its accumulator, which is its destination)."""
    parts = instruction.split(None, 1)
    if len(parts) < 2:
        return set()
    operands = [operand.strip() for operand in parts[1].split(",")]
    read = operands if parts[0].startswith(mma) else operands[1:]
    return {int(r) for operand in read for r in REGISTER.findall(operand)}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    mma = sys.argv[2] if len(sys.argv) == 3 else "HGMMA"
    code = instructions(sys.argv[1])
    mmas = [i for i, text in enumerate(code) if text.startswith(mma)]
    if not mmas:
        sys.exit(f"no {mma} in {sys.argv[1]}")
    start, end = max(0, mmas[0] - 400), min(len(code), mmas[-1] + 60)
    for i in range(start, end):
        opcode = code[i].split(None, 1)[0]
        if not opcode.startswith("LDG"):
            continue
        first = int(REGISTER.findall(code[i])[0])
        width = 4 if ".128" in opcode else 2 if ".64" in opcode else 1
        loaded = set(range(first, first + width))
        for j in range(i + 1, end):
            if loaded & sources(code[j], mma):
                between = sum(1 for k in range(i, j) if code[k].startswith(mma))
                print(f"{opcode:28s} R{first:<4d} first read +{j - i:4d} instructions, "
                      f"{between:2d} {mma}: {code[j][:64]}")
                break
        else:
            print(f"{opcode:28s} R{first:<4d} not read in the span")


if __name__ == "__main__":
    main()
