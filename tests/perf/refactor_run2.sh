#!/usr/bin/env bash
# Second device call: re-time the three cases that moved, the quick matrix of every kernel, attn.bwd.mma's first run.
D=$(cd "${1:?usage: BUNDLE_DIR (see refactor_check_device.sh)}" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tl_c2 TILELAB_DB=/tmp/tl_db2
R=${OUT:-/tmp}; mkdir -p $R/r2
CASES=("attn.fwd.wgmma|batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128|" "gemm.simt|M=4096,N=4096,K=4096|"
       "attn.fwd.mma|batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128|block_M=128,block_N=128,warps=8")
for r in 1 2 3 4; do for side in before after; do for i in 0 1 2; do
  IFS='|' read -r k p c <<<"${CASES[$i]}"
  timeout 60 $D/$side/tilelab bench $k --problem $p ${c:+--config $c} --kernels-dir $D/$side/kernels --no-store --json $R/r2/$i.$side.$r.json > /dev/null 2>&1 || echo "fail $i $side $r"
done; done; done
python3 - $R/r2 <<'PY'
import json, sys, statistics
R = sys.argv[1]
for i in range(3):
    row = {}
    for s in ("before", "after"):
        ms = [json.load(open(f"{R}/{i}.{s}.{r}.json"))["time_ms"]["median"] for r in range(1, 5)]
        row[s] = ms
    b, a = statistics.median(row["before"]), statistics.median(row["after"])
    print(i, json.load(open(f"{R}/{i}.after.1.json"))["kernel"], "before", [round(x, 4) for x in row["before"]], "after", [round(x, 4) for x in row["after"]], "ratio %.4f" % (a / b))
PY
export TILELAB_KERNELS_DIR=$D/after/kernels
timeout 240 $D/after/tilelab test > $R/quick.txt 2>&1; echo "quick matrix rc=$?"; grep -iE "passed|failed|skipped" $R/quick.txt | tail -3
grep -E "FAIL|fault|timeout" $R/quick.txt | head -5
timeout 150 $D/after/tilelab test --kernel attn.bwd.mma > $R/bwd_test.txt 2>&1; echo "attn.bwd.mma quick rc=$?"; tail -2 $R/bwd_test.txt
grep -E "FAIL|fault|timeout" $R/bwd_test.txt | head -5
for p in batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128 batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128,causal=true batch=2,seq_q=16384,seq_k=16384,heads=16,dim=128 batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64; do
  timeout 60 $D/after/tilelab bench attn.bwd.mma --problem $p --no-store 2>&1 | grep -E "TFLOP|PASS|FAIL|error" | head -3 | tr '\n' ' '; echo " <- $p"
done
