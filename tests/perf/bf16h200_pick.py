#!/usr/bin/env python3
"""gemm.wgmma bf16 screen on the H200 (issue 21 item 2), the call's two readings of gemm_bf16.lua's GEMM_JSONL lines.
  pick SCREEN.txt [N]: per shape, every config by x = cuBLAS median / ours (same row), the default's two rows averaged;
      prints first the GEMM_EXTRA line of the N (2) best non-default configs per shape, then the table.
  rounds ROUNDS.txt: per shape and config, each pass's µs median (min), cuBLAS's, x by medians and minima, and the
      ratio to the default of the same pass; a config 'wins' where it is faster than the default by medians in
      every pass and by minima in every pass; then the geometric mean of x over the shapes per pass, at the defaults
      and with each shape's winner (the best by mean x of those that win), by medians and by minima."""
import json, math, sys
from collections import OrderedDict, defaultdict


def rows(path):
    out = []
    for line in open(path, errors="replace"):
        if line.startswith("JSON "):
            try:
                out.append(json.loads(line[5:]))
            except ValueError:
                pass
    return out


def shape(r):
    p = r["problem"]
    return "%d,%d,%d" % (p["M"], p["N"], p["K"])


def label(r):
    return ",".join("%s=%s" % (k, v) for k, v in sorted(r["config"].items())) if r["config"] else ""


def x(r, key="median_ms"):
    c = r.get("cublas_" + key)
    return c / r[key] if c and r.get(key) else 0.0


def pick(path, n):
    by = OrderedDict()
    for r in rows(path):
        by.setdefault(shape(r), OrderedDict()).setdefault(label(r), []).append(r)
    extra, lines = [], []
    for s, cfgs in by.items():
        mean = lambda rs: sum(x(r) for r in rs) / len(rs)
        xd = mean(cfgs.get("", [])) if "" in cfgs else 0.0
        ranked = sorted(cfgs.items(), key=lambda kv: -mean(kv[1]))
        best = [c for c, _ in ranked if c != "" and all(r["passed"] for r in cfgs[c])][:n]
        extra += ["%s:%s" % (s, c) for c in best]
        nfail = sum(1 for rs in cfgs.values() for r in rs if not r["passed"])
        nchk = sum(1 for rs in cfgs.values() for r in rs if r.get("checked"))
        dflt = cfgs.get("", [])
        lines.append("== screen %s: %d configs, default x %s (rows %s), checked %d, FAIL %d" % (
            s, len(cfgs), "%.3f" % xd, " ".join("%.1f/%.1f us" % (r["median_ms"] * 1e3, r["min_ms"] * 1e3) for r in dflt),
            nchk, nfail))
        for c, rs in ranked:
            r = rs[0]
            lines.append("  %6.3f %6.3f  %8.1f (%8.1f)  cub %8.1f  %s%s %s" % (
                mean(rs), mean(rs) / xd if xd else 0, r["median_ms"] * 1e3, r["min_ms"] * 1e3,
                r["cublas_median_ms"] * 1e3, "PASS" if all(q["passed"] for q in rs) else "FAIL",
                " *" if c in best else "  ", c or "(default)"))
    print(";".join(extra))
    print("\n".join(lines))


def rounds(path):
    by = OrderedDict()
    for r in rows(path):
        by.setdefault(shape(r), OrderedDict()).setdefault(label(r), {})[r["pass"]] = r
    nchk = sum(1 for c in by.values() for ps in c.values() for r in ps.values() if r.get("checked"))
    nfail = sum(1 for c in by.values() for ps in c.values() for r in ps.values() if not r["passed"])
    print("== rounds: %d rows, %d float64-checked, %d FAIL" % (
        sum(len(ps) for c in by.values() for ps in c.values()), nchk, nfail))
    geo = defaultdict(lambda: defaultdict(list))  # ('before'|'after', med|min) -> pass -> [log x]
    for s, cfgs in by.items():
        d = cfgs.get("", {})
        print("-- %s" % s)
        winner, wx = "", 0.0
        for c, ps in cfgs.items():
            cells, rmed, rmin = [], [], []
            for p in sorted(ps):
                r = ps[p]
                cells.append("%.1f (%.1f) cub %.1f (%.1f) x %.3f/%.3f%s" % (
                    r["median_ms"] * 1e3, r["min_ms"] * 1e3, r["cublas_median_ms"] * 1e3, r["cublas_min_ms"] * 1e3,
                    x(r), x(r, "min_ms"), "" if r["passed"] else " FAIL"))
                if c and p in d:
                    rmed.append(d[p]["median_ms"] / r["median_ms"])
                    rmin.append(d[p]["min_ms"] / r["min_ms"])
            win = c != "" and len(rmed) >= 2 and min(rmed) > 1.0 and min(rmin) >= 1.0 and all(
                r["passed"] for r in ps.values())
            mx = sum(x(r) for r in ps.values()) / len(ps)
            if win and mx > wx:
                winner, wx = c, mx
            print("  %s: %s" % (c or "(default)", " | ".join(cells)))
            if c:
                print("     vs default by medians %s, by minima %s%s" % (
                    " ".join("%.3f" % v for v in rmed), " ".join("%.3f" % v for v in rmin), "  WINS" if win else ""))
        print("  winner: %s" % (winner or "(default)"))
        for p in sorted(d):
            w = cfgs[winner].get(p, d[p]) if winner else d[p]
            for k in ("median_ms", "min_ms"):
                geo[("before", k)][p].append(math.log(x(d[p], k)))
                geo[("after", k)][p].append(math.log(x(w, k)))
    for (when, k), ps in sorted(geo.items()):
        print("geomean x %-6s by %-6s: %s" % (when, k[:-3] + "s" if k == "median_ms" else "minima", "  ".join(
            "pass %d %.4f (%d shapes)" % (p, math.exp(sum(v) / len(v)), len(v)) for p, v in sorted(ps.items()))))


if __name__ == "__main__":
    if sys.argv[1] == "pick":
        pick(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2)
    else:
        rounds(sys.argv[2])
