"""tune_kt.py: Kernel Tuner (cupy backend, brute_force, 7 iterations) on kloop's own CUDA tasks.

Each task below restates a kloop task (kernels/NAME.cu + kernels/NAME.lua): the kernel file and
entry, the bench size kloop times, the argument list with its inits, the tune space and the
constraint as KT restrictions, and the launch (grid from the problem size and grid divisors,
block from the parameters). The points evaluated are written as a points file that
bench/kt_gpu/points.lua reads, so kloop evaluates exactly the same ones.

Usage:
  python3 tune_kt.py OUTDIR [--kloop-spaces DIR] [--gemm-stride 6] [--tasks gemm_tiled,saxpy,stencil]
                            [--points-only] [--simulate]
OUTDIR gets points/<task>.tsv, kt_<task>_cache.json, kt_<task>_results.json and kt_summary.json
(one entry per task; a run for some tasks keeps the other tasks' entries). A task's summary has
"seconds" (its tune_kernel call) and "args_s" (drawing its arguments with numpy, before that call).
--kloop-spaces DIR: <task>.all.tsv from bench/kt_gpu/space.lua; the restated space must equal it.
--points-only: write the points files and stop (no Kernel Tuner, no GPU).
--simulate: run KT in simulation mode on a synthetic cache (no GPU: checks this script's KT calls).
Prints one line per task: KT <task> <valid points> <seconds> <configs/min> <best config> <best ms>.
"""
import argparse
import importlib.metadata
import itertools
import json
import os
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gemm_valid(p):
    """kernels/gemm_tiled.lua's constraint."""
    threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    smem = 4 * (p["BK"] * (p["BM"] + 4) + p["BK"] * p["BN"])
    return 32 <= threads <= 1024 and smem <= 48 * 1024 and p["TM"] * p["TN"] <= 128


def gemm_args(rng):
    M = N = K = 4096
    return [np.int32(M), np.int32(N), np.int32(K),
            rng.uniform(-1, 1, M * K).astype(np.float32),
            rng.normal(0, 1, K * N).astype(np.float32),
            np.zeros(M * N, dtype=np.float32)]


def saxpy_args(rng):
    N = 67108864
    return [np.int32(N), np.float32(1.5),
            rng.uniform(-1, 1, N).astype(np.float32),
            rng.normal(0, 1, N).astype(np.float32),
            np.zeros(N, dtype=np.float32)]


def stencil_args(rng):
    W = H = 8192
    return [np.int32(W), np.int32(H),
            rng.uniform(-1, 1, W * H).astype(np.float32),
            rng.uniform(5, 6, W * H).astype(np.float32)]


