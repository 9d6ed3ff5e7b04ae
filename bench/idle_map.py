"""idle_map.py: where a tune run's GPU idled, from a round script's one log (bench/round8b_gpu.sh).

The log holds, per run LABEL, "== smi LABEL" (bench/gpu_busy.sh's KEEP_SMI file: a line
"# t0 WALL MONO", then nvidia-smi's "timestamp, utilization.gpu" samples every 100 ms) and
"== raw waits LABEL" (KLOOP_WAITS_LOG: "MONO event ..."). Each sample's idle share of 0.1 s is
put to what the waits log says ran then: the start (before the worker's "start" line), the
baseline and the library reference (before the first think), a wait for a compile, a think,
after the last line ("end"), else "eval". The clocks are lined up by the first sample, taken
0.5 s before the run (gpu_busy.sh sleeps that long): good to about a sample.
Usage: python3 bench/idle_map.py ALL_LOG
"""
import datetime
import re
import sys


def read(path):
    runs, cur, kind = {}, None, None
    for line in open(path).read().split("\n"):
        m = re.match(r"^== (smi|raw waits) (\S+)", line)
        if m:
            kind, cur = m.group(1), m.group(2)
            runs.setdefault(cur, {"smi": [], "ev": []})
            continue
        if line.startswith("=="):
            kind = None
            continue
        if kind == "smi":
            if line.startswith("# t0"):
                _, _, w, mo = line.split()
                runs[cur]["t0"] = (float(w), float(mo))
                continue
            p = line.split(", ")
            if len(p) == 2:
                ts = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f")
                runs[cur]["smi"].append((ts.replace(tzinfo=datetime.timezone.utc).timestamp(), float(p[1])))
        elif kind == "raw waits" and line.strip():
            t, rest = line.split(" ", 1)
            runs[cur]["ev"].append((float(t), rest))
    return runs


def main(path):
    for name, r in read(path).items():
        if "t0" not in r or not r["smi"] or not r["ev"]:
            continue
        w0, m0 = r["t0"]
        off = (w0 - 0.5) - r["smi"][0][0]
        samples = [(ts + off - w0, u) for ts, u in r["smi"]]
        spans, start_end = [], None
        for t, text in r["ev"]:
            w = text.split()
            if w[0] == "start":
                start_end = t - m0
            if w[0] in ("wait", "think"):
                spans.append((t - m0 - float(w[1]), t - m0, w[0]))
        thinks = [t - m0 for t, text in r["ev"] if text.startswith("think")]
        first_think = thinks[0] if thinks else None
        last = max(t - m0 for t, _ in r["ev"])
        idle = {}
        for t, u in samples:
            if t < 0.1:
                continue
            c = "eval"
            if start_end and t < start_end:
                c = "start"
            elif first_think and t < first_think:
                c = "baseline and library"
            elif t > last:
                c = "end"
            for a, b, k in spans:
                if a <= t <= b + 0.05:
                    c = k
            idle[c] = idle.get(c, 0) + (100 - u) / 100 * 0.1
        print(f"{name}: idle {sum(idle.values()):.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(idle.items())))


if __name__ == "__main__":
    main(sys.argv[1])
