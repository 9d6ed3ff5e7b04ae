-- tests/spec/textdiff_spec.lua: kloop.textdiff: minimal line diffs and unified hunks like
-- diff -u, on the edge cases (empty, missing final newline, CRLF, context) and on long files.
local textdiff = require("kloop.textdiff")

-- Reference LCS length by dynamic programming, to check the diff is minimal.
local function lcs(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = 0 end
  for i = 1, #a do
    local cur = { [0] = 0 }
    for j = 1, #b do
      cur[j] = a[i] == b[j] and prev[j - 1] + 1 or math.max(prev[j], cur[j - 1])
    end
    prev = cur
  end
  return prev[#b]
end

-- The two sides an edit script rebuilds, and its number of changes.
local function replay(ops)
  local ra, rb, changes = {}, {}, 0
  for _, op in ipairs(ops) do
    if op[1] ~= "+" then ra[#ra + 1] = op[2] end
    if op[1] ~= "-" then rb[#rb + 1] = op[2] end
    if op[1] ~= " " then changes = changes + 1 end
  end
  return ra, rb, changes
end

local function text(lines) return #lines > 0 and table.concat(lines, "\n") .. "\n" or "" end

describe("kloop.textdiff", function()
  it("splits lines, and says when the last one has no newline", function()
    assert.are.same({ {}, false }, { textdiff.lines_of("") })
    assert.are.same({ { "a", "b" }, false }, { textdiff.lines_of("a\nb\n") })
    assert.are.same({ { "a", "b" }, true }, { textdiff.lines_of("a\nb") })
    assert.are.same({ { "", "" }, false }, { textdiff.lines_of("\n\n") })
    assert.are.same({ { "a\r", "b\r" }, false }, { textdiff.lines_of("a\r\nb\r\n") })
  end)

  it("diffs lines minimally (random cases)", function()
    math.randomseed(7)
    for _ = 1, 500 do
      local a, b = {}, {}
      local alphabet = math.random(1, 6)
      for i = 1, math.random(0, 14) do a[i] = string.char(96 + math.random(1, alphabet)) end
      for i = 1, math.random(0, 14) do b[i] = string.char(96 + math.random(1, alphabet)) end
      local ra, rb, changes = replay(textdiff.diff_lines(a, b))
      assert.are.same(a, ra)
      assert.are.same(b, rb)
      assert.are.equal(#a + #b - 2 * lcs(a, b), changes)
    end
  end)

  it("puts removals before additions between kept lines", function()
    assert.are.same({ { " ", "x" }, { "-", "a" }, { "-", "b" }, { "+", "c" }, { "+", "d" }, { " ", "y" } },
      textdiff.diff_lines({ "x", "a", "b", "y" }, { "x", "c", "d", "y" }))
  end)

  it("writes unified hunks like diff -u", function()
    local a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
    local b = "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
    local body, removed, added = textdiff.unified(a, b, 3)
    assert.are.equal(1, removed)
    assert.are.equal(2, added)
    assert.are.equal("@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n", body)
    -- a gap of 2*context kept lines joins two hunks, one more splits them
    assert.are.equal("@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n-4\n+four\n", (textdiff.unified("1\n2\n3\n4\n", "one\n2\n3\nfour\n", 1)))
    assert.are.equal("@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -4,2 +4,2 @@\n 4\n-5\n+five\n",
      (textdiff.unified("1\n2\n3\n4\n5\n", "one\n2\n3\n4\nfive\n", 1)))
  end)

  it("handles empty and identical inputs", function()
    assert.are.same({ "", 0, 0 }, { textdiff.unified("", "") })
    local a = "int x;\nint y;\n"
    assert.are.same({ "", 0, 0 }, { textdiff.unified(a, a) })
    assert.are.same({ "@@ -0,0 +1 @@\n+x\n", 0, 1 }, { textdiff.unified("", "x\n") })
    assert.are.same({ "@@ -1,2 +0,0 @@\n-x\n-y\n", 2, 0 }, { textdiff.unified("x\ny\n", "") })
  end)

  it("marks a last line without a newline as diff -u does", function()
    -- before the fix, "a\nb" and "a\nb\n" had no diff: `kloop diff` called them the same source
    assert.are.same({ "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", 1, 1 },
      { textdiff.unified("a\nb", "a\nb\n") })
    assert.are.same({ "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n", 1, 1 },
      { textdiff.unified("a\nb\n", "a\nb") })
    assert.are.same({ "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n", 1, 1 },
      { textdiff.unified("a", "c") })
    assert.are.equal("", (textdiff.unified("a\nb", "a\nb")))
    assert.are.equal("@@ -1,2 +1,2 @@\n-x\n+y\n b\n\\ No newline at end of file\n", (textdiff.unified("x\nb", "y\nb")))
  end)

  it("changes the first and the last line", function()
    local a = text({ "1", "2", "3", "4", "5", "6", "7", "8" })
    local b = text({ "one", "2", "3", "4", "5", "6", "7", "eight" })
    assert.are.equal("@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -7,2 +7,2 @@\n 7\n-8\n+eight\n", (textdiff.unified(a, b, 1)))
    assert.are.equal("@@ -1 +1 @@\n-1\n+one\n@@ -8 +8 @@\n-8\n+eight\n", (textdiff.unified(a, b, 0)))
  end)

  it("clips a context larger than the file", function()
    assert.are.equal("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", (textdiff.unified("a\nb\nc\n", "a\nB\nc\n", 100)))
    assert.are.equal("@@ -2,0 +3 @@\n+c\n", (textdiff.unified("a\nb\n", "a\nb\nc\n", 0)))
  end)

  it("compares CRLF lines byte for byte and keeps the \\r", function()
    local crlf = "a\r\nb\r\n"
    assert.are.equal("", (textdiff.unified(crlf, crlf)))
    assert.are.same({ "@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+b\n", 2, 2 }, { textdiff.unified(crlf, "a\nb\n") })
    assert.are.equal("@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n", (textdiff.unified(crlf, "a\r\nB\r\n")))
  end)

  it("refuses a context that is not a whole number >= 0 (it used to loop forever on -1)", function()
    for _, bad in ipairs({ -1, 1.5, 0 / 0, math.huge, "3" }) do
      assert.has_error(function() textdiff.unified("a\n", "b\n", bad) end)
    end
  end)

  it("diffs two 20,000-line files in linear memory and seconds", function()
    -- the old greedy Myers kept one vector per edit step: about 820 MiB and 5 s for two
    -- different 3,000-line files, quadratic in the number of edits
    local n = 20000
    local function check(a, b, limit_s)
      collectgarbage() collectgarbage()
      local t0 = os.clock()
      local ops = textdiff.diff_lines(a, b)
      local s = os.clock() - t0
      local mib = collectgarbage("count") / 1024
      local ra, rb = replay(ops)
      assert.are.equal(#a, #ra)
      assert.are.equal(#b, #rb)
      assert.is_true(s < limit_s, string.format("%.1f s", s))
      assert.is_true(mib < 256, string.format("%.0f MiB", mib))
      return ops
    end
    local a, b = {}, {}
    for i = 1, n do a[i], b[i] = "x" .. i, "y" .. i end
    assert.are.equal(2 * n, #check(a, b, 5)) -- nothing in common
    for i = 1, n do b[i] = i % 100 == 0 and "changed" or a[i] end
    assert.are.equal(n + n / 100, #check(a, b, 5))
    math.randomseed(3)
    for i = 1, n do
      a[i] = ({ "{", "}", "" })[math.random(3)]
      b[i] = ({ "{", "}", "" })[math.random(3)]
    end
    check(a, b, 60) -- many edits over few distinct lines: the hard case, a few seconds
    local body, removed, added = textdiff.unified(text(a), text(a) .. "end\n")
    assert.are.same({ 0, 1 }, { removed, added })
    assert.matches("^@@ %-19998,3 %+19998,4 @@\n", body)
  end)
end)
