-- kloop.eval.plan: launch plans (grid, block, shared memory; several kernels in sequence),
-- from the task's launch function or from a candidate's `// kloop: launch` comments.
local sys = require("kloop.core.sys")
local task_fields = require("kloop.eval.task_fields")
local sizes = require("kloop.eval.task_sizes")

local M = {}

local LIMITS = { block_threads = 1024, block = { 1024, 1024, 64 }, grid = { 2^31 - 1, 65535, 65535 } }

local function dims(v, what)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or #v < 1 or #v > 3 then return nil, what .. " must be 1 to 3 numbers" end
  local out = {}
  for i = 1, 3 do
    local x = v[i] or 1
    if type(x) ~= "number" or x < 1 or x ~= math.floor(x) then
      return nil, string.format("%s[%d] = %s is not a positive integer", what, i, tostring(v[i]))
    end
    out[i] = x
  end
  return out
end

-- Checks and normalizes one plan: a list of {entry, grid = {x,y,z}, block = {x,y,z}, smem}.
function M.normalize(raw, default_entry)
  if type(raw) ~= "table" then return nil, "a launch plan must be a table" end
  local list = raw.grid and { raw } or raw
  if #list == 0 then return nil, "the launch plan lists no kernel" end
  local out = {}
  for k, l in ipairs(list) do
    local where = #list > 1 and ("kernel " .. k .. ": ") or ""
    if type(l) ~= "table" then return nil, where .. "not a table" end
    local g, err = dims(l.grid, "grid")
    if not g then return nil, where .. err end
    local b
    b, err = dims(l.block, "block")
    if not b then return nil, where .. err end
    for i = 1, 3 do
      if g[i] > LIMITS.grid[i] then return nil, string.format("%sgrid[%d] = %d exceeds %d", where, i, g[i], LIMITS.grid[i]) end
      if b[i] > LIMITS.block[i] then return nil, string.format("%sblock[%d] = %d exceeds %d", where, i, b[i], LIMITS.block[i]) end
    end
    if b[1] * b[2] * b[3] > LIMITS.block_threads then
      return nil, string.format("%sblock has %d threads, more than 1024", where, b[1] * b[2] * b[3])
    end
    local smem = l.smem or 0
    if type(smem) ~= "number" or smem < 0 or smem ~= math.floor(smem) then
      return nil, where .. "smem must be a non-negative integer (bytes)"
    end
    local entry = l.entry or default_entry
    if type(entry) ~= "string" then return nil, where .. "entry must be a kernel name" end
    out[k] = { entry = entry, grid = g, block = b, smem = smem }
  end
  return out
end

-- The task's own plan at a size and (optionally) a point of the parameter space: the
-- launch function gets one table, the point's parameters and the sizes (a size wins
-- on a clash). Raises a task error (load time) when it fails.
function M.for_task(task, size, file, params)
  local launch = task.launch
  local ok, raw = true, launch
  if type(launch) == "function" then ok, raw = pcall(launch, sizes.with_params(size, params)) end
  if not ok and sys.is_interrupt(raw) then error(raw, 0) end -- Ctrl-C, not a failed launch function
  if not ok then task_fields.fail(file or task.file, "launch", "the launch function failed: " .. tostring(raw)) end
  local p, err = M.normalize(raw, task.entry)
  if not p then task_fields.fail(file or task.file, "launch", err) end
  return p
end

---------------------------------------------------------------------------
-- A candidate's own plan: `// kloop: launch grid = {...}, block = {...}, smem = ...`
-- lines, one per kernel in order. A model wrote them, so they are never run as Lua:
-- a tokenizer and a recursive-descent parser read a small expression language
-- (docs/TASKS.md, "A candidate's own launch plan"); every step is bounded and linear
-- in the comment, and no pattern that can backtrack touches the text.

local byte, sub, find, fmt = string.byte, string.sub, string.find, string.format
local floor, ceil = math.floor, math.ceil

