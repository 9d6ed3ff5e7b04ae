-- kloop.llm.extract: finds the kernel (and its `// kloop: launch` plan lines) in an LLM reply.
--
-- Rules (docs/LLM.md, "Extraction"):
--   * CRLF and lone CR become LF first.
--   * Fenced blocks: a line of 3+ backticks or tildes (up to 3 spaces of indent), an
--     optional language; closed by a line of the same character, at least as long.
--     A fence left open runs to the end of the reply (`unterminated = true`).
--   * Code blocks are those tagged cuda/cu/cpp/c++/c/cc/cxx/h/hpp/cuh or untagged;
--     blocks in other languages (python, bash, json...) count only when nothing else is there.
--   * With an entry name: the LAST code block that defines it (revisions come last);
--     none defines it -> failure. Without: the longest code block.
--   * No fence at all: a reply that is plainly code (has __global__ or the entry) is
--     taken from its first code-looking line.
-- Failures return nil, reason: never an error, whatever the reply holds. Every scan is
-- linear in the reply (plain finds, byte loops, anchored patterns: no pattern that can
-- backtrack touches model text), and a reply over M.max_bytes is refused unread.
local M = {}

local CODE_LANGS = {
  [""] = true, cuda = true, cu = true, cuh = true, cpp = true, ["c++"] = true, c = true, cc = true,
  cxx = true, h = true, hpp = true, hip = true, ptx = false,
}

local byte, sub, find = string.byte, string.sub, string.find

-- Replies beyond these are refused (a real reply is far smaller and has a few blocks).
M.max_bytes = 4 * 1024 * 1024
M.max_blocks = 10000

