-- kloop.textdiff: line diffs (Myers' O((N+M)D) algorithm in linear space) and unified hunks like diff -u.
--
-- The edit script is minimal (as few removed + added lines as possible). Memory is
-- O(N+M): the search keeps two vectors per bisection, never a trace per edit step (the
-- trace of the plain greedy algorithm grows as D^2: two different 20,000-line files
-- would need tens of gigabytes). Before the search, a common prefix and suffix are
-- matched directly and lines that have no equal on the other side are set aside (they
-- can only be removed or added), so unrelated files cost nothing.
local M = {}

-- The lines of s without their "\n", and true when s does not end with one (its last
-- line has no newline). "" has no lines. A "\r" (CRLF) stays part of its line.
function M.lines_of(s)
  local out = {}
  if s == "" then return out, false end
  local noeol = s:sub(-1) ~= "\n"
  for l in (noeol and s .. "\n" or s):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out, noeol
end

-- The split point of an optimal path from (0,0) to (n,m) over a[a0+1..a0+n] and
-- b[b0+1..b0+m]: x, y; or nil when the two have nothing in common. Myers' middle snake:
-- a forward and a reverse search, each a vector of the furthest x on each diagonal,
-- until they overlap.
local function bisect(a, a0, n, b, b0, m)
  local max_d = math.ceil((n + m) / 2)
  local off = max_d + 2 -- index of diagonal 0 (keeps every index >= 1: the array part)
  local v1, v2 = {}, {}
  for i = 1, 2 * max_d + 4 do v1[i], v2[i] = -1, -1 end
  v1[off + 1], v2[off + 1] = 0, 0
  local delta = n - m
  local front = delta % 2 ~= 0 -- an odd delta meets in the forward pass
  local k1start, k1end, k2start, k2end = 0, 0, 0, 0
  for d = 0, max_d - 1 do
    for k1 = -d + k1start, d - k1end, 2 do
      local i = off + k1
      local x1
      if k1 == -d or (k1 ~= d and v1[i - 1] < v1[i + 1]) then x1 = v1[i + 1] else x1 = v1[i - 1] + 1 end
      local y1 = x1 - k1
      while x1 < n and y1 < m and a[a0 + x1 + 1] == b[b0 + y1 + 1] do x1, y1 = x1 + 1, y1 + 1 end
      v1[i] = x1
      if x1 > n then k1end = k1end + 2         -- off the right edge
      elseif y1 > m then k1start = k1start + 2 -- off the bottom edge
      elseif front then
        local j = off + delta - k1
        if j >= 1 and j <= 2 * max_d + 4 and v2[j] ~= -1 and x1 >= n - v2[j] then return x1, y1 end
      end
    end
    for k2 = -d + k2start, d - k2end, 2 do
      local i = off + k2
      local x2
      if k2 == -d or (k2 ~= d and v2[i - 1] < v2[i + 1]) then x2 = v2[i + 1] else x2 = v2[i - 1] + 1 end
      local y2 = x2 - k2
      while x2 < n and y2 < m and a[a0 + n - x2] == b[b0 + m - y2] do x2, y2 = x2 + 1, y2 + 1 end
      v2[i] = x2
      if x2 > n then k2end = k2end + 2
      elseif y2 > m then k2start = k2start + 2
      elseif not front then
        local j = off + delta - k2
        if j >= 1 and j <= 2 * max_d + 4 and v1[j] ~= -1 then
          local x1 = v1[j]
          if x1 >= n - x2 then return x1, x1 - (j - off) end
        end
      end
    end
  end
  return nil
end

-- Appends to `pairs` the matched (i, j) of an optimal alignment of a[a0+1..a0+n] and
-- b[b0+1..b0+m], in order. The recursion halves the edits at each level.
local function align(a, a0, n, b, b0, m, pairs)
  local pre = 0
  while pre < n and pre < m and a[a0 + pre + 1] == b[b0 + pre + 1] do
    pre = pre + 1
    pairs[#pairs + 1] = { a0 + pre, b0 + pre }
  end
  a0, b0, n, m = a0 + pre, b0 + pre, n - pre, m - pre
  local suf = 0
  while suf < n and suf < m and a[a0 + n - suf] == b[b0 + m - suf] do suf = suf + 1 end
  n, m = n - suf, m - suf
  if n > 0 and m > 0 then
    local x, y = bisect(a, a0, n, b, b0, m)
    if x then
      align(a, a0, x, b, b0, y, pairs)
      align(a, a0 + x, n - x, b, b0 + y, m - y, pairs)
    end
  end
  for s = 1, suf do pairs[#pairs + 1] = { a0 + n + s, b0 + m + s } end
end

-- Edit script between line lists a and b: a list of {op, text}, op " " (kept), "-"
-- (removed from a) or "+" (added from b). Between two kept lines, removals come first.
function M.diff_lines(a, b)
  -- lines as numbers; a line without an equal on the other side takes no part in the search
  local ids = {}
  for _, l in ipairs(a) do ids[l] = 1 end
  for _, l in ipairs(b) do if ids[l] then ids[l] = 2 end end
  local next_id = 0
  for l, v in pairs(ids) do
    if v == 2 then next_id = next_id + 1 ids[l] = next_id else ids[l] = nil end
  end
  local ka, ia, kb, ib = {}, {}, {}, {}
  for i, l in ipairs(a) do if ids[l] then ka[#ka + 1], ia[#ia + 1] = ids[l], i end end
  for j, l in ipairs(b) do if ids[l] then kb[#kb + 1], ib[#ib + 1] = ids[l], j end end
  local matched = {}
  align(ka, 0, #ka, kb, 0, #kb, matched)
  local ops, x, y = {}, 1, 1
  local function upto(i, j) -- removals and additions before a[i] and b[j]
    while x < i do ops[#ops + 1] = { "-", a[x] } x = x + 1 end
    while y < j do ops[#ops + 1] = { "+", b[y] } y = y + 1 end
  end
  for _, p in ipairs(matched) do
    local i, j = ia[p[1]], ib[p[2]]
    upto(i, j)
    ops[#ops + 1] = { " ", a[i] }
    x, y = i + 1, j + 1
  end
  upto(#a + 1, #b + 1)
  return ops
end

local NOEOL = "\\ No newline at end of file"

-- Unified diff text of a_text and b_text (without the ---/+++ header; "" when they are
-- equal), and the counts of removed and added lines. context: lines of context around
-- each change (default 3, a whole number >= 0; misuse raises). A last line without a
-- newline differs from the same line with one and is marked as diff -u marks it.
function M.unified(a_text, b_text, context)
  context = context or 3
  if type(context) ~= "number" or context < 0 or context ~= math.floor(context) or context == math.huge then
    error("textdiff.unified: context must be a whole number >= 0, not " .. tostring(context), 2)
  end
  local a, a_noeol = M.lines_of(a_text)
  local b, b_noeol = M.lines_of(b_text)
  -- the unterminated last line compares as its text plus "\n" (no line holds a "\n")
  if a_noeol then a[#a] = a[#a] .. "\n" end
  if b_noeol then b[#b] = b[#b] .. "\n" end
  local ops = M.diff_lines(a, b)
  -- line numbers in a and b before each op
  local apos, bpos, changes = {}, {}, {}
  local aline, bline = 1, 1
  for k, op in ipairs(ops) do
    apos[k], bpos[k] = aline, bline
    if op[1] ~= "+" then aline = aline + 1 end
    if op[1] ~= "-" then bline = bline + 1 end
    if op[1] ~= " " then changes[#changes + 1] = k end
  end
  -- diff -u leaves out a count of 1; an empty range names the line before it
  local function range(start, count)
    if count == 0 then return (start - 1) .. ",0" end
    return count == 1 and tostring(start) or (start .. "," .. count)
  end
  local out, removed, added = {}, 0, 0
  local c = 1
  while c <= #changes do
    -- one hunk: changes whose gaps hold at most 2*context kept lines
    local last = c
    while last < #changes and changes[last + 1] - changes[last] - 1 <= 2 * context do last = last + 1 end
    local s, e = math.max(1, changes[c] - context), math.min(#ops, changes[last] + context)
    local acount, bcount = 0, 0
    for q = s, e do
      if ops[q][1] ~= "+" then acount = acount + 1 end
      if ops[q][1] ~= "-" then bcount = bcount + 1 end
    end
    out[#out + 1] = string.format("@@ -%s +%s @@", range(apos[s], acount), range(bpos[s], bcount))
    for q = s, e do
      local op, text = ops[q][1], ops[q][2]
      if text:sub(-1) == "\n" then text = text:sub(1, -2) .. "\n" .. NOEOL end
      out[#out + 1] = op .. text
      if op == "-" then removed = removed + 1 elseif op == "+" then added = added + 1 end
    end
    c = last + 1
  end
  return table.concat(out, "\n") .. (#out > 0 and "\n" or ""), removed, added
end

return M