# kloop's parameter names and values (in the sidecar's order) -> KT's. `kloop` lists the
# task's params as kloop names them; `kt_name` maps a kloop name to KT's where they differ.
TASKS = {
    "gemm_tiled": dict(
        kernel="kernels/gemm_tiled.cu", entry="gemm",
        kloop={"BM": [32, 64, 128, 256], "BN": [32, 64, 128, 256], "BK": [8, 16, 32],
               "TM": [2, 4, 8, 16], "TN": [2, 4, 8]},
        valid=gemm_valid,
        # the block is 1-D with (BM / TM) * (BN / TN) threads: KT takes a block size from a
        # tune parameter only, so NT is one, pinned to that product by a restriction. Written
        # as NT * TM * TN == BM * BN (the same here: TM divides BM, TN divides BN) because KT
        # 1.5.0's restriction parser turns "NT == (BM // TM) * (BN // TN)" into an empty space
        extra={"NT": [32, 64, 128, 256, 512, 1024]},
        restrictions=["NT * TM * TN == BM * BN",
                      "(BM // TM) * (BN // TN) >= 32", "(BM // TM) * (BN // TN) <= 1024",
                      "4 * (BK * (BM + 4) + BK * BN) <= 49152", "TM * TN <= 128"],
        problem_size=(4096, 4096), grid_div_x=["BN"], grid_div_y=["BM"], block_size_names=["NT"],
        args=gemm_args),
    "saxpy": dict(
        # no declared params: kloop tunes its implicit ones; KT can search the block size
        # only (the kernel indexes by blockDim), so both get kloop_block
        kernel="kernels/saxpy.cu", entry="saxpy",
        kloop={"kloop_block": ["64", "128", "256", "512", "1024"]},
        kt_name={"kloop_block": "block_size_x"},
        valid=lambda p: True, restrictions=[],
        problem_size=67108864, grid_div_x=["block_size_x"], grid_div_y=None, block_size_names=None,
        args=saxpy_args),
    "stencil": dict(
        kernel="kernels/stencil.cu", entry="stencil",
        kloop={"BX": [8, 16, 32, 64, 128], "BY": [1, 2, 4, 8, 16]},
        valid=lambda p: 32 <= p["BX"] * p["BY"] <= 1024,
        restrictions=["BX * BY >= 32", "BX * BY <= 1024"],
        problem_size=(8192, 8192), grid_div_x=["BX"], grid_div_y=["BY"], block_size_names=["BX", "BY"],
        args=stencil_args),
}
# kloop's compiler options for CUDA candidates that change code (kloop.eval.compile)
COMPILER_OPTIONS = ["-std=c++17", "-lineinfo"]


def kloop_order(t):
    """Every valid point in kloop's order (kloop.tune.all): names sorted, values as declared."""
    names = sorted(t["kloop"])
    pts = [dict(zip(names, vals)) for vals in itertools.product(*(t["kloop"][n] for n in names))]
    return names, [p for p in pts if t["valid"](p)]


def read_tsv(path):
    with open(path) as f:
        rows = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return rows[0], rows[1:]


def check_against_kloop(task, t, names, points, path):
    """The restated space must be kloop's: the same points in the same order (a task whose
    kloop space has more parameters than KT can search is compared on the shared ones)."""
    knames, rows = read_tsv(path)
    missing = [n for n in names if n not in knames]
    if missing:
        return f"kloop's space of {task} lacks {missing}"
    idx = [knames.index(n) for n in names]
    theirs, seen = [], set()
    for r in rows:
        key = tuple(r[i] for i in idx)
        if key not in seen:
            seen.add(key)
            theirs.append(key)
    ours = [tuple(str(p[n]) for n in names) for p in points]
    if ours != theirs:
        a, b = set(ours), set(theirs)
        return (f"{task}: the restated space differs from kloop's ({len(ours)} vs {len(theirs)} points; "
                f"only here {sorted(a - b)[:3]}, only in kloop {sorted(b - a)[:3]})")
    return None


def write_points(path, names, points):
    with open(path, "w") as f:
        f.write("\t".join(names) + "\n")
        for p in points:
            f.write("\t".join(str(p[n]) for n in names) + "\n")


def kt_value(v):
    return int(v) if isinstance(v, str) else v


def passes(restrictions, p):
    """The restriction strings evaluated on a point (plain Python expressions over the names)."""
    return all(eval(r, {}, dict(p)) for r in restrictions)


def kt_space(t, points):
    """KT's tune_params (kloop's values under KT's names, plus any extra) and restrictions:
    the restated constraint as strings; where `points` is a subset of the valid space, one
    function (KT's single-function form, called with the point as a dict) that checks the
    same strings and membership in `points` (KT mixes no tuples or closures with strings)."""
    kt_name = t.get("kt_name", {})
    names = sorted(t["kloop"])
    tune_params = {kt_name.get(n, n): [kt_value(v) for v in t["kloop"][n]] for n in names}
    tune_params.update(t.get("extra", {}))
    strings = list(t["restrictions"])
    kt_names = [kt_name.get(n, n) for n in names]
    allowed = {tuple(kt_value(p[n]) for n in names) for p in points}
    if len(allowed) == len(kloop_order(t)[1]):
        return tune_params, strings

    def in_points(p):
        return passes(strings, p) and tuple(p[n] for n in kt_names) in allowed
    return tune_params, [in_points]


