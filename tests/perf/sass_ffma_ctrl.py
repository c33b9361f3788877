#!/usr/bin/env python3
"""The scheduling control bits of the FFMA runs in an sm_90 SASS listing (`nvdisasm -hex F.cubin`).

Each sm_70+ instruction is 128 bits; nvdisasm -hex prints them as two 64-bit words, the second on the next line. The
top 23 bits of the second word (bits 105-127 of the instruction, `hi >> 41`) are the control field:
  bits 0-3 stall cycles, bit 4 the yield bit (0 = the scheduler may switch warps after this instruction, printed `Y`
  by assemblers; 1 = it stays on this warp), bits 5-7 write scoreboard, 8-10 read scoreboard (7 = none),
  bits 11-16 the scoreboards waited on, bits 17-20 the operand reuse flags (slot a, b, c, d).
A warp that yields loses its operand reuse cache, so an instruction carries either a reuse flag or the yield bit
cleared, never both in ptxas's output.

Prints, for every run of at least --min consecutive FFMA instructions, its length, how many yield, how many carry a
reuse flag, how many do both, and the pattern (`Y` yield, `-` no yield; `r` reuse, `.` none), and a summary line:
`interleaved` when no run has two consecutive FFMA without a yield (ptxas's own interleave: a yield on every other
FFMA at least).

  python3 tests/perf/sass_ffma_ctrl.py listing.sass [--min 16] [--quiet]
"""
import argparse
import re
import sys

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* (0x[0-9a-f]{16}) \*/")
WORD = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def instructions(text):
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = LINE.search(lines[i])
        if m and i + 1 < len(lines) and WORD.match(lines[i + 1]):
            hi = int(WORD.match(lines[i + 1]).group(1), 16)
            out.append((int(m.group(1), 16), m.group(2).strip(), int(m.group(3), 16), hi))
            i += 2
        else:
            i += 1
    return out


def control(hi):
    c = hi >> 41
    return {"stall": c & 15, "yield": ((c >> 4) & 1) == 0, "reuse": (c >> 17) & 15}


def mnemonic(text):
    text = re.sub(r"^@!?U?P[0-9T]\s+", "", text)
    return text.split()[0] if text else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("listing", help="nvdisasm -hex output ('-' for stdin)")
    ap.add_argument("--min", type=int, default=16, help="shortest run of consecutive FFMA reported (default 16)")
    ap.add_argument("--quiet", action="store_true", help="the summary line only")
    a = ap.parse_args()
    text = sys.stdin.read() if a.listing == "-" else open(a.listing).read()
    ins = instructions(text)
    if not ins:
        sys.exit("no instructions with encodings found: run nvdisasm with -hex")
    runs, cur = [], []
    for k in ins:
        if mnemonic(k[1]).split(".")[0] == "FFMA":
            cur.append(k)
        else:
            if len(cur) >= a.min:
                runs.append(cur)
            cur = []
    if len(cur) >= a.min:
        runs.append(cur)
    interleaved = bool(runs)
    totals = [0, 0, 0, 0]
    for r in runs:
        cs = [control(k[3]) for k in r]
        y = sum(c["yield"] for c in cs)
        ru = sum(c["reuse"] != 0 for c in cs)
        both = sum(c["yield"] and c["reuse"] != 0 for c in cs)
        longest, stretch = 0, 0  # the most consecutive FFMA without a yield
        for c in cs:
            stretch = 0 if c["yield"] else stretch + 1
            longest = max(longest, stretch)
        interleaved = interleaved and longest <= 1
        for t, v in enumerate((len(r), y, ru, both)):
            totals[t] += v
        if not a.quiet:
            pat = " ".join(("Y" if c["yield"] else "-") + ("r" if c["reuse"] else ".") for c in cs)
            print(f"run at 0x{r[0][0]:05x}: {len(r)} FFMA, {y} yield, {ru} reuse, {both} both, "
                  f"at most {longest} in a row without a yield")
            print("  " + pat)
    print(f"{len(runs)} runs of >= {a.min} FFMA: {totals[0]} FFMA, {totals[1]} yield, {totals[2]} reuse, "
          f"{totals[3]} both; {'interleaved' if interleaved else 'not interleaved'}")


if __name__ == "__main__":
    main()
