-- tests/spec/llm_extract_spec.lua: pulling the kernel and its launch lines out of LLM replies of many shapes.
local ex = require("kloop.llm.extract")

local K = 'extern "C" __global__ void scale(int N, const float *x, float *y) {\n'
  .. '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < N) y[i] = 2.0f * x[i];\n}'
local HELPER = "__device__ float twice(float v) { return 2.0f * v; }"

local function get(text, entry)
  return ex.extract(text, { entry = entry == nil and "scale" or entry or nil })
end

describe("kernel extraction", function()
  it("1. a ```cuda block with prose around it", function()
    local r = assert(get("Here you go:\n\n```cuda\n" .. K .. "\n```\n\nThis is faster because..."))
    assert.are.equal(K .. "\n", r.source)
    assert.are.equal("cuda", r.lang)
    assert.is_false(r.unterminated)
  end)

  it("2. ```cpp, ```c and ```c++ blocks", function()
    for _, lang in ipairs({ "cpp", "c", "c++", "CUDA", "cu" }) do
      local r = assert(get("```" .. lang .. "\n" .. K .. "\n```"))
      assert.are.equal(K .. "\n", r.source, lang)
    end
  end)

  it("3. a fence without a language", function()
    assert.are.equal(K .. "\n", assert(get("```\n" .. K .. "\n```")).source)
  end)

  it("4. a ~~~ fence, and a longer ``` fence containing ``` text", function()
    assert.are.equal(K .. "\n", assert(get("~~~cuda\n" .. K .. "\n~~~")).source)
    local inner = K .. "\n// in markdown: ```\n"
    local r = assert(get("````cuda\n" .. inner .. "````\n"))
    assert.matches("in markdown", r.source)
  end)

  it("5. several blocks: the one defining the entry wins over a longer helper", function()
    local long_helper = HELPER .. "\n" .. string.rep("// padding line\n", 30)
    local text = "First a helper:\n```cuda\n" .. long_helper .. "```\nThen the kernel:\n```cuda\n" .. K .. "\n```"
    assert.are.equal(K .. "\n", assert(get(text)).source)
  end)

  it("6. several blocks defining the entry: the last one (the revision)", function()
    local v2 = K:gsub("2%.0f", "3.0f")
    local text = "Original:\n```cuda\n" .. K .. "\n```\nOptimized:\n```cuda\n" .. v2 .. "\n```"
    local r = assert(get(text))
    assert.matches("3.0f", r.source)
    assert.are.equal(2, r.block)
  end)

  it("7. without an entry name: the longest code block", function()
    local text = "```cuda\n" .. HELPER .. "\n```\n```cuda\n" .. K .. "\n```"
    assert.are.equal(K .. "\n", assert(ex.extract(text)).source)
  end)

  it("8. code blocks beat a longer block in another language", function()
    local py = "```python\n" .. string.rep("print('x')\n", 50) .. "```\n"
    assert.are.equal(K .. "\n", assert(get(py .. "```cuda\n" .. K .. "\n```")).source)
  end)

  it("9. a reply with no code is a failure with a reason", function()
    local r, why = get("I think you should use shared memory tiling and vectorized loads.")
    assert.is_nil(r)
    assert.matches("no code block", why)
    r, why = get("")
    assert.is_nil(r)
    assert.matches("empty", why)
    r = get(nil)
    assert.is_nil(r)
  end)

  it("10. blocks that do not define the entry are a failure naming it", function()
    local r, why = get("```cuda\n" .. HELPER .. "\n```")
    assert.is_nil(r)
    assert.matches("defines scale", why)
  end)

  it("11. an unterminated fence (a reply cut by max_tokens) runs to the end", function()
    local r = assert(get("Sure:\n```cuda\n" .. K .. "\n"))
    assert.is_true(r.unterminated)
    assert.are.equal(K .. "\n", r.source)
  end)

  it("12. CRLF line ends", function()
    local text = ("Here:\n```cuda\n" .. K .. "\n```\n"):gsub("\n", "\r\n")
    local r = assert(get(text))
    assert.are.equal(K .. "\n", r.source)
    assert.is_nil(r.source:find("\r", 1, true))
  end)

  it("13. the launch plan comments inside the kernel", function()
    local src = "#define BM 64\n// kloop: launch grid = {cdiv(N, BM)}, block = {256}\n"
      .. "//kloop: launch entry = \"fixup\", grid = {1}, block = {32}\n" .. K
    local r = assert(get("```cuda\n" .. src .. "\n```"))
    assert.are.same({ "grid = {cdiv(N, BM)}, block = {256}", 'entry = "fixup", grid = {1}, block = {32}' }, r.plans)
  end)

  it("14. a bare reply that is all code (no fences)", function()
    local r = assert(get("#include <cuda_fp16.h>\n" .. K .. "\n"))
    assert.matches("^#include", r.source)
    -- prose first, then unfenced code
    r = assert(get("The kernel:\n" .. K .. "\n"))
    assert.matches("^extern", r.source)
  end)

  it("15. indented fences (inside a list) lose their indentation", function()
    local ind = "   "
    local text = "1. Replace it with:\n" .. ind .. "```cuda\n" .. ind .. K:gsub("\n", "\n" .. ind) .. "\n" .. ind .. "```\n"
    assert.are.equal(K .. "\n", assert(get(text)).source)
  end)

  it("16. an empty block is skipped; inline ``` in prose is not a fence", function()
    local text = "Use ```cuda``` blocks.\n```\n```\n```cuda\n" .. K .. "\n```"
    assert.are.equal(K .. "\n", assert(get(text)).source)
  end)

  it("17. a host C function counts as the entry for host tasks", function()
    local c = "void scale(int N, const float *x, float *y) {\n  for (int i = 0; i < N; i++) y[i] = 2 * x[i];\n}"
    assert.are.equal(c .. "\n", assert(get("```c\n" .. c .. "\n```")).source)
  end)

  it("18. a call of the entry is not a definition", function()
    local host = "```cpp\nint main() { scale<<<1, 1>>>(n, x, y); }\n```\n```cuda\n" .. K .. "\n```"
    local r = assert(get(host))
    assert.are.equal(K .. "\n", r.source)
  end)
end)