def to_kloop_key(t, config):
    """A KT config as kloop's point key (kloop.tune.key: name=value, names sorted, ',')."""
    kt_name = t.get("kt_name", {})
    return ",".join(f"{n}={config[kt_name.get(n, n)]}" for n in sorted(t["kloop"]))


def synthetic_cache(path, t, tune_params, restrictions):
    """A cache for simulation mode: every point of the product that passes the restrictions, with a
    made-up time."""
    keys = list(tune_params)
    cache = {}
    for vals in itertools.product(*(tune_params[k] for k in keys)):
        p = dict(zip(keys, vals))
        ok = all(passes([r], p) if isinstance(r, str) else r(p) for r in restrictions)
        if ok:
            cache[",".join(str(v) for v in vals)] = {**p, "time": 1.0 + sum(np.log2(v) for v in vals) / 10}
    doc = {"device_name": "simulated", "kernel_name": t["entry"], "problem_size": t["problem_size"],
           "tune_params_keys": keys, "tune_params": tune_params, "objective": "time", "cache": cache}
    with open(path, "w") as f:
        json.dump(doc, f)


def pad_cupy_uuid():
    """CuPy gives a GPU's UUID as bytes cut at their first zero byte; Kernel Tuner 1.5.0 hands
    them to uuid.UUID, which wants 16, and fails on such a GPU (one H200 lent had one).
    Pad them back to 16: the UUID is only recorded in KT's environment, never used to time."""
    try:
        import cupy
    except ImportError:
        return
    rt = cupy.cuda.runtime
    if getattr(rt.getDeviceProperties, "kloop_padded", False):
        return
    orig = rt.getDeviceProperties

    def props(dev):
        p = orig(dev)
        u = p.get("uuid") if isinstance(p, dict) else None
        if isinstance(u, bytes) and len(u) < 16:
            p = dict(p)
            p["uuid"] = u.ljust(16, b"\0")
        return p
    props.kloop_padded = True
    rt.getDeviceProperties = props