local function is_space(c) return c == 32 or (c ~= nil and c >= 9 and c <= 13) end
local function is_word(c)
  return c ~= nil and ((c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95)
end

local function normalize(text)
  return (text:gsub("\r\n", "\n"):gsub("\r", "\n"))
end

-- Index of the last non-whitespace byte of s (0 when there is none).
local function last_nonspace(s)
  local e = #s
  while e > 0 and is_space(byte(s, e)) do e = e - 1 end
  return e
end

-- A fence line s[i..j]: its character, run length, indentation and the text after the
-- run; nil when the line is no fence. `^( ? ? ?)(```+)(.*)$` (or ~), without backtracking.
local function fence_at(s, i, j)
  local p = i
  while p <= j and p < i + 3 and byte(s, p) == 32 do p = p + 1 end
  local ch = byte(s, p)
  if ch ~= 96 and ch ~= 126 then return nil end
  local q = p
  while q <= j and byte(s, q) == ch do q = q + 1 end
  if q - p < 3 then return nil end
  return ch, q - p, p - i, q
end

-- Fenced blocks in order: {lang, body, unterminated, index}. One pass over the lines;
-- with max, stops after max blocks and returns true as a second value when more follow.
function M.blocks(text, max)
  text = normalize(text)
  local s = text .. "\n"
  local n = #s
  local out = {}
  local pos = 1
  while pos <= n do
    local e = find(s, "\n", pos, true)
    local ch, len, indent, after = fence_at(s, pos, e - 1)
    if ch and not (ch == 96 and find(sub(s, after, e - 1), "`", 1, true)) then
      if max and #out >= max then return out, true end
      local info = sub(s, after, e - 1)
      local lang = (info:match("^%s*([%w_+%-%.#]*)") or ""):lower()
      local first, last, closed = e + 1, e, false
      local p = e + 1
      while p <= n do
        local e2 = find(s, "\n", p, true)
        local ch2, len2, _, after2 = fence_at(s, p, e2 - 1)
        if ch2 == ch and len2 >= len and not find(sub(s, after2, e2 - 1), "%S") then closed = true break end
        last = e2 - 1
        p = e2 + 1
      end
      local body = last >= first and sub(s, first, last) or ""
      if indent > 0 and body ~= "" then
        -- strip the opening fence's indentation from the body lines
        local pad = string.rep(" ", indent)
        if sub(body, 1, indent) == pad then body = sub(body, indent + 1) end
        body = body:gsub("\n" .. pad, "\n")
      end
      out[#out + 1] = { lang = lang, body = body, unterminated = not closed, index = #out + 1 }
      pos = closed and find(s, "\n", p, true) + 1 or n + 1
    else
      pos = e + 1
    end
  end
  return out
end

-- src without comments: exactly src:gsub("/%*.-%*/", " "):gsub("//[^\n]*", ""), but
-- with plain finds (the lazy pattern is quadratic on many unclosed "/*").
local function strip_comments(src)
  local parts, pos = {}, 1
  while true do
    local a = find(src, "/*", pos, true)
    local b = a and find(src, "*/", a + 2, true)
    if not b then break end -- no later "/*" can close either
    parts[#parts + 1] = sub(src, pos, a - 1)
    parts[#parts + 1] = " "
    pos = b + 2
  end
  parts[#parts + 1] = sub(src, pos)
  local s = table.concat(parts)
  parts, pos = {}, 1
  while true do
    local a = find(s, "//", pos, true)
    if not a then break end
    parts[#parts + 1] = sub(s, pos, a - 1)
    pos = find(s, "\n", a + 2, true) or #s + 1
  end
  parts[#parts + 1] = sub(s, pos)
  return table.concat(parts)
end

-- True when src defines `entry` as a function (a __global__ kernel or a C function):
-- the name (not inside a longer word), a balanced (...) group, then `{`, with
-- `__global__` or `void` between the previous `;`, `{` or `}` and the name. The
-- same matches as gmatch("([^;{}]-)%f[%w_]" .. name .. "%s*(%b())%s*{"), in three
-- linear passes: occurrences, parenthesis matching, then the checks in order.
function M.defines(src, entry)
  if type(entry) ~= "string" or not is_word(byte(entry, 1)) then return false end
  local clean = strip_comments(src)
  local n, m = #clean, #entry
  local starts, opens = {}, {}
  local p = 1
  while true do
    local a = find(clean, entry, p, true)
    if not a then break end
    if a == 1 or not is_word(byte(clean, a - 1)) then
      local q = a + m
      while q <= n and is_space(byte(clean, q)) do q = q + 1 end
      if byte(clean, q) == 40 then starts[#starts + 1], opens[#opens + 1] = a, q end
    end
    p = a + 1
  end
  if #opens == 0 then return false end
  -- the matching ")" of each candidate "(", from one scan with a depth counter
  local close, stack_k, stack_d, top = {}, {}, {}, 0
  local depth, k, i = 0, 1, opens[1]
  while i do
    if byte(clean, i) == 40 then
      if opens[k] == i then
        top = top + 1
        stack_k[top], stack_d[top] = k, depth
        k = k + 1
      end
      depth = depth + 1
    elseif depth > 0 then
      depth = depth - 1
      if top > 0 and stack_d[top] == depth then
        close[stack_k[top]] = i
        top = top - 1
      end
    end
    if top == 0 and k > #opens then break end
    i = find(clean, "[()]", i + 1)
  end
  local last_end, boundary, next_b = 0, 0, find(clean, "[;{}]", 1)
  for c = 1, #opens do
    local a = starts[c]
    if a > last_end and close[c] then
      local q = close[c] + 1
      while q <= n and is_space(byte(clean, q)) do q = q + 1 end
      if byte(clean, q) == 123 then
        while next_b and next_b < a do
          boundary = next_b
          next_b = find(clean, "[;{}]", next_b + 1)
        end
        local pre = sub(clean, math.max(boundary, last_end) + 1, a - 1)
        if find(pre, "__global__", 1, true) or find(pre, "void", 1, true) then return true end
        last_end = q
      end
    end
  end
  return false
end

-- The `// kloop: launch ...` lines of a source, in order (their bodies, trimmed).
function M.launch_lines(src)
  local out = {}
  for i, c in ipairs(require("kloop.eval.plan").launch_comments(src)) do out[i] = c.body end
  return out
end

local function looks_like_code_start(line)
  return line:match("^%s*#") or line:match("^%s*extern%s") or line:match("^%s*__global__")
    or line:match("^%s*template%s*<") or line:match("^%s*//") or line:match("^%s*typedef%s")
    or line:match("^%s*struct%s") or line:match("^%s*static%s") or line:match("^%s*__device__")
    or line:match("^%s*constexpr%s") or line:match("^%s*namespace%s") or line:match("^%s*using%s")
    or line:match("^%s*void%s")
end

-- Extracts the kernel from a reply. opts.entry: the task's entry function.
-- Returns {source, lang, plans, block, nblocks, unterminated} or nil, reason.
function M.extract(text, opts)
  opts = opts or {}
  if type(text) ~= "string" or not find(text, "%S") then return nil, "the reply is empty" end
  if #text > M.max_bytes then
    return nil, string.format("the reply is too large (%d bytes, at most %d)", #text, M.max_bytes)
  end
  text = normalize(text)
  local entry = opts.entry
  local blocks, more = M.blocks(text, M.max_blocks)
  if more then return nil, string.format("the reply has more than %d fenced blocks", M.max_blocks) end
  local code, other = {}, {}
  for _, b in ipairs(blocks) do
    if find(b.body, "%S") then
      if CODE_LANGS[b.lang] then code[#code + 1] = b else other[#other + 1] = b end
    end
  end
  if #code == 0 then code = other end
  local chosen
  if #code > 0 then
    if entry then
      for _, b in ipairs(code) do
        if M.defines(b.body, entry) then chosen = b end
      end
      if not chosen then
        return nil, string.format("no code block in the reply defines %s (%d block%s found)", entry,
          #code, #code == 1 and "" or "s")
      end
    else
      for _, b in ipairs(code) do
        if not chosen or #b.body > #chosen.body then chosen = b end
      end
    end
  else
    -- no fences: accept a reply that is plainly code
    local is_code = text:find("__global__", 1, true) or (entry and M.defines(text, entry))
    if not is_code then return nil, "no code block in the reply" end
    local start, pos = nil, 1
    while pos <= #text do
      local e = find(text, "\n", pos, true) or #text + 1
      if looks_like_code_start(sub(text, pos, e - 1)) then start = pos break end
      pos = e + 1
    end
    if not start then return nil, "no code block in the reply" end
    local body = sub(text, start)
    if entry and not M.defines(body, entry) then return nil, "the reply's code does not define " .. entry end
    chosen = { lang = "", body = body, unterminated = false, index = 0 }
  end
  -- leading blank lines and trailing whitespace go (by index: "%s+$" is quadratic)
  local body = chosen.body
  local first = find(body, "%S") or #body + 1
  local cut = 0
  for i = first - 1, 1, -1 do
    if byte(body, i) == 10 then cut = i break end
  end
  local src = sub(body, cut + 1, last_nonspace(body)) .. "\n"
  return {
    source = src,
    lang = chosen.lang,
    plans = M.launch_lines(src),
    block = chosen.index,
    nblocks = #blocks,
    unterminated = chosen.unterminated,
  }
end

return M