-- Hostile replies: every scan is linear and bounded, whatever the reply holds.
local C = require("kloop.core.ffi").C

local function timed(fn)
  collectgarbage()
  local m0, t0 = collectgarbage("count"), C.kl_now()
  local ok, r, why = pcall(fn)
  assert.is_true(ok, tostring(r))
  return C.kl_now() - t0, collectgarbage("count") - m0, r, why
end

local function hostile(text, entry)
  local dt, dmem, r, why = timed(function() return ex.extract(text, { entry = entry == nil and "scale" or entry or nil }) end)
  assert.is_true(dt < 1, string.format("%d bytes took %.2f s", #text, dt))
  assert.is_true(dmem < 64 * 1024, string.format("%d bytes grew the heap by %.0f KB", #text, dmem))
  assert.is_true(r ~= nil or type(why) == "string")
  return r, why, dt
end

describe("kernel extraction: hostile replies", function()
  local function rep_to(unit, bytes) return string.rep(unit, math.floor(bytes / #unit)) end
  local SHAPES = {
    { "prose", "All work and no play makes Jack a dull boy. " },
    { "signatures", "void scale(int a) " },
    { "open parentheses", "scale(" },
    { "whitespace runs", " \t  x" },
    { "unclosed comments", "/*" },
    { "line comments", "//" },
    { "code-ish", "__global__ scale" },
    { "backticks", "`" },
    { "braces", "{;}" },
  }
  for _, sh in ipairs(SHAPES) do
    for _, bytes in ipairs({ 50 * 1024, 1024 * 1024 }) do
      it(string.format("a %d KB single-line reply of %s", bytes / 1024, sh[1]), function()
        hostile(rep_to(sh[2], bytes))
        hostile("```cuda\n" .. rep_to(sh[2], bytes) .. "\n```")
        hostile("```cuda\n" .. K .. rep_to(sh[2], bytes))
      end)
    end
  end

  it("100k fences, 100k lines of (((, a fence of 1 MB of backticks", function()
    hostile(string.rep("```\n", 100000))
    local r, why = hostile(string.rep("```\n", 1e6))
    assert.is_nil(r)
    assert.matches("more than 10000 fenced blocks", why)
    assert.are.equal(K .. "\n", assert(hostile(string.rep("```\n\n```\n", 4999) .. "```cuda\n" .. K .. "\n```")).source)
    hostile(string.rep("```cuda\n(((\n", 50000))
    hostile(string.rep("(((\n", 100000))
    hostile("```cuda\n" .. string.rep("scale(((\n", 100000) .. "```")
    hostile(string.rep("`", 1024 * 1024))
    hostile(string.rep("~~~~\n   ", 100000))
  end)

  it("a kernel after 1 MB of junk is still found", function()
    local r = assert(hostile(string.rep("scale( /* ", 100000) .. "\n```cuda\n" .. K .. "   \t\n\n```\n" .. string.rep(" ", 1e6)))
    assert.are.equal(K .. "\n", r.source)
    r = assert(hostile("```cuda\n" .. K .. string.rep(" \t ", 300000) .. "\n```"))
    assert.are.equal(K .. "\n", r.source)
  end)

  it("entry names with pattern characters are plain text", function()
    assert.is_true(ex.defines("void a.b(int x) { }", "a.b"))
    assert.is_false(ex.defines("void axb(int x) { }", "a.b"))
    assert.is_false(ex.defines("void scale(int x) { }", "sc%a.e"))
    assert.is_true(ex.defines("void sc%a.e(int x) { }", "sc%a.e"))
    for _, e in ipairs({ "sc%a.e(", "%", "[", "(.-)", "^$", ".*", "" }) do
      local r, why = hostile("```cuda\n" .. K .. "\n```", e)
      assert.is_nil(r)
      assert.matches("defines", why)
      hostile(string.rep(e .. "(", 50000), e)
    end
  end)

  it("refuses a reply over 4 MB at once", function()
    local r, why = hostile(string.rep("x", 4 * 1024 * 1024 + 1))
    assert.is_nil(r)
    assert.matches("too large", why)
  end)

  it("scales linearly: 2 MB takes about 4 times 512 KB", function()
    local unit = "__global__ void scale(int a, /* x */ float b) ; (( `` \t "
    local function t(bytes) return select(3, hostile(rep_to(unit, bytes))) end
    t(64 * 1024) -- warm the JIT
    local small, big = t(512 * 1024), t(2048 * 1024)
    assert.is_true(big < 2, string.format("2 MB took %.2f s", big))
    assert.is_true(big < 12 * small + 0.25, string.format("512 KB %.3f s, 2 MB %.3f s", small, big))
  end)
end)

-- The rules as patterns (the pre-linear code): the reference on small replies only.
local ref = {}
function ref.defines(src, entry)
  local clean = src:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
  local name = entry:gsub("%p", "%%%0")
  for pre in clean:gmatch("([^;{}]-)%f[%w_]" .. name .. "%s*(%b())%s*{") do
    if pre:find("__global__", 1, true) or pre:find("void", 1, true) then return true end
  end
  return false
end
function ref.launch_lines(src)
  local out = {}
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    local body = line:match("^%s*//%s*kloop:%s*launch%s+(.-)%s*$")
    if body then out[#out + 1] = body end
  end
  return out
end
function ref.blocks(text)
  text = text:gsub("\r\n", "\n"):gsub("\r", "\n")
  local lines, out, i = {}, {}, 1
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  while i <= #lines do
    local indent, fence, info = lines[i]:match("^( ? ? ?)(```+)(.*)$")
    if not fence then indent, fence, info = lines[i]:match("^( ? ? ?)(~~~+)(.*)$") end
    if fence and not (fence:sub(1, 1) == "`" and info:find("`", 1, true)) then
      local body, j, closed = {}, i + 1, false
      while j <= #lines do
        local f2 = lines[j]:match("^ ? ? ?(" .. (fence:sub(1, 1) == "`" and "```+" or "~~~+") .. ")%s*$")
        if f2 and #f2 >= #fence then closed = true break end
        local l = lines[j]
        if #indent > 0 and l:sub(1, #indent) == indent then l = l:sub(#indent + 1) end
        body[#body + 1] = l
        j = j + 1
      end
      out[#out + 1] = { lang = (info:match("^%s*([%w_+%-%.#]*)") or ""):lower(), body = table.concat(body, "\n"),
        unterminated = not closed, index = #out + 1 }
      i = j + 1
    else
      i = i + 1
    end
  end
  return out
end

describe("kernel extraction: random property test against the pattern rules", function()
  it("agrees on a few thousand small random replies, each fast", function()
    local rng = require("kloop.search.rng").new(77)
    local atoms = { "scale", "scale ", "xscale", "scale2", "(", ")", "((", "))", "{", "}", ";", " ", "\n", "\t",
      "void ", "__global__ ", "/*", "*/", "//", "```", "```cuda\n", "~~~\n", "````", "   ```\n", "\n```\n", "   ",
      "int a", ",", 'extern "C" ', "#include <x>\n", "// kloop: launch grid = {1}, block = {1}  \n",
      "//kloop:launch  x\n", "python\n", "\r\n", "\r", "`", "a.b", "template <", "  \n", "\0", "\255" }
    local t_end, n, worst = C.kl_now() + 20, 0, 0
    for _ = 1, 20000 do
      if C.kl_now() > t_end then break end
      local parts = {}
      for i = 1, rng:int(0, 40) do parts[i] = rng:pick(atoms) end
      local s, entry = table.concat(parts), rng:pick({ "scale", "a.b" })
      local t0 = C.kl_now()
      local got = { ex.defines(s, entry), ex.launch_lines(s), ex.blocks(s) }
      local ok, r, why = pcall(ex.extract, s, { entry = entry })
      worst = math.max(worst, C.kl_now() - t0)
      assert.is_true(ok, tostring(r))
      assert.is_true(r ~= nil or type(why) == "string")
      assert.are.same({ ref.defines(s, entry), ref.launch_lines(s), ref.blocks(s) }, got, string.format("%q", s))
      n = n + 1
    end
    assert.is_true(n >= 1000, "only " .. n .. " cases")
    assert.is_true(worst < 0.25, string.format("slowest case %.3f s", worst))
  end)
end)