local function util_sorted(t)
  local out = {}
  for k in pairs(t) do if type(k) == "string" then out[#out + 1] = k end end
  table.sort(out)
  return out
end

M.comment_limits = { chars = 1000, tokens = 200, depth = 32, comments = 16, magnitude = 2^53 }
local LIM = M.comment_limits

local function is_space(c) return c == 32 or (c ~= nil and c >= 9 and c <= 13) end
local function is_digit(c) return c ~= nil and c >= 48 and c <= 57 end
local function is_alpha(c) return c ~= nil and ((c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95) end
local function is_word(c) return is_alpha(c) or is_digit(c) end
local function is_hex(c) return is_digit(c) or (c ~= nil and ((c >= 65 and c <= 70) or (c >= 97 and c <= 102))) end

local function skip_space(s, i, j)
  while i <= j and is_space(byte(s, i)) do i = i + 1 end
  return i
end

-- The body of a launch line s[i..j] (`^%s*//%s*kloop:%s*launch%s+BODY`, trailing
-- whitespace dropped) and the column it starts at, or nil.
local function launch_body(s, i, j)
  local p = skip_space(s, i, j)
  if sub(s, p, p + 1) ~= "//" then return nil end
  p = skip_space(s, p + 2, j)
  if sub(s, p, p + 5) ~= "kloop:" then return nil end
  p = skip_space(s, p + 6, j)
  if sub(s, p, p + 5) ~= "launch" then return nil end
  local q = skip_space(s, p + 6, j)
  if q == p + 6 then return nil end
  local e = j
  while e >= q and is_space(byte(s, e)) do e = e - 1 end
  return sub(s, q, e), q - i + 1
end

-- A numeric `#define NAME VALUE` line s[i..j]: name, number; a non-numeric one: name, nil, text.
local function define_line(s, i, j)
  local p = skip_space(s, i, j)
  if byte(s, p) ~= 35 then return nil end
  p = skip_space(s, p + 1, j)
  if sub(s, p, p + 5) ~= "define" then return nil end
  local q = skip_space(s, p + 6, j)
  if q == p + 6 or not is_alpha(byte(s, q)) then return nil end
  local r = q + 1
  while r <= j and is_word(byte(s, r)) do r = r + 1 end
  local name = sub(s, q, r - 1)
  local v = skip_space(s, r, j)
  if v == r then return nil end -- a function-like macro or nothing
  local w = v
  if byte(s, w) == 45 then w = w + 1 end
  while w <= j and (is_digit(byte(s, w)) or byte(s, w) == 46) do w = w + 1 end
  local e = j
  while e >= v and is_space(byte(s, e)) do e = e - 1 end
  local num = w > v and skip_space(s, w, j) > j and tonumber(sub(s, v, w - 1))
  if num then return name, num end
  return name, nil, sub(s, v, math.min(e, v + 39))
end

-- Launch lines of a source, in order: {body, line, col}; plus the #define values.
-- One pass over the lines, each byte looked at a bounded number of times.
local function scan(source)
  local comments, consts, other = {}, {}, {}
  local n, pos, line = #source, 1, 0
  while pos <= n do
    local nl = find(source, "\n", pos, true)
    local j = (nl or n + 1) - 1
    line = line + 1
    local p = skip_space(source, pos, j)
    local c = byte(source, p)
    if c == 47 then
      local body, col = launch_body(source, pos, j)
      if body then comments[#comments + 1] = { body = body, line = line, col = col } end
    elseif c == 35 then
      local name, num, text = define_line(source, pos, j)
      if num then consts[name] = num elseif name then other[name] = text end
    end
    pos = j + 2
  end
  return comments, consts, other
end

-- The `// kloop: launch` lines of a source: {body = text, line = n, col = c}, in order.
function M.launch_comments(source)
  return (scan(source))
end

local PUNCT = { [40] = true, [41] = true, [42] = true, [43] = true, [44] = true, [45] = true,
  [46] = true, [47] = true, [37] = true, [59] = true, [61] = true, [123] = true, [125] = true }
local FUNCS = { cdiv = 2, floor = 1, ceil = 1, min = -1, max = -1 }
local FIELDS = { grid = true, block = true, smem = true, entry = true }

local function show_byte(c)
  if c >= 33 and c <= 126 then return "'" .. string.char(c) .. "'" end
  return fmt("byte 0x%02X", c)
end

local function show(t)
  if t.k == "eof" then return "end of comment" end
  local text = t.text or t.k
  if #text > 24 then text = sub(text, 1, 24) .. "..." end
  return "'" .. text .. "'"
end

-- Raised inside the parser and the evaluator only; caught in their entry points.
local Refusal = {}
local function refuse(msg, col, tail)
  error(setmetatable({ msg = (col and (msg .. " at column " .. col) or msg) .. (tail or "") }, Refusal), 0)
end

local function tokenize(s, col0)
  local toks, i, n = {}, 1, #s
  while true do
    i = skip_space(s, i, n)
    if i > n then break end
    if #toks >= LIM.tokens then refuse(fmt("more than %d tokens", LIM.tokens), col0 + i - 1) end
    local c, col = byte(s, i), col0 + i - 1
    if is_digit(c) or (c == 46 and is_digit(byte(s, i + 1))) then
      local j = i
      if c == 48 and (byte(s, i + 1) == 120 or byte(s, i + 1) == 88) then
        j = i + 2
        while is_hex(byte(s, j)) do j = j + 1 end
        if j == i + 2 then j = i + 1 end -- "0x" alone: malformed below
      else
        while is_digit(byte(s, j)) do j = j + 1 end
        if byte(s, j) == 46 then
          j = j + 1
          while is_digit(byte(s, j)) do j = j + 1 end
        end
      end
      if is_word(byte(s, j)) or byte(s, j) == 46 then
        while is_word(byte(s, j)) or byte(s, j) == 46 do j = j + 1 end
        local text = sub(s, i, j - 1)
        refuse(fmt("malformed number '%s'", #text > 24 and sub(text, 1, 24) .. "..." or text), col)
      end
      local text = sub(s, i, j - 1)
      local v = tonumber(text)
      if not v then refuse(fmt("malformed number '%s'", text), col) end
      if v >= LIM.magnitude then refuse(fmt("number '%s' is not below 2^53", #text > 24 and sub(text, 1, 24) .. "..." or text), col) end
      toks[#toks + 1] = { k = "num", v = v, text = text, col = col }
      i = j
    elseif is_alpha(c) then
      local j = i + 1
      while is_word(byte(s, j)) do j = j + 1 end
      local text = sub(s, i, j - 1)
      toks[#toks + 1] = { k = "name", v = text, text = text, col = col }
      i = j
    elseif c == 34 or c == 39 then
      local close = find(s, c == 34 and '"' or "'", i + 1, true)
      if not close then refuse("unfinished string", col) end
      local v = sub(s, i + 1, close - 1)
      toks[#toks + 1] = { k = "str", v = v, text = sub(s, i, close), col = col }
      i = close + 1
    elseif PUNCT[c] then
      if c == 45 and byte(s, i + 1) == 45 then refuse("unexpected '--'", col, " (write - (-x))") end
      local ch = string.char(c)
      toks[#toks + 1] = { k = ch, text = ch, col = col }
      i = i + 1
    else
      refuse("unexpected " .. show_byte(c), col)
    end
  end
  toks[#toks + 1] = { k = "eof", col = col0 + n }
  return toks
end

-- Parses one comment body into {grid = node, block = node, smem = node, entry = name}.
-- Nodes: {op = "num"|"name"|"neg"|"+"|"-"|"*"|"/"|"%"|"call"|"dims", ...}.
local function parse(toks)
  local at, depth = 1, 0
  local function peek() return toks[at] end
  local function take() local t = toks[at]; at = at + 1 return t end
  local function expect(k, what)
    local t = take()
    if t.k ~= k then refuse("unexpected " .. show(t), t.col, " (expected " .. what .. ")") end
    return t
  end
  local expr
  local function primary()
    local t = take()
    if t.k == "num" then return { op = "num", v = t.v } end
    if t.k == "name" then
      if peek().k == "." then
        refuse("unknown name '" .. t.v .. "'", t.col, " (no modules here: use cdiv, min, max, floor, ceil)")
      end
      if peek().k ~= "(" then return { op = "name", v = t.v, col = t.col } end
      local arity = FUNCS[t.v]
      if not arity then refuse("unknown function '" .. t.v .. "'", t.col) end
      take()
      local args = {}
      if peek().k ~= ")" then
        repeat
          args[#args + 1] = expr()
          local more = peek().k == ","
          if more then take() end
        until not more
      end
      expect(")", "',' or ')'")
      if arity > 0 and #args ~= arity then
        refuse(fmt("%s takes %d argument%s, not %d", t.v, arity, arity == 1 and "" or "s", #args), t.col)
      elseif #args == 0 then
        refuse(t.v .. " needs at least one argument", t.col)
      end
      return { op = "call", f = t.v, args = args, col = t.col }
    end
    if t.k == "(" then
      local e = expr()
      expect(")", "')'")
      return e
    end
    refuse("unexpected " .. show(t), t.col)
  end
  local function unary()
    depth = depth + 1
    if depth > LIM.depth then refuse(fmt("nesting deeper than %d", LIM.depth), peek().col) end
    local node
    if peek().k == "-" then
      local t = take()
      node = { op = "neg", a = unary(), col = t.col }
    else
      node = primary()
    end
    depth = depth - 1
    return node
  end
  local function term()
    local a = unary()
    while peek().k == "*" or peek().k == "/" or peek().k == "%" do
      local t = take()
      a = { op = t.k, a = a, b = unary(), col = t.col }
    end
    return a
  end
  function expr()
    local a = term()
    while peek().k == "+" or peek().k == "-" do
      local t = take()
      a = { op = t.k, a = a, b = term(), col = t.col }
    end
    return a
  end
  local function dims_list()
    local open = take()
    local list = { op = "dims", col = open.col }
    while peek().k ~= "}" do
      list[#list + 1] = expr()
      local t = peek()
      if t.k == "," or t.k == ";" then take()
      elseif t.k ~= "}" then refuse("unexpected " .. show(t), t.col, " (expected ',' or '}')") end
    end
    take()
    return list
  end

  local fields = {}
  if peek().k == "eof" then refuse("the comment is empty (write grid = {...}, block = {...})") end
  while peek().k ~= "eof" do
    local t = take()
    if t.k ~= "name" then refuse("unexpected " .. show(t), t.col, " (expected grid, block, smem or entry)") end
    if not FIELDS[t.v] then refuse("unknown field '" .. t.v .. "'", t.col, " (fields: grid, block, smem, entry)") end
    if fields[t.v] then refuse(t.v .. " given twice", t.col) end
    expect("=", "'='")
    if t.v == "entry" then
      local s = take()
      if s.k ~= "str" or not s.v:match("^[%a_][%w_]*$") then
        refuse("entry must be a quoted kernel name (letters, digits, _), not " .. show(s), s.col)
      end
      fields.entry = s.v
    elseif t.v ~= "smem" and peek().k == "{" then
      fields[t.v] = dims_list()
    else
      fields[t.v] = expr()
    end
    local sep = peek()
    if sep.k == "," or sep.k == ";" then take()
    elseif sep.k ~= "eof" then refuse("unexpected " .. show(sep), sep.col, " (expected ',' or the end)") end
  end
  if not fields.grid then refuse("grid is missing") end
  if not fields.block then refuse("block is missing") end
  return fields
end

local function unknown_name(name, env)
  if env.other[name] then return fmt("'%s' is #defined as '%s', not a number", name, env.other[name]) end
  if FUNCS[name] then return fmt("'%s' is a function: call it, %s(...)", name, name) end
  local known = util_sorted(env.size)
  for _, k in ipairs(util_sorted(env.consts)) do if env.size[k] == nil then known[#known + 1] = k end end
  if #known > 12 then known = { unpack(known, 1, 12) }; known[13] = "..." end
  return fmt("unknown name '%s'", name), " (names: " .. (#known > 0 and table.concat(known, ", ") or "none") .. ")"
end

-- Evaluates a node; names come from the size, then -D parameters, then #defines.
local function evaluate(node, env)
  local op = node.op
  local v
  if op == "num" then return node.v
  elseif op == "name" then
    v = env.size[node.v]
    if v == nil then v = env.consts[node.v] end
    if v == nil then
      local msg, tail = unknown_name(node.v, env)
      refuse(msg, node.col, tail)
    end
    if type(v) ~= "number" then refuse(fmt("'%s' is %s, not a number", node.v, tostring(v):sub(1, 40)), node.col) end
    return v
  elseif op == "neg" then
    return -evaluate(node.a, env)
  elseif op == "call" then
    local a = {}
    for i, x in ipairs(node.args) do a[i] = evaluate(x, env) end
    local f = node.f
    if f == "cdiv" then
      if a[2] == 0 then refuse("division by zero in cdiv", node.col) end
      v = floor((a[1] + a[2] - 1) / a[2])
    elseif f == "floor" then v = floor(a[1])
    elseif f == "ceil" then v = ceil(a[1])
    elseif f == "min" then v = math.min(unpack(a))
    else v = math.max(unpack(a)) end
  elseif op == "dims" then
    local out = {}
    for i, x in ipairs(node) do out[i] = evaluate(x, env) end
    return out
  else
    local a, b = evaluate(node.a, env), evaluate(node.b, env)
    if op == "+" then v = a + b
    elseif op == "-" then v = a - b
    elseif op == "*" then v = a * b
    elseif op == "/" then
      if b == 0 then refuse("division by zero", node.col) end
      v = a / b
    else
      if b == 0 then refuse("modulo by zero", node.col) end
      v = a % b
    end
  end
  if not (v > -LIM.magnitude and v < LIM.magnitude) then
    refuse("a value not below 2^53", node.col)
  end
  return v
end

-- Runs fn under pcall; a refusal becomes nil, "launch comment i (line n): reason".
local function guarded(where, fn, ...)
  local ok, v = pcall(fn, ...)
  if ok then return v end
  if getmetatable(v) == Refusal then return nil, where .. v.msg end
  -- a bug here must not take the search down: it refuses the comment, loudly
  return nil, where .. "internal error: " .. tostring(v)
end

-- Returns nil when the source has no launch lines (the task's plan applies), or a
-- function of the size that returns plan or nil, err. Parse errors are found here
-- once and returned by that function at every size.
function M.from_source(source, default_entry, defines)
  local comments, consts, other = scan(source)
  if #comments == 0 then return nil end
  for k, v in pairs(defines or {}) do consts[k] = tonumber(v) or v end
  local function failing(err) return function() return nil, err end end
  if #comments > LIM.comments then
    return failing(fmt("%d launch comments, more than %d", #comments, LIM.comments))
  end
  local parsed = {}
  for i, c in ipairs(comments) do
    local where = fmt("launch comment %d (line %d): ", i, c.line)
    if #c.body > LIM.chars then
      return failing(fmt("%slonger than %d characters (%d)", where, LIM.chars, #c.body))
    end
    local fields, err = guarded(where, function() return parse(tokenize(c.body, c.col)) end)
    if not fields then return failing(err) end
    parsed[i] = { where = where, fields = fields }
  end
  return function(size)
    local env = { size = size or {}, consts = consts, other = other }
    local list = {}
    for i, p in ipairs(parsed) do
      local v, err = guarded(p.where, function()
        local f = p.fields
        return { grid = evaluate(f.grid, env), block = evaluate(f.block, env),
          smem = f.smem and evaluate(f.smem, env), entry = f.entry }
      end)
      if not v then return nil, err end
      list[i] = v
    end
    return M.normalize(list, default_entry)
  end
end

return M
