-- tests/gpu/fill_device.lua: inputs drawn on the GPU (kloop_fill in the state-check
-- module, what the worker's setup uses) have the bits kl_buf_fill draws on the host, for
-- every element type and distribution, over several million elements (many blocks, and
-- the host's parallel parts), with the word padding zeroed; and the pass through the
-- task's type into a reference's f64 copy is kl_buf_convert's. Then the fill's speed
-- against the host fill plus the copy it replaces. Label gpu.
local core = require("kloop.core.api")
local compile = require("kloop.eval.compile")
local eval = require("kloop.eval.evaluator")
local buf = require("kloop.core.buf")
local sys = require("kloop.core.sys")
local ffi = require("ffi")
local be = require("kloop.worker.backend_cuda")
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")
local probe = core.gpu_probe(0)
if not probe then print("SKIP: no GPU here") os.exit(77) end

-- compiled before this process takes the GPU (NVRTC runs in forked children)
local job = compile.compile(eval.check_source, { arch = probe.arch, name = "kloop_check_regions.cu" })
assert(job.ok, job.log)
assert(be.init({ device = 0, device_heap = 2^20 }))
assert(be.set_check_kernel(job.cubin_path))
assert(be.fill_input_ready(), "no kloop_fill in the state-check module")

local failures, cases = 0, 0
local function check(cond, fmt, ...)
  if not cond then failures = failures + 1 print("FAIL: " .. string.format(fmt, ...)) end
end
local DISTS = { { kind = "uniform", a = -1.5, b = 2.5 }, { kind = "normal", a = 0.25, b = 1.75 },
  { kind = "const", a = 3, b = 0 }, { kind = "int", a = -7.2, b = 300.9 } }
local DTYPES = { "f32", "f64", "f16", "bf16", "i32", "i64", "u32", "u8", "i8" }
local n = 3 * 2^20 + 3 -- odd: the padding; over 2^21: the host's parts
for _, dt in ipairs(DTYPES) do
  local size = buf.dtype_size(dt)
  local bytes = n * size
  local used = math.ceil(bytes / 4) * 4
  local h, back = buf.host_alloc(used), buf.host_alloc(used)
  local d = assert(be.alloc(used))
  for _, dist in ipairs(DISTS) do
    for seed = 11, 12 do
      ffi.fill(h, used)
      assert(buf.fill(h, dt, n, dist, seed))
      assert(be.fill32(d, 0xDEADBEEF, used / 4)) -- the padding must be written, not left
      assert(be.fill_input(d, dt, n, used, dist, seed))
      assert(be.sync())
      assert(be.d2h(back, d, used))
      cases = cases + 1
      if ffi.C.memcmp(h, back, used) ~= 0 then
        local first = 0
        while first < used and h[first] == back[first] do first = first + 1 end
        check(false, "%s %s seed %d: byte %d differs (element %d)", dt, dist.kind, seed, first, math.floor(first / size))
      end
      -- through this type into f64 (an inout's reference copy)
      if dt ~= "f64" then
        local conv, dref = buf.host_alloc(n * 8), buf.host_alloc(n * 8)
        local d64 = assert(be.alloc(n * 8))
        assert(buf.convert(h, dt, conv, "f64", n))
        assert(be.fill_input(d64, "f64", n, n * 8, dist, seed, dt))
        assert(be.sync())
        assert(be.d2h(dref, d64, n * 8))
        be.free(d64)
        cases = cases + 1
        check(ffi.C.memcmp(conv, dref, n * 8) == 0, "%s %s seed %d: the f64 copy through %s differs", dt, dist.kind, seed, dt)
      end
    end
  end
  be.free(d)
end

-- the speed: 64M f32 normals, as saxpy's bench size draws them
local big = 2^26
local hb, db = buf.host_alloc(big * 4), assert(be.alloc(big * 4))
local t0 = sys.now()
assert(buf.fill(hb, "f32", big, DISTS[2], 5))
assert(be.h2d(db, hb, big * 4))
assert(be.sync())
local t_host = sys.now() - t0
t0 = sys.now()
assert(be.fill_input(db, "f32", big, big * 4, DISTS[2], 5))
assert(be.sync())
local t_dev = sys.now() - t0
print(string.format("fill of 64M f32 normals: host fill + copy %.1f ms, on the device %.1f ms", 1e3 * t_host, 1e3 * t_dev))
if failures > 0 then
  print(string.format("FAIL: %d of %d fills differ from the host's", failures, cases))
  os.exit(1)
end
print(string.format("PASS: %d fills on the device equal the host's (%d elements each, 9 dtypes x 4 distributions)", cases, n))
