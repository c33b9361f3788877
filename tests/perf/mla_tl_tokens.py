# Token boundaries in an mla.sparse_prefill timeline (the Chrome trace of `tilelab timeline --out F.json`), sprefill9:
# consumer 0's and 1's probe warps (4, 8): the last pv of a token, its combine, the next token's first qk; producer warp 0:
# the token's first index region (aux 0) and the gap before it. Writes the first 4 blocks' events to OUT.json.xz.
# Usage: python3 mla_tl_tokens.py TRACE.json OUT.json.xz
import json, sys, lzma, statistics as st
from collections import defaultdict
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
tr = defaultdict(list)
small = []
for e in ev:
    if e.get("ph") != "X":
        continue
    a = e.get("args", {})
    b, w = a.get("block", 0), a.get("warp", 0)
    tr[(b, w)].append((e["ts"], e.get("dur", 0.0), e["name"], a.get("aux"), a.get("stage")))
    if b < 4:
        small.append([b, w, e["name"], a.get("aux"), a.get("stage"), round(e["ts"], 4), round(e.get("dur", 0.0), 4)])
with lzma.open(sys.argv[2], "wt") as f:
    json.dump(small, f)
del ev, d
def md(x):
    return f"median {st.median(x):.3f} mean {st.mean(x):.3f} (n {len(x)})" if x else "-"
blocks = sorted({b for b, _ in tr})
ends = [max(t + du for t, du, *_ in evs) for evs in tr.values()]
starts = [min(t for t, *_ in evs) for evs in tr.values()]
bend = defaultdict(float)
for (b, w), evs in tr.items():
    bend[b] = max(bend[b], max(t + du for t, du, *_ in evs))
g0 = min(starts)
be = sorted(v - g0 for v in bend.values())
print(f"blocks {len(blocks)} span {max(ends) - g0:.1f} us; block ends min {be[0]:.1f} median {st.median(be):.1f} max {be[-1]:.1f}")
for w, who in ((4, "consumer 0"), (8, "consumer 1")):
    pre, comb, post, idle, qk1, qkn, pv = [], [], [], [], [], [], []
    for b in blocks:
        evs = sorted(tr.get((b, w), []))
        for i, (t, du, n, aux, s) in enumerate(evs):
            if n == "qk":
                (qk1 if i == 0 or evs[i - 1][2] == "combine" else qkn).append(du)
            if n == "pv":
                pv.append(du)
            if n != "combine":
                continue
            if i > 0:
                pre.append(t - (evs[i - 1][0] + evs[i - 1][1]))
            comb.append(du)
            if i + 1 < len(evs):
                post.append(evs[i + 1][0] - (t + du))
                if i > 0:
                    idle.append(evs[i + 1][0] - (evs[i - 1][0] + evs[i - 1][1]))
    print(f"{who}: last pv end -> combine {md(pre)}; combine {md(comb)}; combine end -> next qk {md(post)}")
    print(f"{who}: token switch (last pv end -> next token's qk start) {md(idle)}; first qk {md(qk1)}; other qk {md(qkn)}; pv {md(pv)}")
# producer warp 0: per token, the first index region (aux 0) and the gap before it; load_wait of the token's first half
gap, idx0, idxn, lw0, lwn = [], [], [], [], []
for b in blocks:
    evs = sorted(tr.get((b, 0), []))
    for i, (t, du, n, aux, s) in enumerate(evs):
        if n == "index":
            (idx0 if aux == 0 else idxn).append(du)
            if aux == 0 and i > 0:
                gap.append(t - (evs[i - 1][0] + evs[i - 1][1]))
        if n == "load_wait":
            first = i >= 2 and evs[i - 1][2] == "index" and evs[i - 1][3] == 0
            (lw0 if first else lwn).append(du)
print(f"producer w0: gap before a token's first index {md(gap)}; first index {md(idx0)}; other index {md(idxn)}")
print(f"producer w0: first load_wait of a token {md(lw0)}; other load_wait {md(lwn)}")
