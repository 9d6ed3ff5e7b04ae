#!/usr/bin/env python3
"""bench/gpu_gaps.py: where the GPU idles inside a run, from an Nsight Systems trace.

Reads the CSV files `nsys stats -r cuda_gpu_trace,cuda_api_trace --format csv -o PREFIX`
wrote (PREFIX_cuda_gpu_trace.csv: every kernel, copy and memset on the GPU;
PREFIX_cuda_api_trace.csv: every CUDA API call, with its process). The GPU's idle time
is the union of the gaps between its activities; each gap of at least MIN_US is split
over the API calls that ran in it, by name (a gap with none is "no CUDA call": the
process worked on the host, or waited). Prints the busy share of the span from the first
activity to the last, the gaps by length, and the API calls that cover the most idle time.
usage: python3 bench/gpu_gaps.py PREFIX [MIN_US (50)]
"""
import csv
import sys


def rows(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        head = next(r)
        col = {}
        for i, h in enumerate(head):
            for key in ("Start", "Duration", "Name", "Pid", "PID"):
                if h.strip().startswith(key) and key not in col:
                    col[key] = i
        for row in r:
            if len(row) > max(col.values()):
                yield col, row


def main(prefix, min_us):
    acts = []
    for col, row in rows(prefix + "_cuda_gpu_trace.csv"):
        s, d = float(row[col["Start"]]), float(row[col["Duration"]])
        acts.append((s, s + d, row[col["Name"]]))
    acts.sort()
    calls = []
    pidk = None
    for col, row in rows(prefix + "_cuda_api_trace.csv"):
        pidk = pidk or ("Pid" in col and "Pid") or ("PID" in col and "PID")
        s, d = float(row[col["Start"]]), float(row[col["Duration"]])
        calls.append((s, s + d, row[col["Name"]], row[col[pidk]] if pidk else "?"))
    calls.sort()
    if not acts:
        print("no GPU activity in the trace")
        return
    gaps, end = [], acts[0][1]
    busy = 0.0
    for s, e, _ in acts:
        if s > end:
            gaps.append((end, s))
        if e > end:
            busy += e - max(s, end)
            end = e
    span = acts[-1][1] - acts[0][0]
    print("GPU busy %.1f%% of %.3f s (first activity to last); %d activities, %d gaps, idle %.3f s" %
          (100 * busy / span, span / 1e9, len(acts), len(gaps), (span - busy) / 1e9))
    bins = [(0, 50), (50, 200), (200, 1000), (1000, 5000), (5000, 50000), (50000, 1e12)]
    for lo, hi in bins:
        g = [b - a for a, b in gaps if lo <= (b - a) / 1e3 < hi]
        print("  gaps %6s-%-6s us: %6d, %.3f s" % (lo, "" if hi >= 1e12 else int(hi), len(g), sum(g) / 1e9))
    by = {}
    j = 0
    for a, b in gaps:
        if (b - a) / 1e3 < min_us:
            continue
        while j < len(calls) and calls[j][1] < a:
            j += 1
        covered = {}
        k = j
        while k < len(calls) and calls[k][0] < b:
            s, e, name, pid = calls[k]
            ov = min(b, e) - max(a, s)
            if ov > 0:
                key = name + " (pid " + str(pid) + ")"
                covered[key] = max(covered.get(key, 0), ov)
            k += 1
        if not covered:
            by["no CUDA call"] = by.get("no CUDA call", 0) + (b - a)
        else:
            tot = sum(covered.values())
            # a gap's time split over the calls in it, each by its share of their union
            for key, ov in covered.items():
                by[key] = by.get(key, 0) + (b - a) * ov / tot
    print("idle in gaps of %d us or more, by the CUDA call that ran then:" % min_us)
    for key, v in sorted(by.items(), key=lambda kv: -kv[1])[:18]:
        print("  %-60s %.3f s" % (key[:60], v / 1e9))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 50)
