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

  it("has no macros between the includes and the end guard", function()
    local body = native_body or text
    for line in text:gmatch("[^\n]+") do
      assert.is_nil(line:match("^%s*#"), "preprocessor line left in cdef: " .. line)
    end
  end)

  it("returns error text through kl_err, never raising", function()
    local err = ffi.new("kl_err")
    local st = ffi.C.kl_cuda_load(err)
    if st == 0 then pending("a CUDA driver is present here") return end
    assert.are.equal(ffi.C.KL_ENOTFOUND, st)
    assert.matches("libcuda.so.1", ffi.string(err.msg))
  end)
end)
