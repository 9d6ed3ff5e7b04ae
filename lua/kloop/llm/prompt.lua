-- kloop.llm.prompt: prompt templates (prompts/*.txt): loading, versions, the context they see, rendering.
--
-- A template is plain text. `{{a.b}}` is replaced by a value of the context;
-- `{{#a.b}} ... {{/a.b}}` keeps its body only when the value is present (not false,
-- not ""), `{{^a.b}} ... {{/a.b}}` only when it is absent; `{{! note }}` is dropped.
-- A section tag alone on its line takes the line with it. A line holding a
-- placeholder whose value is absent is left out whole, so no fact ever renders as a
-- gap or a "(none)": a template puts each optional fact on its own line (or in a
-- section). A line `=== system ===` / `=== user ===` starts that message. The id of a
-- template is its file name without .txt, its version the FNV-1a 64 hex of its bytes,
-- so every call records exactly which text produced it. A template `ID` with a
-- sibling `ID_host.txt` is a pair: host (C) tasks get the sibling's text, and the
-- version is the hash of both texts.
-- Failure behaviour: unknown templates and unknown placeholders return nil, message
-- (every unknown placeholder is listed); nothing here raises on bad input.
-- The context templates receive is kloop.llm.context's (re-exported here).
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local native = require("kloop.native")
local context = require("kloop.llm.context")
local evidence = require("kloop.llm.evidence")

local M = {}

-- Folders searched for templates, first match wins.
function M.dirs(opts)
  local out = {}
  if opts and opts.prompts_dir then out[#out + 1] = opts.prompts_dir end
  local env = os.getenv("KLOOP_PROMPTS")
  if env and env ~= "" then out[#out + 1] = env end
  if native.source_dir and native.source_dir ~= "" then out[#out + 1] = native.source_dir .. "/prompts" end
  local exe = sys.exe_path()
  if exe then
    local bin = util.dirname(exe)
    out[#out + 1] = bin .. "/../prompts"
    out[#out + 1] = bin .. "/../share/kloop/prompts"
  end
  return out
end

-- A template's version: one FNV-1a 64 pass (seed 0) in hex, 16 digits. Not the 32-digit
-- sys.content_hash: versions are stored in run databases and must stay as they are.
function M.version_of(text)
  return sys.hex64(sys.hash64(text, 0))
end

-- Loads a template by id (or a path ending in .txt): {id, version, text, path}.
function M.load(id, opts)
  if type(id) ~= "string" or id == "" then return nil, "prompt id must be a non-empty string" end
  local candidates = {}
  if id:match("%.txt$") then
    candidates[1] = id
  else
    if not id:match("^[%w_%-]+$") then return nil, "bad prompt id '" .. id .. "' (letters, digits, _ and -)" end
    for _, d in ipairs(M.dirs(opts)) do candidates[#candidates + 1] = d .. "/" .. id .. ".txt" end
  end
  for _, path in ipairs(candidates) do
    local text = util.read_file(path)
    if text then
      local tpl = { id = util.basename(path):gsub("%.txt$", ""), version = M.version_of(text), text = text, path = path }
      -- the host (C) variant of the same request, beside it; one version for the pair
      local hpath = path:gsub("%.txt$", "_host.txt")
      local htext = not path:match("_host%.txt$") and util.read_file(hpath)
      if htext then
        tpl.host = { id = tpl.id .. "_host", version = M.version_of(htext), text = htext, path = hpath }
        tpl.version = M.version_of(text .. "\0" .. htext)
      end
      return tpl
    end
  end
  return nil, string.format("no prompt template '%s' (looked in %s)", id,
    table.concat(M.dirs(opts), ", "))
end

-- Ids of the templates found, sorted.
function M.list(opts)
  local seen, out = {}, {}
  for _, d in ipairs(M.dirs(opts)) do
    local p = io.popen("ls " .. util.shell_quote(d) .. " 2>/dev/null")
    if p then
      for name in p:lines() do
        local id = name:match("^([%w_%-]+)%.txt$")
        if id and not seen[id] then seen[id] = true out[#out + 1] = id end
      end
      p:close()
    end
  end
  table.sort(out)
  return out
end

-- Looks a dotted path up; returns found, value.
local function lookup(ctx, path)
  local v = ctx
  for part in path:gmatch("[^%.]+") do
    if v == false then return true, false end
    if type(v) ~= "table" then return false end
    local n = tonumber(part)
    local nv = v[part]
    if nv == nil and n then nv = v[n] end
    if nv == nil then return false end
    v = nv
  end
  return true, v
end

local function present(v)
  return v ~= nil and v ~= false and v ~= "" and not (type(v) == "table" and next(v) == nil)
end

local function fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
    return string.format("%.4g", v)
  end
  if type(v) == "table" then
    local parts = {}
    for _, x in ipairs(v) do parts[#parts + 1] = fmt_value(x) end
    return table.concat(parts, "\n")
  end
  -- a multi-line value (a source file) ends where its line ends
  return (tostring(v):gsub("\n+$", ""))
end

local SECTION_LINE = "^[ \t]*({{[#%^/][%w_%.]+}})[ \t]*$"

-- Renders text with ctx: string, or nil, "unknown placeholder(s) ...". Every name of
-- the template is checked, in shown and hidden sections alike; a name under a value
-- that is false (a section without data, such as best before there is one) is absent,
-- not unknown.
function M.render(text, ctx)
  local unknown, seen = {}, {}
  local function note(name)
    if not seen[name] then seen[name] = true unknown[#unknown + 1] = "{{" .. name .. "}}" end
  end
  text = text:gsub("{{!.-}}\n?", "")
  for name in text:gmatch("{{[#%^/]?%s*([%w_%.]+)%s*}}") do
    if not lookup(ctx, name) then note(name) end
  end
  if #unknown > 0 then
    return nil, "unknown placeholder" .. (#unknown > 1 and "s " or " ") .. table.concat(unknown, ", ")
  end
  -- standalone section tags lose their line; inline ones stay in theirs
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local tag = line:match(SECTION_LINE)
    lines[#lines + 1] = tag or (line .. "\n")
  end
  text = table.concat(lines):gsub("\n$", "")
  local function sections(s)
    -- innermost names are distinct, so a non-greedy match is enough
    return (s:gsub("{{([#%^])([%w_%.]+)}}(.-){{/%2}}", function(kind, name, body)
      local _, v = lookup(ctx, name)
      local show = present(v)
      if kind == "^" then show = not show end
      return show and sections(body) or ""
    end))
  end
  text = sections(text)
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local missing = false
    local filled = line:gsub("{{%s*([%w_%.]+)%s*}}", function(name)
      local _, v = lookup(ctx, name)
      if not present(v) then missing = true return "" end
      return fmt_value(v)
    end)
    if not missing then out[#out + 1] = filled end
  end
  -- a dropped line leaves no run of blank lines behind
  return (table.concat(out, "\n"):gsub("\n[ \t]*\n[ \t]*\n+", "\n\n"))
end

-- Renders a template into chat messages: {{role=, content=}...}, or nil, err.
function M.messages(tpl, ctx)
  local variant = tpl.host and ctx and type(ctx.task) == "table" and ctx.task.backend == "host" and tpl.host or tpl
  local text, err = M.render(variant.text, ctx)
  if not text then return nil, (tpl.id or "prompt") .. ": " .. err end
  local msgs, role, buf = {}, "user", {}
  local function flush()
    local content = table.concat(buf, "\n"):gsub("^%s+", ""):gsub("%s+$", "")
    if content ~= "" then msgs[#msgs + 1] = { role = role, content = content } end
    buf = {}
  end
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local r = line:match("^===%s*(%a+)%s*===%s*$")
    if r == "system" or r == "user" or r == "assistant" then
      flush()
      role = r
    else
      buf[#buf + 1] = line
    end
  end
  flush()
  if #msgs == 0 then return nil, (tpl.id or "prompt") .. ": renders to nothing" end
  return msgs
end

-- ---- the context (kloop.llm.context) and what results may say (kloop.llm.evidence) ----

M.context, M.cpu_facts, M.gpu_fallback = context.context, context.cpu_facts, context.gpu_fallback
M.reason_text = evidence.reason_text
M.LOG_MAX_BYTES, M.COMPILE_REASON_MAX_BYTES = evidence.LOG_MAX_BYTES, evidence.COMPILE_REASON_MAX_BYTES

return M
