# CUDA-event timing of a baseline's launch for the tests/perf scripts, as docs/perf.md's sections state it: warm-ups,
# the L2 flushed (a 256 MB write) before each launch, events around it, the median. Every script that times a
# baseline imports it from beside itself, so the device scripts copy it into their bundles with the script.
import statistics

import torch

_flush = None


def median_time(run, reps=20, warmup=5, flush=True):
    """(median, min) seconds of run() over `reps` launches; flush=False for a run that moves more than L2 holds."""
    global _flush
    if flush and _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        if flush:
            _flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times), min(times)
