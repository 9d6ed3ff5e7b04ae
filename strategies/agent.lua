-- strategies/agent.lua: a tool-calling agent: the configured model refines the kernel in
-- one multi-turn conversation per lineage, one lineage after another, with kloop's tools
-- (kloop.mcp.tools: task_info, compile, check, profile, history, best) and the result of
-- each call fed back. The driver evaluates, verifies and stores every candidate a check
-- or profile call names (proposer agent:<model>); each conversation is stored with the
-- candidates it produced (docs/AGENTS.md, "The agent strategy").
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local json = require("kloop.mcp.json")
local tools = require("kloop.mcp.tools")
local prompt = require("kloop.llm.prompt")
local extract = require("kloop.llm.extract")
local proposer_llm = require("kloop.search.proposer_llm")
local driver = require("kloop.search.driver")

local S = {
  name = "agent",
  description = "a tool-calling model refines the kernel in one conversation per lineage (check, profile, ... as tools)",
  requires = { api = 1 },
  options = {
    { "lineages", 2, "conversations, one after another, each from the best so far" },
    { "turns", 8, "model replies per lineage" },
    { "max_turns", 0, "model replies in all (0: lineages x turns)", "uint" },
    { "lineage_tokens", 0, "LLM tokens per lineage (0: no limit but the run's --tokens)", "uint" },
    { "max_tokens", 8192, "output tokens per model reply" },
    { "result_bytes", 16384, "a tool result (sent back and stored) and each stored text is cut to this", "count" },
  },
}

-- The tools the model gets: the MCP server's, less compare and promote (their writes
-- would bypass the driver).
S.TOOLS = { "task_info", "compile", "check", "profile", "history", "best" }
local EVALUATES = { check = true, profile = true }
-- Calls of one reply that are carried out; each one past it is answered "not run".
S.MAX_CALLS = 16

