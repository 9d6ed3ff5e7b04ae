-- tests/spec/cdef_spec.lua: the FFI declarations come from kloop.h and resolve in the binary.
local ffi = require("ffi")
local core = require("kloop.core.ffi")

describe("kloop.h as the FFI contract", function()
  local text = core.cdef_text()

  it("declares every kl_ function the binary exports", function()
    local names = {}
    for name in text:gmatch("[%s%*](kl_[%w_]+)%s*%(") do names[#names + 1] = name end
    assert.is_true(#names > 40, "expected the full API, found " .. #names)
    for _, name in ipairs(names) do
      local ok, err = pcall(function() return ffi.C[name] end)
      assert.is_true(ok, name .. " is declared but not exported: " .. tostring(err))
    end
  end)

  it("keeps the embedded header identical to src/kloop.h in the source tree", function()
    local native = require("kloop.native")
    local f = io.open(native.source_dir .. "/src/kloop.h", "rb")
    if not f then pending("no source tree next to this binary") return end
    local disk = f:read("*a")
    f:close()
    assert.are.equal(disk, native.embedded("kloop.h"),
      "src/kloop.h changed since the build: rebuild kloop")
  end)

  -- The header's rule (its opening comment): between the includes and the closing
  -- #endif, no preprocessor line at all (enums, not macros). Checked on the raw embedded
  -- header: cdef_text() has already dropped every '#' line, so it cannot show one.
  -- Returns the offending "line N: text" list.
  local function macros_in_body(header)
    local lines = {}
    for l in (header .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    local first, last = 0, #lines + 1
    for i, l in ipairs(lines) do
      if l:match("^%s*#%s*include") then first = i end
      if l:match("^%s*#%s*endif") then last = i end
    end
    local bad = {}
    for i = first + 1, last - 1 do
      if lines[i]:match("^%s*#") then bad[#bad + 1] = string.format("line %d: %s", i, lines[i]) end
    end
    return bad
  end

  it("has no macros between the includes and the end guard", function()
    local raw = require("kloop.native").embedded("kloop.h")
    local bad = macros_in_body(raw)
    assert.are.same({}, bad, "preprocessor lines in kloop.h's declarations:\n" .. table.concat(bad, "\n"))
  end)

  it("sees a macro injected into a declaration (the check can fail)", function()
    local raw = require("kloop.native").embedded("kloop.h")
    local bad = raw:gsub("typedef struct kl_err {", "#define KL_MSG_LEN 512\ntypedef struct kl_err {", 1)
    assert.are_not.equal(raw, bad)
    local found = macros_in_body(bad)
    assert.are.equal(1, #found)
    assert.matches("#define KL_MSG_LEN 512", found[1], 1, true)
  end)

  it("returns error text through kl_err, never raising", function()
    local err = ffi.new("kl_err")
    local st = ffi.C.kl_cuda_load(err)
    if st == 0 then pending("a CUDA driver is present here") return end
    assert.are.equal(ffi.C.KL_ENOTFOUND, st)
    assert.matches("libcuda.so.1", ffi.string(err.msg))
  end)
end)
