-- bench/pipeline.lua: does the evaluator sit idle while a model thinks? Greedy with the
-- LLM proposer against the mock server answering every request after LATENCY seconds
-- (concurrency 8), on the tunable gemm task; idle = 1 - evaluation time / run time.
-- usage: kloop bench/pipeline.lua [TASK] [BUDGET] [LATENCY] [--no-pipeline]
--        (KLOOP_PIPELINE_DEPTH=N: requests kept in flight ahead; default the batch, 8)
local util = require("kloop.util")
local core = require("kloop.core.ffi")
local mockmod = dofile("tests/mock_llm/mock.lua")
local task_path = arg[1] or "kernels/gemm_tiled.lua"
local budget = tonumber(arg[2]) or 32
local latency = tonumber(arg[3]) or 5
local pipeline = arg[4] ~= "--no-pipeline"
local task = assert(kloop.load_task(task_path))
if task.backend == "cuda" and not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end

local mock = assert(mockmod.start())
-- distinct replies: the task's kernel with a comment naming the reply
local replies = {}
for i = 1, 4 * budget do
  replies[i] = { delay_s = latency, text = "Variant " .. i .. ".\n\n```cuda\n// variant " .. i .. "\n" .. task.source .. "```\n" }
end
mock:script({ replies = replies, reset = true })
local strategy = dofile("strategies/greedy.lua")
local args = { task_path, "--budget", tostring(budget), "--batch", "8", "--model", "mock",
  "--llm-url", mock.openai_url, "--timing-budget", "0.5", "--no-cache", "--no-store", "--quiet",
  "--pipeline=" .. tostring(pipeline), "--pipeline-depth", os.getenv("KLOOP_PIPELINE_DEPTH") or "0" }
local t0 = core.now()
local rc = require("kloop.search.driver").run(strategy, "strategies/greedy.lua", args)
local ctx = require("kloop.search.driver").last_ctx
mock:stop()
local total = core.now() - t0
local base = ctx.baseline and ctx.baseline.result.wall_seconds or 0
local busy = (ctx.busy or 0) - base
local span = total - base
print(string.format("PIPELINE: %s, %d candidates, LLM latency %.0f s: run %.1f s, evaluating %.1f s, idle %.1f%%",
  pipeline and "on" or "off", #ctx.history - 1, latency, span, busy, 100 * (1 - busy / span)))
os.exit(rc)
