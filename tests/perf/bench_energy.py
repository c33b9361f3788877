#!/usr/bin/env python3
"""tilelab benches under an NVML sampler: joules a run and the SM clock of a kernel and its --vs baseline (docs/perf.md,
attnbwd15: attn.bwd.wgmma beside cuDNN at the H100's 700 W cap).

Usage (on the GPU machine; T = the tilelab binary, KERNEL default attn.bwd.wgmma, GAP_S idle seconds between benches):
bench_energy.py OUT CASES_FILE. CASES_FILE lines: label|problem|config|repeat|vs (config -: the defaults; vs: cudnn,
cublas or -). A thread reads the GPU's energy counter (mJ), power (mW), SM clock (MHz), clock event reasons and
temperature every ~10 ms; the samples, every bench's wall window and its record's path go to OUT/energy_raw.json
(rewritten after each bench); at the end bench_energy_summary.py prints the table (per kernel block: power from the
counter's own steps, ~100 ms apart on the H100, joules a run, the SM clock).
"""
import json, os, subprocess, sys, threading, time
import pynvml as N

OUT, CASES = sys.argv[1], sys.argv[2]
T = os.environ.get("T", "tilelab")
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
samples = []
stop = False

def reasons():
    for f in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        if hasattr(N, f):
            try:
                return getattr(N, f)(h)
            except Exception:
                pass
    return -1

def sampler():
    while not stop:
        t = time.monotonic()
        try:
            e = N.nvmlDeviceGetTotalEnergyConsumption(h)
            p = N.nvmlDeviceGetPowerUsage(h)
            c = N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM)
            r = reasons()
            k = N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU)
        except Exception as ex:
            e = p = c = r = k = -1
        samples.append((t, e, p, c, r, k))
        time.sleep(0.004)

th = threading.Thread(target=sampler, daemon=True)
th.start()
time.sleep(0.5)
benches = []
for line in open(CASES):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    label, problem, config, repeat, vs = line.split("|")
    j = os.path.join(OUT, f"e_{len(benches):02d}_{label}.json")
    cmd = [T, "bench", os.environ.get("KERNEL", "attn.bwd.wgmma"), "--problem", problem, "--repeat", repeat, "--no-store", "--json", j,
           "--timeout", "60"]
    if config and config != "-":
        cmd += ["--config", config]
    if vs != "-":
        cmd += ["--vs", vs]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90)
    t1 = time.monotonic()
    open(j + ".txt", "w").write(r.stdout)
    rec = {}
    try:
        rec = json.load(open(j))
    except Exception:
        pass
    benches.append(dict(label=label, problem=problem, config=config, repeat=int(repeat), vs=vs, t0=t0, t1=t1,
                        rc=r.returncode, record_file=j))
    time.sleep(float(os.environ.get("GAP_S", "1.0")))
    json.dump(dict(samples=list(samples), benches=benches), open(os.path.join(OUT, "energy_raw.json"), "w"))
stop = True
th.join()
json.dump(dict(samples=samples, benches=benches), open(os.path.join(OUT, "energy_raw.json"), "w"))



subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_energy_summary.py"),
                os.path.join(OUT, "energy_raw.json"), OUT])
