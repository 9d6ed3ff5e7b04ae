"""bench/nvml_calls.py: what each NVML query of a worker's sample (src/kl_nvml.c
kl_nvml_sample: SM and memory clocks, temperature, power, clock-event reasons) costs on
this GPU, in microseconds a call (median of N), while the GPU idles; with --busy (CuPy), also
right after a synchronised 0.2-0.3 ms kernel (as a worker samples after a timing) and while
a longer one runs.
Usage: python3 bench/nvml_calls.py [N] [--busy]"""
import ctypes
import statistics
import sys
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 200
busy = "--busy" in sys.argv
nv = ctypes.CDLL("libnvidia-ml.so.1")
t0 = time.perf_counter()
assert nv.nvmlInit_v2() == 0
init_ms = (time.perf_counter() - t0) * 1e3
dev = ctypes.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
u = ctypes.c_uint()
ull = ctypes.c_ulonglong()
calls = {
    "clock sm": lambda: nv.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(u)),
    "clock mem": lambda: nv.nvmlDeviceGetClockInfo(dev, 2, ctypes.byref(u)),
    "temperature": lambda: nv.nvmlDeviceGetTemperature(dev, 0, ctypes.byref(u)),
    "power": lambda: nv.nvmlDeviceGetPowerUsage(dev, ctypes.byref(u)),
    "event reasons": lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(dev, ctypes.byref(ull)),
}
print(f"NVML init {init_ms:.1f} ms")
for name, f in calls.items():
    ts = []
    for _ in range(n):
        a = time.perf_counter()
        f()
        ts.append((time.perf_counter() - a) * 1e6)
    print(f"NVML {name:14s} median {statistics.median(ts):8.1f} us  max {max(ts):8.1f} us")

if busy:
    import cupy as cp
    x = cp.ones(64 * 1024 * 1024, dtype=cp.float32)
    big = cp.ones(512 * 1024 * 1024, dtype=cp.float32)
    (x * 2).sum()
    cp.cuda.Device().synchronize()
    for mode in ("after a kernel", "during a kernel"):
        for name, f in calls.items():
            ts = []
            for _ in range(n // 4):
                if mode == "after a kernel":
                    x *= 1.0000001
                    cp.cuda.Device().synchronize()
                else:
                    big *= 1.0000001
                a = time.perf_counter()
                f()
                ts.append((time.perf_counter() - a) * 1e6)
                cp.cuda.Device().synchronize()
            print(f"NVML {mode:15s} {name:14s} median {statistics.median(ts):8.1f} us  max {max(ts):8.1f} us")
