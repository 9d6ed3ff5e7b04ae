"""tests/report/check_dom.py: checks a report's DOM (as Chromium dumped it) against the numbers SQL gives for the store.
usage: python3 check_dom.py DOM.html EXPECT.json   (EXPECT from tests/report/expect.lua); exit 0 when all hold."""
import json
import sys
from html.parser import HTMLParser

SECTIONS = ["summary", "progress", "models", "failures", "lineage", "top", "provenance", "drift"]


class Dom(HTMLParser):
    """Collects sections, table rows (their data-* attributes and cells) and SVG charts."""

    def __init__(self):
        super().__init__()
        self.sections, self.rows, self.svgs, self.scripts = [], [], 0, 0
        self.section = None
        self.run = None
        self.row = None
        self.cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
            self.sections.append(self.section)
        elif tag == "div" and "data-run" in a:
            self.run = a["data-run"]
        elif tag == "svg":
            self.svgs += 1
        elif tag == "script":
            self.scripts += 1
        elif tag == "tr":
            self.row = {"section": self.section, "run": self.run, "attrs": a, "cells": {}, "texts": []}
        elif tag == "td" and self.row is not None:
            self.cell = {"k": a.get("data-k"), "v": a.get("data-v"), "text": ""}

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row["texts"].append(self.cell["text"])
            if self.cell["k"]:
                self.row["cells"][self.cell["k"]] = self.cell
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row["texts"]:
                self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))


def main():
    dom = Dom()
    dom.feed(open(sys.argv[1], encoding="utf-8").read())
    want = json.load(open(sys.argv[2]))
    bad = []

    def check(cond, what):
        if not cond:
            bad.append(what)

    check(dom.sections == SECTIONS, f"sections {dom.sections}")
    check(dom.scripts == 0, "a <script> element")
    check(dom.svgs >= 6, f"only {dom.svgs} SVG charts")
    rows = lambda sec: [r for r in dom.rows if r["section"] == sec]
    for r in want["runs"]:
        rid = str(r["id"])
        srow = [x for x in rows("summary") if x["attrs"].get("data-run") == rid]
        check(len(srow) == 1, f"summary row of run {rid}")
        if srow:
            c = srow[0]["cells"]
            for k in ("candidates", "evaluations", "tokens"):
                check(int(c[k]["v"]) == r[k], f"run {rid} {k}: page {c[k]['v']}, store {r[k]}")
            for k in ("best_ms", "baseline_ms", "cost_usd"):
                check(close(c[k]["v"], r.get(k)), f"run {rid} {k}: page {c[k]['v']}, store {r.get(k)}")
        for g in r["groups"]:
            m = [x for x in rows("models") if x["attrs"].get("data-run") == rid
                 and x["attrs"].get("data-model") == g["model"] and x["attrs"].get("data-prompt") == g["prompt"]]
            check(len(m) == 1, f"models row of run {rid} {g['model']} {g['prompt']}")
            if m:
                c = m[0]["cells"]
                for k in ("proposals", "improvements", "tokens_in", "tokens_out"):
                    check(int(c[k]["v"]) == g[k], f"run {rid} {g['model']} {g['prompt']} {k}: page {c[k]['v']}, store {g[k]}")
                check(close(c["cost_usd"]["v"], g.get("cost_usd")), f"run {rid} {g['model']} {g['prompt']} cost")
        f = [x for x in rows("failures") if x["run"] == rid and "data-verdict" in x["attrs"]]
        got = {}
        for x in f:
            if x["attrs"]["data-verdict"] != "llm_error":
                got[x["attrs"]["data-verdict"]] = got.get(x["attrs"]["data-verdict"], 0) + int(x["cells"]["count"]["v"])
        check(got == {v["verdict"]: v["n"] for v in r["verdicts"]}, f"run {rid} failures {got} vs {r['verdicts']}")
        t = [x for x in rows("top") if x["run"] == rid]
        check([int(x["attrs"]["data-id"]) for x in t] == [x["id"] for x in r["top"]], f"run {rid} top order")
        for x, y in zip(t, r["top"]):
            check(close(x["cells"]["median_ms"]["v"], y["median_ms"]), f"run {rid} top c:{y['id']} time")
        lin = [x for x in rows("lineage") if x["run"] == rid]
        check(bool(lin) and int(lin[-1]["attrs"]["data-id"]) == r["best_id"], f"run {rid} lineage ends at the best")
        prov = {x["attrs"].get("data-k"): x["texts"][1] for x in rows("provenance") if x["run"] == rid}
        check(prov.get("seed") == str(r["seed"]), f"run {rid} seed {prov.get('seed')}")
        check(r["strategy_hash"] in prov.get("strategy", ""), f"run {rid} strategy hash")
        check(prov.get("gpu", "").startswith("n/a ("), f"run {rid} gpu says n/a with a reason")
    drift = {}
    for x in rows("drift"):
        drift.setdefault(x["attrs"]["data-prompt"], set()).add(x["attrs"]["data-drift"])
    for p in want["prompt_ids"]:
        if len(want["runs"]) > 1 and p["prompt_id"] in drift:
            check(drift[p["prompt_id"]] == ({"yes"} if p["versions"] > 1 else drift[p["prompt_id"]]),
                  f"drift flag of {p['prompt_id']}")
    check(any(d == {"yes"} for d in drift.values()) or len(want["runs"]) < 2, "no drift flagged")
    for b in bad:
        print("MISMATCH:", b)
    print(f"checked {len(dom.rows)} rows in {len(dom.sections)} sections: {'ok' if not bad else str(len(bad)) + ' mismatches'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