def run_task(task, t, points, out, simulate):
    from kernel_tuner import tune_kernel
    if not simulate:
        pad_cupy_uuid()

    with open(os.path.join(ROOT, t["kernel"])) as f:
        source = f.read()
    tune_params, restrictions = kt_space(t, points)
    ta = time.perf_counter()
    arguments = t["args"](np.random.default_rng(1))
    args_s = time.perf_counter() - ta
    cache = os.path.join(out, f"kt_{task}_cache.json")
    if os.path.exists(cache):
        os.remove(cache)  # a cache KT finds is served instead of running the kernels
    if simulate:
        synthetic_cache(cache, t, tune_params, restrictions)
    t0 = time.perf_counter()
    results, env = tune_kernel(
        t["entry"], source, t["problem_size"], arguments, tune_params,
        grid_div_x=t["grid_div_x"], grid_div_y=t["grid_div_y"], restrictions=restrictions,
        block_size_names=t["block_size_names"], lang="cupy", compiler_options=COMPILER_OPTIONS,
        strategy="brute_force", iterations=7, verbose=False, quiet=True, answer=None, cache=cache,
        simulation_mode=bool(simulate))
    seconds = time.perf_counter() - t0
    ok = [r for r in results if isinstance(r.get("time"), (int, float)) and not isinstance(r.get("time"), bool)]
    evaluated = {to_kloop_key(t, r) for r in results}
    wanted = {to_kloop_key(t, {t.get("kt_name", {}).get(n, n): p[n] for n in p}) for p in points}
    best = min(ok, key=lambda r: r["time"]) if ok else None
    phases = {}
    for k in ("compile_time", "verification_time", "benchmark_time", "framework_time", "strategy_time"):
        phases[k.replace("_time", "_s")] = round(sum(r.get(k, 0) or 0 for r in results) / 1000, 3)
    summary = {
        "task": task, "points": len(points), "evaluated": len(results), "valid": len(ok),
        "seconds": round(seconds, 3), "args_s": round(args_s, 3), "per_min": round(len(results) / seconds * 60, 2) if seconds > 0 else None,
        "best": to_kloop_key(t, best) if best else None, "best_ms": best["time"] if best else None,
        "same_points": evaluated == wanted, "phases": phases, "simulated": bool(simulate),
        "kt_version": importlib.metadata.version("kernel_tuner"), "device": env.get("device_name"),
    }
    if evaluated != wanted:
        summary["only_kt"] = sorted(evaluated - wanted)[:5]
        summary["only_points"] = sorted(wanted - evaluated)[:5]
    with open(os.path.join(out, f"kt_{task}_results.json"), "w") as f:
        json.dump({"summary": summary, "results": [{k: (v if isinstance(v, (int, float, str, type(None))) else str(v))
                                                     for k, v in r.items()} for r in results]}, f, indent=0)
    return summary


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--kloop-spaces", default=None)
    ap.add_argument("--gemm-stride", type=int, default=6)
    ap.add_argument("--tasks", default="gemm_tiled,saxpy,stencil")
    ap.add_argument("--points-only", action="store_true")
    ap.add_argument("--simulate", action="store_true")
    a = ap.parse_args(argv)
    if a.gemm_stride < 1:
        ap.error("--gemm-stride must be >= 1")
    tasks = a.tasks.split(",")
    for task in tasks:
        if task not in TASKS:
            ap.error(f"unknown task {task} (known: {', '.join(TASKS)})")
    os.makedirs(os.path.join(a.out, "points"), exist_ok=True)
    plan = {}
    for task in tasks:
        t = TASKS[task]
        names, points = kloop_order(t)
        if a.kloop_spaces:
            why = check_against_kloop(task, t, names, points, os.path.join(a.kloop_spaces, f"{task}.all.tsv"))
            if why:
                print(f"tune_kt: {why}", file=sys.stderr)
                return 1
        if task == "gemm_tiled":
            points = points[::a.gemm_stride]  # every Nth valid point of kloop's order, from the first
        write_points(os.path.join(a.out, "points", f"{task}.tsv"), names, points)
        plan[task] = points
        print(f"points {task} {len(points)}" + ("" if a.kloop_spaces else " (not checked against kloop's space)"))
    if a.points_only:
        return 0
    summaries, failed = [], 0

    path = os.path.join(a.out, "kt_summary.json")
    earlier = []  # other tasks' summaries from earlier runs into the same OUTDIR (one per task)
    if os.path.exists(path):
        with open(path) as f:
            earlier = [e for e in json.load(f) if e.get("task") not in tasks]

    def save():  # after every task: a run stopped by a timeout keeps what it finished
        with open(path, "w") as f:
            json.dump(earlier + summaries, f, indent=1)
    for task in tasks:
        try:
            s = run_task(task, TASKS[task], plan[task], a.out, a.simulate)
        except Exception as e:  # one task's failure is reported, the others still run
            traceback.print_exc()
            print(f"KT {task} error: {type(e).__name__}: {e}")
            summaries.append({"task": task, "error": f"{type(e).__name__}: {e}"})
            failed += 1
            save()
            continue
        summaries.append(s)
        save()
        best_ms = f"{s['best_ms']:.4f}" if s["best_ms"] is not None else "-"
        print(f"KT {task} {s['valid']} {s['seconds']:.1f} {s['per_min']:.1f} {s['best'] or '-'} {best_ms}"
              + ("" if s["same_points"] else "  (NOT the points file's set: see the results json)"))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
