-- tests/spec/stateless_spec.lua: which modules the timing protocol need not load afresh
-- before each timed repetition (kloop.eval.compile.keeps_state): those NVRTC compiles
-- without memory of their own between launches. A module that keeps state (__device__
-- or __managed__ variables) is always reloaded, so a cache in its globals never serves
-- a timed launch; what is not an ELF is reloaded too.
local compile = require("kloop.eval.compile")
local util = require("kloop.util")

local HEAD = 'extern "C" __global__ void k(float *o, const float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;'
local CASES = {
  { "a plain kernel", false, HEAD .. " if (i < n) o[i] = 2 * a[i]; }" },
  { "__constant__ data (the device cannot write it)", false,
    "__constant__ float tab[16];\n" .. HEAD .. " if (i < n) o[i] = tab[i % 16] * a[i]; }" },
  { "static shared memory (per block)", false,
    HEAD .. " __shared__ float s[256]; s[threadIdx.x] = a[i]; __syncthreads(); if (i < n) o[i] = s[255 - threadIdx.x]; }" },
  { "a local array", false,
    HEAD .. " float t[64]; for (int j = 0; j < 64; j++) t[j] = a[(i + j) % n]; if (i < n) o[i] = t[(i * 7) % 64]; }" },
  { "a __device__ counter", true, "__device__ int cnt;\n" .. HEAD .. " if (i < n) o[i] = a[i] + cnt; if (i == 0) cnt++; }" },
  { "an initialized __device__ variable", true,
    "__device__ int cnt = 5;\n" .. HEAD .. " if (i < n) o[i] = a[i] + cnt; if (i == 0) cnt++; }" },
  { "a __managed__ variable", true, "__managed__ int m;\n" .. HEAD .. " if (i < n) o[i] = a[i] + m; if (i == 0) m++; }" },
  { "a static __device__ array inside a function", true,
    "__device__ float seen(int i, float v) { static __device__ float memo[1024];"
      .. " float o = memo[i % 1024]; memo[i % 1024] = v; return o; }\n"
      .. HEAD .. " if (i < n) o[i] = a[i] + 0 * seen(i, a[i]); }" },
}

describe("kloop.eval.compile.keeps_state", function()
  it("says which NVRTC cubins keep memory of their own between launches", function()
    local tried = 0
    for _, c in ipairs(CASES) do
      local j = compile.compile(c[3], { arch = "sm_90", name = "k.cu" })
      if j.ok then
        tried = tried + 1
        assert.are.equal(c[2], compile.keeps_state(util.read_file(j.cubin_path)), c[1])
      else
        -- (a machine without NVRTC: nothing to compile, said once)
        assert.truthy(tostring(j.log):lower():find("nvrtc", 1, true), c[1] .. ": " .. tostring(j.log))
      end
    end
    if tried == 0 then print("(no NVRTC here: the cubin cases did not run)") end
  end)

  it("marks the evaluator's request stateless only when every binary is", function()
    local eval = require("kloop.eval.evaluator")
    local task = assert(require("kloop.eval.task").load("kernels/saxpy.lua"))
    local ev = eval.new(task, { arch = "sm_90", compile_background = false })
    -- (the facts a worker's hello gives, for the physical floor the request carries)
    ev.gpu = { arch = "sm_90", name = "spec H200", sm_count = 132, clock_khz = 1980000, mem_clock_khz = 2619000,
      mem_bus_width = 6144 }
    local req, failed = ev:prepare(task.source, {})
    if not req then
      assert.truthy(tostring(failed.log or failed.reason):lower():find("nvrtc", 1, true), tostring(failed.reason))
      return
    end
    assert.is_true(req.stateless)
    -- the same kernel with a counter of its own: loaded afresh before every timed launch
    local with_global = "__device__ unsigned kloop_spec_calls;\n"
      .. task.source:gsub("{", "{ if (threadIdx.x == 0) atomicAdd(&kloop_spec_calls, 1u);", 1)
    req, failed = ev:prepare(with_global, {})
    assert.is_table(req, failed and failed.reason)
    assert.is_nil(req.stateless)
    ev:close()
  end)

  it("keeps state for what is not an ELF64 image, or nothing at all", function()
    assert.is_true(compile.keeps_state("not an ELF"))
    assert.is_true(compile.keeps_state(nil))
    assert.is_true(compile.keeps_state("\127ELF\1\1\1"))
  end)
end)
