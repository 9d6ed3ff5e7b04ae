"""tests/mcp/client_test.py: the `mcp` SDK's own stdio client against `kloop mcp` on a
host task: lists the tools, calls each one, checks every result against the tool's
outputSchema, sees a cheating candidate refused, sends malformed and oversized
requests (the server answers with errors and keeps serving), then reads the store for
the agent's candidates and their provenance.

usage: client_test.py KLOOP REPO_ROOT WORKDIR
"""
import asyncio
import json
import os
import sqlite3
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

KLOOP, ROOT, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TASK = os.path.join(ROOT, "examples/cpu/sgemm.c")
ADV = os.path.join(ROOT, "tests/adversarial/host")
DB = os.path.join(WORK, "mcp.db")
CLIENT = "kloop-ci-client"


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)
    print("ok:", what, flush=True)


def read(name):
    with open(os.path.join(ADV, name)) as f:
        return f.read()


async def expect_error(session, name, args, field):
    try:
        await session.call_tool(name, args)
    except MCPError as e:
        check(e.error.code == -32602 and field in e.error.message,
              f"{name} {str(args)[:40]} refused naming {field} ({e.error.message[:80]})")
        return
    raise SystemExit(f"FAIL: {name} with {str(args)[:60]} was accepted")


async def main():
    # the server is started through a wrapper script until cli/main.lua maps `mcp`
    cmd = os.environ.get("KLOOP_MCP_ARGS")
    args = json.loads(cmd) if cmd else ["mcp"]
    params = StdioServerParameters(command=KLOOP, args=args + [TASK, "--db", DB, "--run-name", "ci"], cwd=WORK)
    errlog = open(os.path.join(WORK, "server.stderr"), "w")
    async with stdio_client(params, errlog=errlog) as (rd, wr):
        from mcp.types import Implementation
        async with ClientSession(rd, wr, client_info=Implementation(name=CLIENT, version="9.8.7")) as session:
            init = await session.initialize()
            check(init.protocol_version == "2025-11-25", "protocol 2025-11-25 agreed")
            listed = (await session.list_tools()).tools
            schemas = {t.name: t.output_schema for t in listed}
            want = {"task_info", "compile", "check", "profile", "compare", "history", "best", "promote"}
            check(set(schemas) == want, "tools/list has the eight tools")
            for t in listed:
                jsonschema.Draft202012Validator.check_schema(t.input_schema)
                jsonschema.Draft202012Validator.check_schema(t.output_schema)

            async def call(name, args=None, error=False):
                r = await session.call_tool(name, args or {})
                check(bool(r.is_error) == error, f"{name} {'fails' if error else 'succeeds'}")
                if not error:
                    jsonschema.validate(r.structured_content, schemas[name])
                    check(json.loads(r.content[0].text) == r.structured_content, f"{name}: text = structured")
                return r

            info = (await call("task_info")).structured_content
            check(info["backend"] == "host" and info["entry"] == "sgemm", "task_info names the host sgemm")
            base = (await call("check")).structured_content
            check(base["verdict"] == "ok" and base["time_ms"] > 0 and len(base["ci_ms"]) == 2, "baseline verified and timed")
            comp = (await call("compile", {"source": info["baseline_source"]})).structured_content
            check(comp["verdict"] == "ok", "compile of the baseline source")
            bad = (await call("compile", {"source": "void sgemm( {"})).structured_content
            check(bad["verdict"] == "compile_error" and bad["log"], "a syntax error: compile_error with a log")
            cheat = (await call("check", {"source": read("hardcoded_size.c"), "name": "hardcoded"})).structured_content
            check(cheat["verdict"] == "wrong" and cheat["evidence"], "a size-specialised cheat: wrong, with evidence")
            outside = (await call("check", {"source": read("write_outside.c")})).structured_content
            check(outside["verdict"] not in ("ok",), f"a write outside the sandbox refused ({outside['verdict']})")
            flood = (await call("check", {"source": read("stdout_flood.c"), "name": "flood"})).structured_content
            check(flood["verdict"] == "ok", "a candidate flooding stdout: stdout still carries only protocol")
            cmp = (await call("compare", {"a": {"candidate_id": base["candidate_id"]}, "b": {"source": read("stdout_flood.c")},
                                          "budget_s": 0.5})).structured_content
            check(cmp["a"]["verdict"] == "ok" and cmp["ratio"] > 0, "compare: both verified, a ratio")
            await call("profile", {}, error=True)
            hist = (await call("history", {"limit": 2})).structured_content
            check(hist["total"] >= 5 and len(hist["candidates"]) == 2 and hist["truncated"], "history capped at its limit")
            best = (await call("best", {"include_source": True})).structured_content
            check(best["found"] and best["verdict"] == "ok", "best is a verified candidate")
            prom = (await call("promote", {"candidate_id": best["candidate_id"]})).structured_content
            check(prom["state"] in ("promoted", "refused", "failed") and len(prom["steps"]) >= 1,
                  "promote runs the staged path: %s (%s)" % (prom["state"], prom.get("reason", "")[:120]))

            # refused calls name the field, and the server keeps serving
            await expect_error(session, "check", {"source": 42}, "arguments.source")
            await expect_error(session, "check", {"sauce": "x"}, "arguments.sauce")
            await expect_error(session, "compare", {"a": {}}, "arguments.b")
            await expect_error(session, "check", {"defines": {"1BAD": 1}}, "arguments.defines")
            await expect_error(session, "history", {"limit": 100000}, "arguments.limit")
            await expect_error(session, "check", {"source": "x" * (300 * 1024)}, "arguments.source")
            await expect_error(session, "no_such_tool", {}, "unknown tool")
            check((await call("history")).structured_content["total"] >= 5, "still serving after refused calls")
    errlog.close()


