-- tests/spec/llm_extract_spec.lua: pulling the kernel and its launch lines out of LLM replies of many shapes.
local ex = require("kloop.llm_extract")

local K = 'extern "C" __global__ void scale(int N, const float *x, float *y) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < N) y[i] = 2.0f * x[i];\n}'
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
    r, why = get(nil)
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
