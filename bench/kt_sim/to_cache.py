"""to_cache.py: converts a kloop landscape TSV (BM BN BK TM TN median_ms) into a Kernel Tuner cache file for simulation mode.

Usage: python to_cache.py bench/landscapes/gemm_tiled_h200.tsv OUT.json
"""
import json
import sys

# The tuning space and constraint of kernels/gemm_tiled.lua, restated for Kernel Tuner.
KERNEL_NAME = "gemm"
PROBLEM_SIZE = [4096, 4096, 4096]
TUNE_PARAMS = {"BM": [32, 64, 128, 256], "BN": [32, 64, 128, 256], "BK": [8, 16, 32],
               "TM": [2, 4, 8, 16], "TN": [2, 4, 8]}
RESTRICTIONS = [  # threads per block in [32, 1024], shared memory <= 48 KB, register tile <= 128
    "(BM // TM) * (BN // TN) >= 32",
    "(BM // TM) * (BN // TN) <= 1024",
    "4 * (BK * (BM + 4) + BK * BN) <= 49152",
    "TM * TN <= 128",
]


def valid(p):
    threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    smem = 4 * (p["BK"] * (p["BM"] + 4) + p["BK"] * p["BN"])
    return 32 <= threads <= 1024 and smem <= 48 * 1024 and p["TM"] * p["TN"] <= 128


def read_tsv(path):
    """Returns a list of (params dict, median_ms)."""
    rows = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        *vals, ms = line.split()
        rows.append((dict(zip(TUNE_PARAMS, map(int, vals))), float(ms)))
    return rows


def main(tsv, out):
    rows = read_tsv(tsv)
    cache = {}
    for p, ms in rows:
        assert valid(p), f"TSV point violates the constraint: {p}"
        key = ",".join(str(p[k]) for k in TUNE_PARAMS)  # KT keys entries by the values joined with ","
        cache[key] = {**p, "time": ms}
    doc = {"device_name": "NVIDIA H200", "kernel_name": KERNEL_NAME, "problem_size": PROBLEM_SIZE,
           "tune_params_keys": list(TUNE_PARAMS), "tune_params": TUNE_PARAMS, "objective": "time",
           "cache": cache}
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
    print(f"{out}: {len(cache)} points, best {min(ms for _, ms in rows)} ms")


if __name__ == "__main__":
    main(*sys.argv[1:3])
