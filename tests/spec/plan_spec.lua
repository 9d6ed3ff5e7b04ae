-- tests/spec/plan_spec.lua: candidate launch comments: the expression language, its limits, hostile comments and a random property test.
local plan = require("kloop.eval.plan")
local sys = require("kloop.core.sys")

local SIZE = { M = 100, N = 1000, K = 7 }

-- The plan (or nil, reason) of a source holding the given launch lines.
local function run(lines, size, defines, pre)
  if type(lines) == "string" then lines = { lines } end
  local src = (pre or "")
  for _, l in ipairs(lines) do src = src .. "// kloop: launch " .. l .. "\n" end
  local f = plan.from_source(src .. 'extern "C" __global__ void k() {}\n', "k", defines)
  assert.is_function(f)
  return f(size or SIZE)
end

local function refused(lines, pattern, size)
  local p, err = run(lines, size)
  assert.is_nil(p)
  assert.is_string(err)
  if pattern then assert.matches(pattern, err, 1, true) end
  return err
end

local function timed(fn)
  collectgarbage()
  local m0, t0 = collectgarbage("count"), sys.now()
  local a, b = fn()
  return sys.now() - t0, collectgarbage("count") - m0, a, b
end

describe("launch comments: the expression language", function()
  it("is absent without launch lines (the task's plan applies)", function()
    assert.is_nil(plan.from_source("#define T 8\n// kloop: other\n// kloop:launch\nvoid k() {}\n", "k"))
  end)

  it("reads sizes, #defines, -D parameters (which win), hex and decimals", function()
    local pre = "#define BM 64\n  #  define BN 32\n#define HALF 0.5\n#define BAD (16)\n"
    local p = assert(run("grid = {cdiv(N, BN), cdiv(M, BM)}, block = {0x20, 8 * HALF}", SIZE, nil, pre))
    assert.are.same({ 32, 2, 1 }, p[1].grid)
    assert.are.same({ 32, 4, 1 }, p[1].block)
    p = assert(run("grid = {cdiv(N, BN), cdiv(M, BM)}, block = {1}", SIZE, { BN = "100", BM = 10 }, pre))
    assert.are.same({ 10, 10, 1 }, p[1].grid)
    -- the size wins over a define of the same name
    p = assert(run("grid = {N}, block = {1}", SIZE, { N = 3 }))
    assert.are.same({ 1000, 1, 1 }, p[1].grid)
  end)

  it("has + - * / %, unary minus, parentheses and the five functions", function()
    local p = assert(run("grid = {(N - 1) % 7 + 1, max(1, M / 50, -K + 10), min(K, 3) * 2}, block = {floor(N / 300), ceil(N / 300)}"))
    assert.are.same({ 6, 3, 6 }, p[1].grid)
    assert.are.same({ 3, 4, 1 }, p[1].block)
    p = assert(run("grid = { - -N / 10, }; block = 32; smem = 48 * 1024;"))
    assert.are.same({ 100, 1, 1 }, p[1].grid)
    assert.are.same({ 32, 1, 1 }, p[1].block)
    assert.are.equal(49152, p[1].smem)
  end)

  it("keeps / as exact division: a non-integer grid is refused by the plan check", function()
    local err = refused("grid = {N / 3}, block = {32}", "grid[1] = 333.33")
    assert.matches("not a positive integer", err, 1, true)
    assert.are.same({ 4, 1, 1 }, assert(run("grid = {ceil(N / 256)}, block = {256}"))[1].grid)
    assert.are.same({ 3, 1, 1 }, assert(run("grid = {floor(N / 300)}, block = {256}"))[1].grid)
    refused("grid = {1}, block = {1}, smem = 1.5", "smem must be a non-negative integer")
  end)

  it("several kernels in order, each with an optional entry", function()
    local p = assert(run({ "grid = {cdiv(N, 256)}, block = {256}", 'entry = "fixup", grid = {1}, block = {32}, smem = 0',
      "entry = 'tail', grid = {1}, block = {1}" }))
    assert.are.equal(3, #p)
    assert.are.same({ "k", "fixup", "tail" }, { p[1].entry, p[2].entry, p[3].entry })
    refused({ "grid = {1}, block = {1}", "grid = {1}, block = {2048}" }, "kernel 2: block[1] = 2048 exceeds 1024")
  end)

  it("reads the shipped tiled kernel's comment with its -D parameters", function()
    local src = assert(io.open("kernels/gemm_tiled.cu")):read("*a")
    local f = assert(plan.from_source(src, "gemm", { BM = "128", BN = "128", TM = "8", TN = "8" }))
    local p = assert(f({ M = 4096, N = 4096, K = 4096 }))
    assert.are.same({ 32, 32, 1 }, p[1].grid)
    assert.are.same({ 256, 1, 1 }, p[1].block)
  end)
end)

describe("launch comments: refusals name the comment and the column", function()
  local cases = {
    { "grid = {cdiv(N, 16)}, block = {foo}", "launch comment 1 (line 1): unknown name 'foo' at column 49 (names: K, M, N)" },
    { "grid = {cdiv(N, 16)(1)}, block = {1}", "unexpected '(' at column 37" },
    { "grid = {bar(N)}, block = {1}", "unknown function 'bar' at column 26" },
    { "grid = {math.floor(N)}, block = {1}", "unknown name 'math' at column 26" },
    { "grid = {N}, block = {1}, threads = 4", "unknown field 'threads' at column 43" },
    { "grid = {N}, grid = {1}, block = {1}", "grid given twice at column 30" },
    { "grid = {N}", "block is missing" },
    { "", "the comment is empty" },
    { "grid = {N / (M - M)}, block = {1}", "division by zero at column 28" },
    { "grid = {N % 0}, block = {1}", "modulo by zero at column 28" },
    { "grid = {cdiv(N, 0)}, block = {1}", "division by zero in cdiv at column 26" },
    { "grid = {cdiv(N)}, block = {1}", "cdiv takes 2 arguments, not 1" },
    { "grid = {max()}, block = {1}", "max needs at least one argument" },
    { "grid = {cdiv}, block = {1}", "'cdiv' is a function" },
    { "grid = {2 ^ 10}, block = {1}", "unexpected '^' at column 28" },
    { "grid = {256u}, block = {1}", "malformed number '256u' at column 26" },
    { "grid = {1.2.3}, block = {1}", "malformed number '1.2.3'" },
    { "grid = {N --1}, block = {1}", "unexpected '--'" },
    { "grid = {1}, block = {1} // 1-D", "unexpected '/' at column 42 (expected ',' or the end)" },
    { 'grid = {1}, block = {1}, entry = "a b"', "entry must be a quoted kernel name" },
    { "grid = {1}, block = {1}, entry = fixup", "entry must be a quoted kernel name (letters, digits, _), not 'fixup'" },
    { 'grid = {1}, block = {1}, entry = "fix', "unfinished string at column 51" },
    { "grid = {{1}}, block = {1}", "unexpected '{' at column 26" },
    { "grid = {9007199254740993}, block = {1}", "is not below 2^53" },
    { "grid = {N * N * N * N * N * N}, block = {1}", "a value not below 2^53 at column 44" },
    { "grid = {1}, block = {1}, smem = {1}", "unexpected '{'" },
  }
  for _, c in ipairs(cases) do
    it(c[1] ~= "" and c[1] or "(empty)", function() refused(c[1], c[2]) end)
  end

  it("names the failing comment among several, with its source line", function()
    local err = refused({ "grid = {1}, block = {1}", "grid = {1}, block = {K / 0}" })
    assert.matches("^launch comment 2 %(line 2%): division by zero at column 41$", err)
  end)

  it("says when a #define is not a number", function()
    local p, err = run("grid = {T}, block = {1}", SIZE, nil, "#define T (16)\n")
    assert.is_nil(p)
    assert.matches("'T' is #defined as '(16)', not a number", err, 1, true)
    err = select(2, run("grid = {T}, block = {1}", SIZE, { T = "abc" }))
    assert.matches("'T' is abc, not a number", err, 1, true)
  end)
end)

describe("launch comments: limits", function()
  local L = plan.comment_limits

  it("refuses a comment longer than 1000 characters", function()
    refused("grid = {1" .. string.rep(" ", 1000) .. "}, block = {1}", "longer than 1000 characters")
    assert(run("grid = {1" .. string.rep(" ", 1000 - 23) .. "}, block = {1}"))
  end)

  it("refuses more than 200 tokens", function()
    refused("grid = {1" .. string.rep("+1", 100) .. "}, block = {1}", "more than 200 tokens")
    assert(run("grid = {1" .. string.rep("+1", 90) .. "}, block = {1}"))
  end)

  it("refuses nesting deeper than 32", function()
    local deep = function(d) return "grid = {" .. string.rep("(", d) .. "N" .. string.rep(")", d) .. "}, block = {1}" end
    assert(run(deep(L.depth - 1)))
    refused(deep(L.depth), "nesting deeper than 32")
    refused("grid = {" .. string.rep("- ", 40) .. "1}, block = {1}", "nesting deeper than 32")
    refused("grid = {" .. string.rep("max(", 40) .. "1" .. string.rep(")", 40) .. "}, block = {1}", "nesting deeper")
  end)

  it("refuses more than 16 launch lines", function()
    local lines = {}
    for i = 1, L.comments + 1 do lines[i] = "grid = {1}, block = {1}" end
    refused(lines, "17 launch comments, more than 16")
    lines[#lines] = nil
    assert.are.equal(16, #assert(run(lines)))
  end)
end)

-- Comments a model could write to stall or bloat kloop; each refused in well under a second.
local HOSTILE = {
  { "string method", 'grid = {#(("x"):rep(1e9))}, block = {1}' },
  { "string.rep", 'grid = {string.rep("x", 1e9)}, block = {1}' },
  { "backtracking find", 'grid = {(("a"):rep(3e4)):find(("a*"):rep(30) .. "b") or 1}, block = {1}' },
  { "while true", "grid = {(function() while true do end end)()}, block = {1}" },
  { "function", "grid = {function() end}, block = {1}" },
  { "_G", "grid = {_G}, block = {1}" },
  { "getmetatable", 'grid = {getmetatable("").__index.rep("x", 1e9)}, block = {1}' },
  { "os.exit", "grid = {os.exit(1)}, block = {1}" },
  { "require", 'grid = {require("ffi")}, block = {1}' },
  { "10,000 parentheses", "grid = {" .. string.rep("(", 10000) .. "1" .. string.rep(")", 10000) .. "}, block = {1}" },
  { "1 MB of digits", "grid = {" .. string.rep("9", 1e6) .. "}, block = {1}" },
  { "100,000 braces", string.rep("{", 100000) },
  { "50 KB on one line", "grid = {1" .. string.rep(" + N", 12500) .. "}, block = {1}" },
  { "unicode", "grid = {cdiv(N, 32)}, block = {32}, smem = ０" },
  { "unicode name", "grid = {N}, block = {ŋ}" },
  { "NUL byte", "grid = {1\0}, block = {1}" },
  { "long string", "grid = {[[" .. string.rep("x", 900) .. "]]}, block = {1}" },
  { "concatenation", 'grid = {1 .. 2}, block = {1}' },
  { "inf", "grid = {1e308 * 10}, block = {1}" },
  { "huge number", "grid = {0x" .. string.rep("f", 300) .. "}, block = {1}" },
}

describe("launch comments: hostile comments", function()
  for _, h in ipairs(HOSTILE) do
    it("refuses " .. h[1] .. " quickly, with a reason", function()
      local dt, dmem, p, err = timed(function() return run(h[2]) end)
      assert.is_nil(p)
      assert.is_string(err)
      assert.matches("^launch comment 1 %(line 1%): ", err)
      assert.is_nil(err:find("internal error", 1, true))
      assert.is_true(dt < 0.5, string.format("%s took %.3f s", h[1], dt))
      assert.is_true(dmem < 64 * 1024, string.format("%s grew the heap by %.0f KB", h[1], dmem))
    end)
  end

  it("scans a 4 MB source (defines, comments, near-misses) in linear time", function()
    local chunk = "#define T 16\n// kloop: launc x\n//   kloop:   \n#  define X" .. string.rep(" ", 40) .. "1\n"
    local src = string.rep(chunk, math.floor(4e6 / #chunk)) .. "// kloop: launch grid = {X}, block = {T}\n"
      .. string.rep(" ", 1e5) .. "\n" .. string.rep("/", 1e5) .. "\n#" .. string.rep("define ", 1e4) .. "\n"
    local dt, _, f = timed(function() return plan.from_source(src, "k") end)
    assert.is_true(dt < 2, string.format("took %.2f s", dt))
    assert.are.same({ 1, 1, 1 }, assert(f(SIZE))[1].grid)
  end)
end)

-- A grammar-aware generator of token soups, plus raw bytes, with a Lua oracle for the
-- well-formed ones (the test's own text: the oracle runs only what it generated).
describe("launch comments: random property test", function()
  local rng = require("kloop.search.rng").new(20240611)
  local NAMES = { "N", "M", "K", "BM", "TN", "foo", "cdiv", "min", "max", "floor", "ceil", "grid", "block",
    "smem", "entry", "function", "end", "_G", "string", "math", "x" }
  local PUNCT = { "+", "-", "*", "/", "%", "(", ")", "{", "}", ",", ";", "=", ".", ":", "..", "#", "[", "]",
    "^", "~", "'", '"', "\\", "\0", "\255", "--", "//", "0x", "1e9", "2.5" }

  local function number()
    local r = rng:int(1, 6)
    if r == 1 then return tostring(rng:int(0, 9)) end
    if r == 2 then return tostring(rng:int(1, 5000)) end
    if r == 3 then return string.format("0x%x", rng:int(1, 4096)) end
    if r == 4 then return tostring(rng:int(0, 99)) .. "." .. tostring(rng:int(0, 99)) end
    if r == 5 then return string.format("%.0f", rng:int(1, 2^40)) end
    return string.format("%.0f", 2^rng:int(0, 60))
  end

  -- well-formed expressions: the oracle evaluates the same text with Lua
  local function expr(d)
    local r = rng:int(1, d > 4 and 3 or 10)
    if r == 1 then return number() end
    if r == 2 then return rng:pick({ "N", "M", "K", "BM", "TN" }) end
    if r == 3 then return "(" .. expr(d + 1) .. ")" end
    if r == 4 then return "- " .. expr(d + 1) end
    if r <= 7 then return expr(d + 1) .. " " .. rng:pick({ "+", "-", "*", "/", "%" }) .. " " .. expr(d + 1) end
    local f = rng:pick({ "cdiv", "min", "max", "floor", "ceil" })
    local n = (f == "cdiv" and 2) or ((f == "floor" or f == "ceil") and 1) or rng:int(1, 4)
    local args = {}
    for i = 1, n do args[i] = expr(d + 1) end
    return f .. "(" .. table.concat(args, ", ") .. ")"
  end

  local function soup()
    local r, out = rng:int(1, 4), {}
    if r == 1 then -- random bytes
      for i = 1, rng:int(0, 60) do out[i] = string.char(rng:int(0, 255)) end
      return table.concat(out)
    end
    for i = 1, rng:int(0, r == 4 and 250 or 40) do
      local k = rng:int(1, 3)
      out[i] = k == 1 and number() or k == 2 and rng:pick(NAMES) or rng:pick(PUNCT)
    end
    return table.concat(out, rng:int(1, 3) == 1 and "" or " ")
  end

  local env = {
    N = 1000, M = 100, K = 7, BM = 64, TN = 4, min = math.min, max = math.max, floor = math.floor, ceil = math.ceil,
    cdiv = function(a, b) return math.floor((a + b - 1) / b) end,
  }
  local size = { M = 100, N = 1000, K = 7 }
  local pre = "#define BM 64\n#define TN 4\n"

  it("never raises, always plan or (nil, reason), each call fast; agrees with Lua on valid ones", function()
    local t_end = sys.now() + 30
    local worst, count, agreed, m0 = 0, 0, 0, collectgarbage("count")
    for i = 1, 20000 do
      if sys.now() > t_end then break end
      local well = i % 2 == 0
      local text = well and ("grid = {" .. expr(0) .. "}, block = {" .. rng:pick({ "32", "N / 10", "TN * 8" }) .. "}")
        or soup()
      local t0 = sys.now()
      local ok, f = pcall(plan.from_source, pre .. "// kloop: launch " .. text .. "\n", "k", { TN = "4" })
      assert.is_true(ok, tostring(f))
      local p, err
      if f then
        ok, p, err = pcall(f, size)
        assert.is_true(ok, tostring(p))
      end
      local dt = sys.now() - t0
      if dt > worst then worst = dt end
      count = count + 1
      if f then
        assert.is_true(type(p) == "table" or (p == nil and type(err) == "string"), string.format("%q", text))
        if err then assert.is_nil(err:find("internal error", 1, true), err) end
      end
      if well then
        local fn = loadstring("return " .. text:match("^grid = {(.*)}, block") .. ", " .. text:match("block = {(.*)}$"))
        setfenv(fn, env)
        local g, b = fn()
        local valid = g >= 1 and g == math.floor(g) and g <= 2^31 - 1 and b == math.floor(b)
        if p then
          assert.are.equal(g, p[1].grid[1], text)
          assert.are.equal(b, p[1].block[1], text)
          agreed = agreed + 1
        elseif not (err:find("by zero", 1, true) or err:find("2^53", 1, true) or err:find("nesting", 1, true)
            or err:find("tokens", 1, true) or err:find("longer than", 1, true)) then
          assert.is_false(valid, text .. " -> " .. err)
        end
      end
    end
    assert.is_true(count >= 1000, "only " .. count .. " cases in the time")
    assert.is_true(agreed >= 100, "only " .. agreed .. " valid plans agreed")
    assert.is_true(worst < 0.25, string.format("slowest case %.3f s", worst))
    assert.is_true(collectgarbage("count") - m0 < 64 * 1024)
  end)
end)
