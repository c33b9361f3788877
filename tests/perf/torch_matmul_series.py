# PyTorch bf16 matmul under sustained load: median TFLOP/s per 200 ms window (issue 4: ceiling vs PyTorch).
# Usage: python3 torch_matmul_series.py [SECONDS=4] [N=8192]
import sys, time, torch
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
fl = 2.0 * n ** 3
t = 0.0; k = 0; win = []; ws = 0.0
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
while t < secs * 1000:
    s.record(); torch.matmul(a, b, out=c); e.record(); e.synchronize()
    ms = s.elapsed_time(e); t += ms; k += 1; win.append(ms)
    if t - ws >= 200 or k in (1, 10):
        win.sort(); med = win[len(win) // 2]
        print(f"t={t:7.0f} ms launches={k:5d} window median {med:.3f} ms -> {fl/med/1e9:.1f} TFLOP/s (min-time {fl/win[0]/1e9:.1f})")
        win = []; ws = t
