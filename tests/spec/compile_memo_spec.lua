-- tests/spec/compile_memo_spec.lua: the include scan and the extern "C" test are kept for
-- a few sources (kloop.eval.compile's memo): asked again, a source gets the same answer
-- (a refusal stays a refusal), a caller that changes the list it got does not change the
-- next answer, and more sources than the memo holds are all still scanned right. Size
-- expressions are compiled once (kloop.eval.task_sizes.eval_size) and still see each
-- call's sizes.
local compile = require("kloop.eval.compile")
local sizes = require("kloop.eval.task_sizes")

describe("kloop.eval.compile's memo", function()
  it("gives the same answer twice, a refusal included", function()
    local bad = '#include "/etc/passwd"\n__global__ void k() {}\n'
    for _ = 1, 3 do
      local q, why = compile.scan_includes(bad)
      assert.is_nil(q)
      assert.truthy(why:find("refused", 1, true), why)
    end
    local cont = '#inc\\\nlude "../x.h"\n'
    for _ = 1, 2 do assert.is_nil((compile.scan_includes(cont))) end
    local ok = '#include "a.h"\n#include <cuda_fp16.h>\n'
    for _ = 1, 2 do assert.are.same({ "a.h" }, compile.scan_includes(ok)) end
  end)

  it("hands out a copy: a caller's change does not reach the next answer", function()
    local src = '#include "mine.h"\n'
    local q = compile.scan_includes(src)
    q[1], q[2] = "/etc/shadow", "other.h"
    assert.are.same({ "mine.h" }, compile.scan_includes(src))
  end)

  it("scans more sources than it keeps, each right", function()
    for round = 1, 2 do
      for i = 1, 20 do
        local src = string.format('#include "h%d.h"\n// %d\n', i, round)
        assert.are.same({ "h" .. i .. ".h" }, compile.scan_includes(src))
        local src2 = string.format('#import "h%d.h"\n', i)
        assert.is_nil((compile.scan_includes(src2)))
      end
    end
  end)

  it("keeps the extern \"C\" answer per source", function()
    local plain = '__global__ void k() {}\n'
    local ext = 'extern "C" __global__ void k() {}\n'
    local commented = '// extern "C"\n__global__ void k() {}\n'
    for _ = 1, 2 do
      assert.is_true(compile.needs_lowering("k", plain))
      assert.is_false(compile.needs_lowering("k", ext))
      assert.is_true(compile.needs_lowering("k", commented))
      assert.is_true(compile.needs_lowering("k<1>", ext))
    end
  end)
end)

describe("kloop.eval.task_sizes.eval_size", function()
  it("compiles an expression once and evaluates it at each call's sizes", function()
    for n = 1, 5 do assert.are.equal(n * 7 + 1, sizes.eval_size("N*K+1", { N = n, K = 7 }, "t.lua", "args[1].size")) end
    -- (the same text in another field: its errors name that field)
    local ok, err = pcall(sizes.eval_size, "N*K+1", { N = 2 }, "t.lua", "args[2].size")
    assert.is_false(ok)
    local msg = tostring(err.message or err)
    assert.truthy(msg:find("args[2].size", 1, true), msg)
    assert.is_nil(msg:find("args[1]", 1, true), msg)
    assert.are.equal(6, sizes.eval_size("cdiv(N, 2)", { N = 11 }, "t.lua", "args[3].size"))
    -- (nothing of one call's sizes is left for the next)
    assert.are.equal(3, sizes.eval_size("N + 2", { N = 1, Q = 5 }, "t.lua", "args[4].size"))
    assert.is_false((pcall(sizes.eval_size, "N + Q", { N = 1 }, "t.lua", "args[4].size")))
    assert.is_false((pcall(sizes.eval_size, "N", { K = 1 }, "t.lua", "args[4].size")))
  end)
end)
