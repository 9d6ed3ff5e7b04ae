#!/usr/bin/env python3
"""bench/request_gaps.py: where the time between a search's requests goes, from a
KLOOP_WAITS_LOG file (its "sent OP" and "reply OP SECONDS" lines, SECONDS the worker's
own eval_seconds, -1 where the reply has none).

For every request the worker answers: the round trip (sent to reply) splits into the
worker's evaluation (eval_seconds) and the rest (the request's transport and decode,
the worker's load and state check after it, the reply's encode). Between a reply and
the next request the parent works; where the driver's marks are in the log ("settled",
"chosen", "stored", "prepared") a plain gap is split at them: the result settled (stored,
given to the strategy), the next candidate chosen, its row stored, its request prepared
(binaries found, plans, arguments), sent. A gap holding a compile wait or a think is
counted apart.

usage: python3 bench/request_gaps.py WAITS_LOG [WAITS_LOG...]
"""
import sys


MARKS = ("settled", "chosen", "stored", "prepared")
SEGMENTS = ("settle", "choose", "store", "prepare", "send")


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def analyse(path):
    events = []
    for line in open(path):
        parts = line.split()
        if len(parts) < 2:
            continue
        try:
            t = float(parts[0])
        except ValueError:
            continue
        events.append((t, parts[1:]))
    trips, evals, rests = [], [], []
    gaps_plain, gaps_wait, gaps_think = [], [], []
    sent_at, last_reply, between = None, None, set()
    marks = {}
    segs = {k: [] for k in SEGMENTS}
    largest, inside = [], []
    for t, p in events:
        kind = p[0]
        if kind == "sent":
            if last_reply is not None and p[1] in ("evaluate", "screen"):
                gap = t - last_reply
                if "wait" in between:
                    gaps_wait.append(gap)
                elif "think" in between:
                    gaps_think.append(gap)
                else:
                    gaps_plain.append(gap)
                    if all(m in marks for m in MARKS):
                        at = [last_reply] + [marks[m] for m in MARKS] + [t]
                        for k, name in enumerate(SEGMENTS):
                            segs[name].append(at[k + 1] - at[k])
                        parts = " ".join(f"{n} {1e3 * (at[k + 1] - at[k]):.1f}" for k, n in enumerate(SEGMENTS))
                    else:
                        parts = "(no marks)"
                    largest.append((gap, last_reply, parts, inside))
            sent_at, between, marks = (t, p[1]), set(), {}
            inside = []
        elif kind == "reply" and sent_at:
            trip = t - sent_at[0]
            ev = float(p[2]) if len(p) > 2 else -1
            if sent_at[1] in ("evaluate", "screen") and ev >= 0:
                trips.append(trip)
                evals.append(ev)
                rests.append(trip - ev)
            last_reply, sent_at, between, marks = t, None, set(), {}
            inside = []
        elif kind in MARKS:
            marks[kind] = t
            inside.append((t, kind))
        else:
            between.add(kind)
            inside.append((t, " ".join(p)[:40]))
    n = len(trips)
    print(f"== {path}: {n} evaluate/screen requests")
    if not n:
        return
    print(f"round trips   {sum(trips):8.3f} s  median {1e3 * median(trips):7.2f} ms")
    print(f"  worker eval {sum(evals):8.3f} s  median {1e3 * median(evals):7.2f} ms")
    print(f"  the rest    {sum(rests):8.3f} s  median {1e3 * median(rests):7.2f} ms (transport, load, state check, reply)")
    for name, g in (("parent gaps", gaps_plain), ("  with a compile wait", gaps_wait), ("  with a think", gaps_think)):
        print(f"{name:22s} {len(g):4d}  {sum(g):8.3f} s  median {1e3 * median(g):7.2f} ms")
    split = [(k, v) for k, v in segs.items() if v]
    if split:
        print("  plain gaps split: " + ", ".join(f"{k} {1e3 * median(v):.2f} ms ({sum(v):.3f} s)" for k, v in split))
    t0 = events[0][0] if events else 0
    for gap, at, parts, lines in sorted(largest, key=lambda g: -g[0])[:5]:
        print(f"  a plain gap of {1e3 * gap:6.1f} ms at {at - t0:6.2f} s: {parts} ms")
        for t, text in lines[:14]:
            if not text.startswith(("compiled", "cached", "queued")):
                print(f"      +{1e3 * (t - at):6.1f} ms  {text}")
    print(f"GAPS: {n} requests, rest {1e3 * median(rests):.2f} ms, parent {1e3 * median(gaps_plain):.2f} ms "
          f"(medians); sums rest {sum(rests):.3f} s, parent {sum(gaps_plain):.3f} s, "
          f"compile waits {sum(gaps_wait):.3f} s, thinks {sum(gaps_think):.3f} s")


for f in sys.argv[1:]:
    analyse(f)
