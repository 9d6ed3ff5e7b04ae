-- tests/spec/own_kernels_spec.lua: kloop's own kernels ship in the binary
-- (tools/own_kernels.lua at build time): a compile of one of them, on an empty cache and
-- an arch the build shipped, starts no compiler and gets the very binary and log the
-- build made; anything else (another option, another arch, a candidate) compiles as
-- before. Real NVRTC, no GPU.
local compile = require("kloop.eval.compile")
local wc = require("kloop.eval.worker_client")
local native = require("kloop.native")
local util = require("kloop.util")

local function own_sources() return wc.own_sources(true) end

describe("kloop's own kernels, shipped", function()
  local saved, dir = compile.cache_dir, nil
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    compile.cache_dir = function() return dir end
    compile.forget_facts()
  end)
  after_each(function()
    compile.cache_dir = saved
    os.execute("rm -rf '" .. dir .. "'")
  end)

  local function shipped_build()
    if native.own_binary_count() == 0 then
      pending("this build shipped none (no NVRTC at build time)")
      return false
    end
    return true
  end

  it("come from the binary on an empty cache for sm_90: no compiler, the build's bytes and log", function()
    if not shipped_build() then return end
    for _, s in ipairs(own_sources()) do
      local job = compile.compile(s.src, { arch = "sm_90", name = s.name })
      assert.is_true(job.ok, s.name)
      assert.is_true(job.shipped, s.name .. " was compiled, not shipped")
      assert.is_nil(job.cjob, s.name .. ": a compiler was started")
      local cubin, log = native.own_binary(job.key)
      assert.are.equal(cubin, util.read_file(job.cubin_path), s.name .. ": the cache holds other bytes")
      assert.are.equal(log, job.log)
      -- (the resources a run reads from the log: registers of each entry)
      local n = 0
      for _, r in pairs(job.resources) do
        n = n + 1
        assert.is_number(r.registers)
      end
      assert.is_true(n > 0, s.name .. ": no entry's resources in the shipped log")
    end
  end)

  it("are found again in the cache, as a compiled binary would be", function()
    if not shipped_build() then return end
    local src = own_sources()[2].src
    assert.is_true(compile.compile(src, { arch = "sm_90" }).shipped)
    compile.forget_facts()
    local again = compile.compile(src, { arch = "sm_90" })
    assert.is_true(again.ok and again.cached)
    assert.is_nil(again.shipped)
  end)

  it("are the build's for every shipped arch, and not for an arch it did not ship", function()
    if not shipped_build() then return end
    local src = own_sources()[1].src
    for _, arch in ipairs({ "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120" }) do
      local job = assert(compile.prepare(src, { arch = arch }))
      assert.truthy(native.own_binary(job.key), arch .. " not shipped")
    end
    local other = assert(compile.prepare(src, { arch = "sm_75" }))
    assert.is_nil(native.own_binary(other.key))
  end)

  it("serve no source but their own: one more option, or one more line, compiles", function()
    if not shipped_build() then return end
    local src = own_sources()[1].src
    local opt = compile.compile(src, { arch = "sm_90", defines = { KLOOP_X = 1 } })
    assert.is_true(opt.ok)
    assert.is_nil(opt.shipped)
    local edited = compile.compile(src .. "\n// a candidate's copy, edited\n", { arch = "sm_90" })
    assert.is_true(edited.ok)
    assert.is_nil(edited.shipped)
    assert.are_not.equal(native.own_binary(assert(compile.prepare(src, { arch = "sm_90" })).key),
      util.read_file(edited.cubin_path))
  end)

  it("into a cache that cannot keep them: not shipped, and the compile says why", function()
    if not shipped_build() then return end
    local file = os.tmpname() -- a file where the cache's folder would be
    compile.cache_dir = function() return file .. "/cache" end
    local job = assert(compile.prepare(own_sources()[1].src, { arch = "sm_90" }))
    assert.is_false(compile.try_shipped(job))
    local built = compile.compile(own_sources()[1].src, { arch = "sm_90" })
    os.remove(file)
    assert.is_false(built.ok)
    assert.truthy(tostring(built.cache_error):find("cannot keep the binary", 1, true), tostring(built.cache_error))
  end)

  it("are an empty table where the build finds no NVRTC, and the build goes on", function()
    local nvrtc = require("kloop.core.nvrtc")
    local real, real_arg = nvrtc.version, _G.arg
    local out = os.tmpname()
    nvrtc.version = function() return nil, "libnvrtc.so: not found" end
    _G.arg = { out }
    local ok, err = pcall(dofile, native.source_dir .. "/tools/own_kernels.lua")
    nvrtc.version, _G.arg = real, real_arg
    local text = util.read_file(out) or ""
    os.remove(out)
    assert.is_true(ok, tostring(err))
    assert.truthy(text:find("const kl_own_kernel kl_own_kernels[] = {\n  {0, 0, 0, 0}", 1, true), text)
    assert.is_nil(text:find("kl_own_1", 1, true))
  end)
end)
