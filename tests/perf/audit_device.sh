#!/usr/bin/env bash
# audit1 (session 44): on the GPU machine, bash DIR/audit_device.sh DIR (carry [DIR]). DIR: cmake/bundle_for_device.sh DIR
# build/tilelab (stripped), kernels/, tests/perf/device_env.sh and audit_cases.{lua,txt}, and cache.tar.xz: the NVRTC cache
# filled here without a GPU by `tilelab run tests/perf/audit_cases.lua tests/perf/audit_cases.txt compile` and
# `tilelab test --kernel K --random 5 --seed 20261128` per kernel (only the entries those compile to).
# 1. audit_cases.txt: zero / one / odd-prime / GQA-ratio problems each at the kernel's default config, run checked (rep 3)
#    in one `tilelab run` (audit_cases.lua): PASS, FAIL, REFUSED (before launch, with the reason) or ERROR (with why).
# 2. too-large MLA problems: refused at once (the CPU side's new check, timed here).
# 3. `tilelab test --random 5 --seed 20261128` per kernel (watchdog 5 s a run).
set -u
D=$(cd "$1" && pwd)
. "$D/device_env.sh" audit1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee -a "$S"
t0=$SECONDS
timeout "${CASES_S:-75}" "$T" run --launch-timeout 10 "$D/audit_cases.lua" "$D/audit_cases.txt" run "$(( ${CASES_S:-75} - 10 ))" > "$OUT/cases.txt" 2>&1
echo "cases rc=$? ($((SECONDS - t0)) s): $(tail -1 "$OUT/cases.txt")" | tee -a "$S"
grep -vE " PASS " "$OUT/cases.txt" | cut -c1-330 >> "$S"
for a in "mla.decode batch=16384,seq_k=1048576" "mla.sparse_decode batch=1024,seq_k=262144" "mla.sparse_prefill seq_q=1000003"; do
  s=$SECONDS
  timeout 60 "$T" bench ${a% *} --problem ${a#* } --no-store > /tmp/big.txt 2>&1
  echo "too large: $a rc=$? $((SECONDS - s)) s: $(tail -1 /tmp/big.txt | cut -c1-200)" >> "$S"
done
t1=$SECONDS
echo "tilelab test --random 5 --seed 20261128 (kernel drawn pass refused fail rc s)" >> "$S"
for k in $("$T" kernels --json | python3 -c 'import json,sys; print(" ".join(k["name"] for k in json.load(sys.stdin)))'); do
  left=$(( ${RANDOM_S:-45} - (SECONDS - t1) ))
  [ "$left" -le 2 ] && { echo "$k: not run (RANDOM_S spent)" >> "$S"; continue; }
  s=$SECONDS
  timeout "$(( left < 20 ? left : 20 ))" "$T" test --kernel "$k" --random 5 --seed 20261128 --timeout 5 > "$OUT/random_$k.txt" 2>&1
  rc=$? L=$OUT/random_$k.txt
  echo "$k $(grep -c "^$k " "$L") $(grep -cE "^$k .* PASS " "$L") $(grep -cE "^$k .* SKIP .*refused: " "$L") $(grep -cE "^$k .* FAIL " "$L") rc=$rc $((SECONDS - s))" >> "$S"
  grep -E "^$k .* FAIL " "$L" | cut -c1-300 >> "$S"
done
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls random_*.txt 2>/dev/null) && (cd "$OUT" && rm -f random_*.txt)
echo "==== summary"
cat "$S"