S.PROMPT = [[
=== system ===
You are an expert {{agent.engineer}} performance engineer. You make one kernel faster while it computes the same
result within the stated tolerance, working with kloop's tools in a loop: change the kernel, call `check` with the
complete source (kloop compiles it, verifies it against the reference on fresh random inputs at every check size
and times it at the benchmark size), read the verdict and the time, refine. `profile` adds hardware counters and
hints (CUDA tasks), `compile` only compiles, `task_info`, `history` and `best` describe the task and this run's
candidates. kloop judges and records every source you check. Keep the entry's exact signature. When you have
nothing better to try, answer without a tool call.

=== user ===
Task: {{task.name}}. Entry (keep this exact signature):

    {{task.signature}}

{{#task.args}}
Arguments:
{{task.args}}
{{/task.args}}

Benchmark size: {{task.sizes}}.
It must also be correct at: {{task.check_sizes}}.
Correctness: {{task.tolerance}}.
Work: {{task.cost}}.
Tunable parameters (passed as -D defines): {{task.params}}.
GPU: {{gpu.name}} ({{gpu.arch}}), {{gpu.sm_count}} SMs.
CPU: {{host.cpu}}.

The kernel to improve (candidate {{agent.start_id}}{{#parent.summary}}: {{parent.summary}}{{/parent.summary}}):

```{{agent.fence}}
{{parent.source}}
```

You have {{agent.turns}} replies in this conversation.]]
S.PROMPT_VERSION = prompt.version_of(S.PROMPT)

-- s cut to n bytes with a marker saying how much was left out.
local function cut(s, n)
  if type(s) ~= "string" or #s <= n then return s end
  return s:sub(1, n) .. string.format("\n[... %d more bytes truncated by kloop]", #s - n)
end

-- A copy of v with every string cut to n bytes (what the store keeps of a conversation).
local function bounded(v, n)
  if type(v) == "string" then return cut(v, n) end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = bounded(x, n) end
  return setmetatable(out, getmetatable(v))
end
S.bounded = bounded

-- The id a model sees for a candidate: its store id, or its place in the run without one.
local function id_of(cand) return cand.store_id or cand.id end

local function find(ctx, pred)
  for _, c in ipairs(ctx.history) do if pred(c) then return c end end
end

local function by_id(ctx, id)
  return find(ctx, function(c) return id_of(c) == id end)
end

local function name_of(c, task)
  local name = tostring(c.name or "agent"):gsub("[^%w%._%-]", "_"):sub(1, 64)
  if not name:match("%.cu?$") then name = name .. (task.backend == "host" and ".c" or ".cu") end
  return name
end

-- ---- the conversation's row ----

function S.save(ctx, lin)
  if not (ctx.store and lin.conv_id) then return end
  local ok, err = ctx.store.db:update_conversation(lin.conv_id, { messages = bounded(lin.messages, ctx.opts.result_bytes),
    turns = lin.turns, tokens_in = lin.tokens_in, tokens_out = lin.tokens_out, cost = lin.cost,
    stop_reason = lin.stop_reason })
  if not ok then ctx.store:warn("update_conversation", err) end
end

-- Ends a lineage's conversation with why.
local function stop(ctx, lin, why)
  lin.stop_reason = lin.stop_reason or why
  S.save(ctx, lin)
  if ctx.agent.current == lin then ctx.agent.current = nil end
end

-- ---- the host the tools judge through: the driver ----

-- Evaluates what a check or profile call names, through the driver (stored, verified,
-- the best followed, progress shown), once per source and defines: a repeat gets the
-- earlier result. Returns result, id, profile status.
local function judge(ctx, c, tool)
  local A = ctx.agent
  local at = A.at
  local lin = at.lin
  local cand = { source = c.src, defines = c.defines, name = name_of(c, ctx.task), full = true }
  local key = driver.key(cand)
  local old = ctx.done_keys[key] and find(ctx, function(x) return x.result and driver.key(x) == key end)
  if old then
    cand = old
  else
    ctx.done_keys[key] = true
    cand.proposer, cand.model, cand.prompt_id, cand.prompt_hash = A.tools.proposer, lin.ep.model, "agent", S.PROMPT_VERSION
    cand.parent = (c.parent and by_id(ctx, c.parent)) or lin.best or lin.start
    cand.sampling = { temperature = ctx.opts.temperature, max_tokens = ctx.opts.max_tokens }
    cand.llm_seed, cand.llm_seq, cand.lineage = at.params.seed, at.h.seq, lin.n
    if not at.charged and at.h.usage and not at.h.cached then
      -- the reply's tokens and cost go with the first candidate it produced
      at.charged = true
      cand.tokens_in, cand.tokens_out, cand.cost = at.h.usage.input, at.h.usage.output, at.h.cost
    end
    if ctx.store then
      cand.conversation_id = lin.conv_id
      -- in the store, pointing at its conversation, before it runs
      local id = ctx.store:propose(ctx, cand)
      if id and lin.conv_id then
        local ok, err = ctx.store.db:set_candidate_conversation(id, lin.conv_id)
        if not ok then ctx.store:warn("set_candidate_conversation", err) end
      end
    end
    ctx:evaluate(cand)
    lin.candidates = lin.candidates + 1
    -- the lineage goes on from its fastest verified candidate; the run's best is the
    -- driver's (crowned by its own rule), and a lineage reports those it crowned
    if driver.is_best_of(cand.result, lin.best) then lin.best = cand end
    if cand.improved then lin.crowned = cand end
  end
  local p
  if tool == "profile" then
    local s, why = ctx:profile(cand)
    p = s and { verdict = "ok" } or { verdict = "failed", reason = why }
  end
  return cand.result, id_of(cand), p
end

local function row(c)
  return { id = id_of(c), name = c.name, proposer = c.proposer, evaluation = c.result, evaluations = { c.result } }
end

local function host(ctx)
  return {
    run_id = ctx.run_id,
    judge = function(c, tool) return judge(ctx, c, tool) end,
    lookup = function(id)
      local c = by_id(ctx, id)
      return c and { id = id, source = c.source, params = c.defines, name = c.name }
    end,
    candidates = function()
      local out = {}
      for _, c in ipairs(ctx.history) do if c.result and id_of(c) then out[#out + 1] = row(c) end end
      return out
    end,
    best = function()
      local b = ctx.best
      if not b then return nil end
      local out = row(b)
      out.source, out.params, out.speedup = b.source, b.defines, ctx.baseline and ctx:speedup(b)
      return out
    end,
  }
end

-- ---- turns ----

function S.init(ctx)
  local llm, err = proposer_llm.new(ctx)
  if not llm then error("the agent strategy needs a model: " .. tostring(err), 0) end
  local A = { llm = llm, lineage = 0, turns = 0, all = {} }
  A.max_turns = ctx.opts.max_turns > 0 and ctx.opts.max_turns or ctx.opts.lineages * ctx.opts.turns
  A.tools = tools.new({ task = ctx.task, host = host(ctx), tools = S.TOOLS })
  A.defs = {}
  for i, d in ipairs(A.tools.definitions) do
    A.defs[i] = { name = d.name, description = d.description, parameters = d.inputSchema }
  end
  ctx.agent = A
  -- a resumed run goes on with its next lineage: the stored ones count (their turns too),
  -- and one the stop cut short says so
  if ctx.store and ctx.store.resumed then
    for _, c in ipairs(ctx.store.db:conversations(ctx.run_id)) do
      A.lineage, A.turns = math.max(A.lineage, c.lineage or 0), A.turns + (c.turns or 0)
      if not c.stop_reason then
        local ok, uerr = ctx.store.db:update_conversation(c.id, { stop_reason = "kloop stopped during it (run resumed)" })
        if not ok then ctx.store:warn("update_conversation", uerr) end
      end
    end
  end
end

-- Starts the next lineage's conversation from the best so far, or nil when none is left.
local function start_lineage(ctx)
  local A = ctx.agent
  if A.lineage >= ctx.opts.lineages or A.turns >= A.max_turns then return nil end
  A.lineage = A.lineage + 1
  local ep = A.llm.eps[(A.lineage - 1) % #A.llm.eps + 1]
  A.tools:set_client({ name = ep.model })
  local start = ctx.best or ctx.baseline
  local pctx = prompt.context({ task = ctx.task, gpu = ctx.ev.gpu, parent = start, best = ctx.best, baseline = ctx.baseline })
  local host_task = ctx.task.backend == "host"
  pctx.agent = { engineer = host_task and "CPU (C)" or "CUDA", fence = host_task and "c" or "cuda",
    start_id = id_of(start) or false, turns = math.min(ctx.opts.turns, A.max_turns - A.turns) }
  local messages, merr = prompt.messages({ id = "agent", version = S.PROMPT_VERSION, text = S.PROMPT }, pctx)
  if not messages then error(merr) end
  local lin = { n = A.lineage, ep = ep, messages = messages, turns = 0, calls = {}, start = start, best = nil,
    tokens_in = 0, tokens_out = 0, candidates = 0, bad = 0 }
  if ctx.store then
    local id, err = ctx.store.db:add_conversation(ctx.run_id, { lineage = lin.n, model = ep.model,
      messages = bounded(messages, ctx.opts.result_bytes) })
    if not id then ctx.store:warn("add_conversation", err) end
    lin.conv_id = id
  end
  A.current = lin
  A.all[#A.all + 1] = lin
  return lin
end

-- One tool call (the i-th of its reply): the tool result message's content and whether
-- it is an error.
local function run_call(ctx, lin, call, i)
  local name = call.name ~= "" and call.name or "(no name)"
  lin.calls[name] = (lin.calls[name] or 0) + 1
  if i > S.MAX_CALLS then return string.format("not run: at most %d tool calls of a reply are carried out", S.MAX_CALLS), true end
  if call.error then
    lin.bad = lin.bad + 1
    return "bad arguments: " .. call.error .. "; send a JSON object that fits the tool's input schema", true
  end
  if EVALUATES[call.name] then
    local spent = ctx:budget_spent()
    if spent then
      lin.stop_reason = lin.stop_reason or ("budget: " .. spent)
      return "not run: the run's budget (" .. spent .. ") is spent", true
    end
  end
  local res, err, field = ctx.agent.tools:call(call.name, call.arguments)
  if not res then
    lin.bad = lin.bad + 1
    return "bad arguments: " .. tostring(err) .. (field and (" (field " .. field .. ")") or ""), true
  end
  if res.is_error then return cut(res.text, ctx.opts.result_bytes), true end
  return cut(json.encode(res.structured), ctx.opts.result_bytes), false
end

-- A reply without a tool call ends the conversation; a kernel in its text is checked
-- (the model's last word), like the other strategies' replies.
local function final_reply(ctx, lin, text)
  local k = extract.extract(text or "", { entry = ctx.task.entry })
  if not k then return stop(ctx, lin, "final answer: no tool call") end
  local spent = ctx:budget_spent()
  if spent then return stop(ctx, lin, "final answer: a kernel in the text, not checked (budget: " .. spent .. ")") end
  local r, id = judge(ctx, { src = k.source, name = "final" }, "check")
  stop(ctx, lin, string.format("final answer: a kernel in the text (candidate %s, %s)", tostring(id), r.verdict))
end

-- Why a lineage must stop after a turn, or nil.
local function turn_limit(ctx, lin)
  local A, o = ctx.agent, ctx.opts
  if lin.turns >= o.turns then return "turns" end
  if A.turns >= A.max_turns then return "total turns" end
  if o.lineage_tokens > 0 and lin.tokens_in + lin.tokens_out >= o.lineage_tokens then return "lineage tokens" end
  local spent = ctx:budget_spent()
  if spent then return "budget: " .. spent end
end

-- One turn: the model's reply, then every tool call it made, each result appended.
function S.turn(ctx, lin)
  local A = ctx.agent
  lin.turns, A.turns = lin.turns + 1, A.turns + 1
  local params = { temperature = ctx.opts.temperature, seed = ctx.rng:int(1, 2 ^ 31 - 1), max_tokens = ctx.opts.max_tokens,
    tools = A.defs }
  local session = A.llm.session
  local h = session:request({ lin.ep }, lin.messages, params, { prompt = { id = "agent", version = S.PROMPT_VERSION } })
  session:wait(h, nil, function(x) A.llm:waiting(ctx, x) end)
  if h.usage and not h.cached then
    lin.tokens_in, lin.tokens_out = lin.tokens_in + (h.usage.input or 0), lin.tokens_out + (h.usage.output or 0)
    if h.cost then lin.cost = (lin.cost or 0) + h.cost end
  end
  if not h.ok then
    if not ctx.opts.quiet then print("  agent: the model call failed: " .. tostring(h.reason)) end
    stop(ctx, lin, "the model call failed: " .. tostring(h.reason))
    A.llm:failed(ctx, h, h.reason) -- (a refused key or a spent quota ends the run here)
    return
  end
  ctx.llm.ok, ctx.llm.streak = ctx.llm.ok + 1, 0
  lin.messages[#lin.messages + 1] = { role = "assistant", content = h.text or "", tool_calls = h.tool_calls }
  A.at = { lin = lin, h = h, params = params }
  if not h.tool_calls then
    final_reply(ctx, lin, h.text)
    A.at = nil
    return
  end
  for i, call in ipairs(h.tool_calls) do
    local content, is_error = run_call(ctx, lin, call, i)
    lin.messages[#lin.messages + 1] = { role = "tool", tool_call_id = call.id, name = call.name, content = content,
      is_error = is_error or nil }
  end
  A.at = nil
  local why = lin.stop_reason or turn_limit(ctx, lin)
  if why then return stop(ctx, lin, why) end
  S.save(ctx, lin)
end

-- Turns until one evaluated something (the driver then checks its budgets) or no
-- lineage is left (the run ends).
function S.propose(ctx)
  local A = ctx.agent
  local n0 = #ctx.history
  while true do
    local spent = ctx:budget_spent()
    if spent then
      if A.current then stop(ctx, A.current, "budget: " .. spent) end
      return { { skip = true } }
    end
    local lin = A.current or start_lineage(ctx)
    if not lin then return nil end
    S.turn(ctx, lin)
    if #ctx.history > n0 then return { { skip = true } } end
  end
end

-- A conversation's shape: turns and tool calls by name.
function S.shape(lin)
  local parts = {}
  for _, name in ipairs(util.sorted_keys(lin.calls)) do parts[#parts + 1] = name .. " " .. lin.calls[name] end
  return string.format("%d turns, tool calls: %s%s", lin.turns, #parts > 0 and table.concat(parts, ", ") or "none",
    lin.bad > 0 and string.format(" (%d refused: bad arguments)", lin.bad) or "")
end

function S.done(ctx)
  local A = ctx.agent
  if not A then return end
  if A.current then stop(ctx, A.current, sys.interrupted() and "interrupted" or "the run ended") end
  A.llm:close()
  if ctx.opts.quiet then return end
  for _, lin in ipairs(A.all) do
    local best = lin.crowned and ctx:speedup(lin.crowned)
    print(string.format("conversation %s (lineage %d, %s): %s; %d candidates, %s; stop: %s", tostring(lin.conv_id or "-"),
      lin.n, lin.ep.model, S.shape(lin), lin.candidates, best and ("new best " .. util.fmt_x(best)) or "no new best",
      tostring(lin.stop_reason)))
  end
end

return S
