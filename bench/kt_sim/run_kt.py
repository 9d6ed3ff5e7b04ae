"""run_kt.py: replays Kernel Tuner's non-exhaustive strategies on a recorded landscape (simulation mode) at fixed budgets.

Usage: python run_kt.py CACHE.json RESULTS.json [--seeds 20] [--budgets 16,44,89] [--strategies a,b,...]
CACHE.json comes from to_cache.py. Prints one table per budget and writes the raw per-run results to RESULTS.json.
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from multiprocessing import Pool

import numpy as np
import scipy.stats.qmc
from kernel_tuner import tune_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from to_cache import KERNEL_NAME, PROBLEM_SIZE, RESTRICTIONS, TUNE_PARAMS  # noqa: E402

STRATEGIES = ["random_sample", "genetic_algorithm", "simulated_annealing", "greedy_ils", "bayes_opt",
              "dual_annealing", "firefly_algorithm", "pso", "mls", "greedy_mls", "ordered_greedy_mls",
              "basinhopping", "diff_evo", "minimize", "hybrid_vndx", "adaptive_tabu_greywolf"]
# Also accepted with --strategies: "skopt" (needs `pip install scikit-optimize`; minutes per run) and pyATF's search
# techniques through KT's wrapper as "pyatf_strategies:TECHNIQUE" (needs `pip install pyatf`), e.g. pyatf_strategies:torczon


class SeededLHS(scipy.stats.qmc.LatinHypercube):
    """scipy's LatinHypercube, given no rng, seeds itself from OS entropy; Kernel Tuner passes none (its LHS sample in
    searchspace.py, used by diff_evo, and bayes_opt's initial sample). This draws that rng from NumPy's global RNG."""

    def __init__(self, d, **kw):
        if kw.get("rng") is None and kw.get("seed") is None:
            kw["rng"] = np.random.randint(2**31)
        super().__init__(d, **kw)


def seed_everything(seed):
    """Kernel Tuner's strategies draw from Python's `random` and NumPy's global RNG; scipy/sklearn default to the latter."""
    random.seed(seed)
    np.random.seed(seed)
    scipy.stats.qmc.LatinHypercube = SeededLHS  # searchspace.get_LHS_sample imports it at call time
    import kernel_tuner.strategies.bayes_opt as bo  # imports it at load time
    bo.LatinHypercube = SeededLHS


def one_run(job):
    """One tuning run: (strategy, budget, seed) -> dict with the best time and the points evaluated."""
    cache, strategy, budget, seed = job
    name, _, technique = strategy.partition(":")
    options = {"max_fevals": budget, **({"searchtechnique": technique} if technique else {})}
    os.chdir(tempfile.gettempdir())  # pyatf_strategies writes ./pyatf_searchspace_caches into the working directory
    seed_everything(seed)
    warnings.simplefilter("ignore")
    t0 = time.time()
    try:
        res, _ = tune_kernel(KERNEL_NAME, "", PROBLEM_SIZE, [], TUNE_PARAMS, restrictions=RESTRICTIONS, cache=cache,
                             simulation_mode=True, strategy=name, strategy_options=options,
                             seed=seed, quiet=True, verbose=False)
    except Exception as e:  # a strategy that cannot run in simulation mode
        return {"strategy": strategy, "budget": budget, "seed": seed, "error": f"{type(e).__name__}: {e}"}
    timed = [r for r in res if isinstance(r.get("time"), (int, float))]
    order = []  # unique points in the order first evaluated
    for r in timed:
        key = tuple(r[k] for k in TUNE_PARAMS)
        if key not in order:
            order.append(key)
    return {"strategy": strategy, "budget": budget, "seed": seed, "best_ms": min(r["time"] for r in timed),
            "unique_evals": len(order), "calls": len(res), "evaluated": order, "wall_s": round(time.time() - t0, 3)}


def optimum(cache):
    """The best time in the cache file (the landscape's minimum)."""
    return min(e["time"] for e in json.load(open(cache))["cache"].values())


def table(runs, budget, opt):
    print(f"\nbudget {budget} fevals (optimum {opt} ms)")
    print(f"{'strategy':24s} {'runs':>4s} {'within2%':>8s} {'median':>7s} {'worst':>7s} {'unique(min/med/max)':>20s}")
    for s in dict.fromkeys(r["strategy"] for r in runs):
        rs = [r for r in runs if r["strategy"] == s and r["budget"] == budget]
        ok = [r for r in rs if "error" not in r]
        if not ok:
            print(f"{s:24s} FAILED: {rs[0]['error'][:90]}")
            continue
        ratios = [r["best_ms"] / opt for r in ok]
        u = [r["unique_evals"] for r in ok]
        print(f"{s:24s} {len(ok):4d} {sum(x <= 1.02 for x in ratios) / len(ok):8.2f} {statistics.median(ratios):7.3f} "
              f"{max(ratios):7.3f} {min(u):6d}/{statistics.median(u):5g}/{max(u):5d}"
              + (f"  ({len(rs) - len(ok)} runs failed)" if len(ok) < len(rs) else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", default="16,44,89")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    a.cache = os.path.abspath(a.cache)
    jobs = [(a.cache, s, b, seed) for s in a.strategies.split(",") for b in budgets for seed in range(a.seeds)]
    with Pool(a.jobs, maxtasksperchild=1) as pool:  # a fresh process per run: no state carries between runs
        runs = pool.map(one_run, jobs, chunksize=1)
    opt = optimum(a.cache)
    for b in budgets:
        table(runs, b, opt)
    json.dump({"optimum_ms": opt, "budgets": budgets, "seeds": a.seeds, "runs": runs}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
