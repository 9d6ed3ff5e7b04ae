-- tests/spec/hidden_sizes_spec.lua: the hidden sizes of a promotion (kloop.eval.hidden_sizes):
-- drawn from the secret, never a declared size, inside the task's bounds and memory cap.
local taskmod = require("kloop.eval.task")
local hidden = require("kloop.eval.hidden_sizes")
local native = require("kloop.native")

local SRC = native.source_dir .. "/tests/promote"

-- The vadd task of tests/promote with another sizes.promote (a sidecar in a temp folder).
local function vadd_with(promote_text)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir .. " && cp " .. SRC .. "/vadd.c " .. SRC .. "/vadd_ref.c " .. dir)
  local side = assert(io.open(SRC .. "/vadd.lua")):read("*a")
  side = side:gsub("promote = { N = { max = 1048576 } }", promote_text)
  local f = assert(io.open(dir .. "/vadd.lua", "w"))
  f:write(side)
  f:close()
  return taskmod.load(dir .. "/vadd.c")
end

local function values(list)
  local out = {}
  for i, h in ipairs(list) do out[i] = h.size.N end
  return out
end

describe("hidden sizes", function()
  local task = assert(taskmod.load(SRC .. "/vadd.c"))

  it("are the same for one secret and differ for another", function()
    assert.are.same(values(hidden.generate(task, "s1")), values(hidden.generate(task, "s1")))
    assert.are_not.same(values(hidden.generate(task, "s1")), values(hidden.generate(task, "s2")))
  end)

  it("cover 1, a prime, 2^k+1, between, around and past the bench size, and no declared size", function()
    local list = hidden.generate(task, "abc")
    local whys, declared = {}, { [1000] = true, [8] = true, [262144] = true }
    for _, h in ipairs(list) do
      whys[#whys + 1] = h.why
      assert.is_nil(declared[h.size.N], "a declared size was drawn: " .. h.size.N)
    end
    local text = table.concat(whys, "|")
    for _, kind in ipairs({ "N: one", "N: prime", "N: 2^k+1", "N: between", "N: around", "N: larger than bench" }) do
      assert.truthy(text:find(kind, 1, true), kind .. " missing from " .. text)
    end
    local larger
    for _, h in ipairs(list) do if h.why:find("larger", 1, true) then larger = h.size.N end end
    assert.is_true(larger > 262144)
  end)

  it("respect the task's multiple_of, min and max", function()
    local t = assert(vadd_with("promote = { N = { min = 16, max = 300000, multiple_of = 8 } }"))
    local list = hidden.generate(t, "abc")
    assert.is_true(#list > 3)
    for _, h in ipairs(list) do
      assert.are.equal(0, h.size.N % 8, "N = " .. h.size.N)
      assert.is_true(h.size.N >= 16 and h.size.N <= 300000, "N = " .. h.size.N)
    end
  end)

  it("leave out what is over the memory cap and say so", function()
    local t = assert(vadd_with("promote = { max_bytes = 3000000 }"))
    local list, notes = hidden.generate(t, "abc")
    for _, h in ipairs(list) do assert.is_true(h.bytes <= 3000000) end
    local text = table.concat(notes, "|")
    assert.truthy(text:find("over the cap", 1, true), text)
  end)

  it("take the task's extra sizes (a function) and its count", function()
    local t = assert(vadd_with("promote = { count = 3, extra = function(bench) return { { N = bench.N + 3 } } end }"))
    local list = hidden.generate(t, "abc")
    assert.are.equal(3, #list - 1)
    assert.are.equal(262147, list[#list].size.N)
    assert.are.equal("sizes.promote.extra", list[#list].why)
  end)

  it("refuse a misspelt sizes.promote field with the fix", function()
    local t, err = vadd_with("promote = { N = { multiple = 8 } }")
    assert.is_nil(t)
    assert.truthy(err:find("sizes.promote.N.multiple", 1, true), err)
    assert.truthy(err:find("multiple_of", 1, true), err)
    t, err = vadd_with("promote = { M = { max = 8 } }")
    assert.is_nil(t)
    assert.truthy(err:find("sizes.promote.M", 1, true), err)
  end)
end)
