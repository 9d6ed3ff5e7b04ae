"""table.py: the side-by-side table of bench/kt_gpu/run.sh, from what it left in OUTDIR.

Reads kt_summary.json (tune_kt.py), points/<task>.tsv and, per task, kloop_<task>_{full,cascade}.log
(kloop's progress lines and summary) and .wall (exit code and process wall time). kloop's rate is its
own summary's ("N candidates in S s (R/min)": candidates after the baseline, seconds since the run
started, the baseline's evaluation included); KT's is configurations evaluated over the wall time of
its tune_kernel call. The points each kloop run evaluated (its progress lines) are checked against the
points file: a run that evaluated other points, or fewer, is marked.
Usage: python3 table.py OUTDIR [--tasks gemm_tiled,saxpy,stencil]
"""
import argparse
import json
import os
import re
import sys

SUMMARY = re.compile(r"^run (\w+) \((.*)\) on (\S+): (\d+) candidates in ([\d.]+) s \(([\d.]+)/min\)")
PROGRESS = re.compile(r"^\[\s*(\d+)/\d+\]")
PARAM = re.compile(r"\b([A-Za-z_]\w*)=([^\s,()\[\]]+)")


def key(p):
    """kloop.tune.key: name=value, names sorted, joined with ','."""
    return ",".join(f"{k}={p[k]}" for k in sorted(p))


def read_points(path):
    with open(path) as f:
        rows = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return [key(dict(zip(rows[0], r))) for r in rows[1:]]


def read_kloop(out, task, mode):
    """What one kloop run says: rate, candidates, best, stages, the points it evaluated."""
    r = {"mode": mode}
    log = os.path.join(out, f"kloop_{task}_{mode}.log")
    if not os.path.exists(log):
        return None
    seen = []
    with open(log) as f:
        for line in f:
            m = SUMMARY.match(line)
            if m:
                r.update(status=m.group(1), why=m.group(2), n=int(m.group(4)), seconds=float(m.group(5)),
                         per_min=float(m.group(6)))
            m = PROGRESS.match(line)
            if m and int(m.group(1)) > 0:
                seen.append(key(dict(PARAM.findall(line))))
            if line.startswith("best:"):
                m = re.match(r"best:\s+([\d.]+) ms", line)
                r["best_ms"] = float(m.group(1)) if m else None
                r["best"] = key(dict(PARAM.findall(line)))
            m = re.match(r"time:\s+worker start ([\d.]+) s", line)
            if m:
                r["start"] = float(m.group(1))
            m = re.match(r"stages: full (\d+), screened only (\d+)", line)
            if m:
                r["full"], r["screened"] = int(m.group(1)), int(m.group(2))
    r["seen"] = seen
    wall = os.path.join(out, f"kloop_{task}_{mode}.wall")
    if os.path.exists(wall):
        words = open(wall).read().split()
        r["rc"], r["wall"] = int(words[1]), float(words[3])
    return r


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def ratio(a, b):
    return f"{a / b:.2f}x" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else "-"


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tasks", default="gemm_tiled,saxpy,stencil")
    a = ap.parse_args(argv)
    kt = {}
    path = os.path.join(a.out, "kt_summary.json")
    if os.path.exists(path):
        kt = {s["task"]: s for s in json.load(open(path))}
    # (after start: kloop's candidates over its run less the worker's start, from the
    # summary's time line: what each further candidate costs once inputs and references exist)
    # (process: each tool's configurations over its whole process, from the command to
    # the answer: Python, imports, arguments and CuPy for KT; probe, inputs, references for kloop)
    head = ("task", "points", "KT/min", "kloop full/min", "kloop screen/min", "full/KT", "screen/KT",
            "full after start/KT", "KT process/min", "kloop process/min", "process ratio", "KT best ms", "kloop best ms")
    rows, notes = [], []
    for task in a.tasks.split(","):
        pts_path = os.path.join(a.out, "points", f"{task}.tsv")
        pts = read_points(pts_path) if os.path.exists(pts_path) else []
        k = kt.get(task, {})
        if k.get("simulated"):
            notes.append(f"{task}: Kernel Tuner ran in simulation mode (made-up times): not a measurement")
        if "error" in k:
            notes.append(f"{task}: Kernel Tuner failed: {k['error']}")
        elif k and not k.get("same_points"):
            notes.append(f"{task}: Kernel Tuner evaluated other points than the file's ({k.get('evaluated')})")
        elif k and k.get("valid") != k.get("evaluated"):
            notes.append(f"{task}: Kernel Tuner: {k['evaluated'] - k['valid']} of {k['evaluated']} configs failed")
        runs = {}
        for mode in ("full", "cascade"):
            r = read_kloop(a.out, task, mode)
            runs[mode] = r or {}
            if not r:
                notes.append(f"{task} {mode}: no kloop log")
                continue
            if "per_min" not in r:
                notes.append(f"{task} {mode}: kloop exited {r.get('rc')} with no summary line")
            elif r.get("rc", 0) != 0 or r.get("status") != "done":
                notes.append(f"{task} {mode}: kloop exited {r.get('rc')}, run {r.get('status')} ({r.get('why')})")
            if sorted(r["seen"]) != sorted(pts):
                notes.append(f"{task} {mode}: kloop evaluated {len(r['seen'])} points, not the file's {len(pts)}"
                             f" ({len(set(r['seen']) - set(pts))} not in it)")
            line = (f"{task} {mode}: {r.get('n', '-')} candidates in {fmt(r.get('seconds'), '.1f')} s"
                    f" (process {fmt(r.get('wall'), '.1f')} s), best {r.get('best', '-')}")
            if mode == "cascade":
                line += f", stages: full {r.get('full', '-')} (baseline included), screened only {r.get('screened', '-')}"
            notes.append(line)
        if k and "error" not in k:
            notes.append(f"{task} KT: {k['evaluated']} configs in {k['seconds']:.1f} s, best {k.get('best')}; "
                         f"phases (s): {', '.join(f'{p} {v}' for p, v in k.get('phases', {}).items())}")
        full, casc = runs["full"].get("per_min"), runs["cascade"].get("per_min")
        rf = runs["full"]
        after = None
        if isinstance(rf.get("start"), float) and isinstance(rf.get("seconds"), float) and rf["seconds"] > rf["start"]:
            after = rf.get("n", 0) / (rf["seconds"] - rf["start"]) * 60
        kt_proc = None
        wpath = os.path.join(a.out, f"kt_{task}.wall")
        if k and "error" not in k and os.path.exists(wpath):
            words = open(wpath).read().split()
            if int(words[1]) == 0 and float(words[3]) > 0:
                kt_proc = k["evaluated"] / float(words[3]) * 60
                notes.append(f"{task} KT process: {words[3]} s (tune_kernel {k['seconds']:.2f} s, "
                             f"arguments drawn {k.get('args_s', '-')} s)")
        kl_proc = None
        if isinstance(rf.get("wall"), float) and rf["wall"] > 0 and rf.get("rc") == 0 and isinstance(rf.get("n"), int):
            kl_proc = rf["n"] / rf["wall"] * 60
        rows.append((task, str(len(pts)), fmt(k.get("per_min"), ".1f"), fmt(full, ".1f"), fmt(casc, ".1f"),
                     ratio(full, k.get("per_min")), ratio(casc, k.get("per_min")), ratio(after, k.get("per_min")),
                     fmt(kt_proc, ".1f"), fmt(kl_proc, ".1f"), ratio(kl_proc, kt_proc),
                     fmt(k.get("best_ms"), ".4f"), fmt(runs["full"].get("best_ms"), ".4f")))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
    for n in notes:
        print("  " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