def raw_session():
    """Malformed lines straight on the server's stdin: each gets its error, the server goes on."""
    import subprocess
    args = json.loads(os.environ.get("KLOOP_MCP_ARGS", '["mcp"]'))
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        "not json", [{"jsonrpc": "2.0", "id": 2, "method": "ping"}], "x" * (10 * 1024 * 1024),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "check"}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    data = "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines)
    p = subprocess.run([KLOOP] + args + [TASK, "--db", DB], input=data.encode(), capture_output=True, cwd=WORK,
                       timeout=300)
    out = [json.loads(l) for l in p.stdout.decode().splitlines()]
    check(p.returncode == 0, "end of input: exit 0")
    check(out[0]["result"]["protocolVersion"] == "2025-11-25", "an unknown version gets the server's newest")
    check([m.get("error", {}).get("code") for m in out[1:4]] == [-32700, -32600, -32600],
          "bad JSON, a batch and a 10 MB line: -32700, -32600, -32600")
    check(out[4]["id"] == 3 and out[4]["result"]["structuredContent"]["verdict"] == "ok", "then a tool call works")
    check(out[5] == {"jsonrpc": "2.0", "id": 4, "result": {}}, "and ping")


asyncio.run(main())
raw_session()
con = sqlite3.connect(DB)
rows = con.execute("""SELECT c.proposer, c.model, c.note, r.strategy_path, r.options_json FROM candidates c
                      JOIN runs r ON r.id = c.run_id WHERE c.proposer = ?""", ("agent:" + CLIENT,)).fetchall()
check(len(rows) >= 4, f"the store holds the agent's candidates ({len(rows)})")
check(all(r[1] == CLIENT + " 9.8.7" and json.loads(r[2])["client_version"] == "9.8.7" for r in rows),
      "each with the client's name and version")
check(rows[0][3] == "mcp" and json.loads(rows[0][4])["run_name"] == "ci", "in a run of strategy mcp")
status = con.execute("SELECT status FROM runs ORDER BY id").fetchall()
check(all(s[0] == "done" for s in status), "every run ended done")
verdicts = {v for (v,) in con.execute("""SELECT e.verdict FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
                                         WHERE c.name = 'hardcoded'""")}
check(verdicts == {"wrong"}, "the cheat's evaluation is stored as wrong")
print("PASS")
