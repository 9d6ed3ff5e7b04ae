-- tests/gpu/isolation.lua: isolation on the GPU (label gpu): kloop's state-check kernel
-- agrees with the host computation bit for bit, guard trips name the first word, the
-- device heap is capped, and a hanging candidate on the naive gemm costs seconds, not
-- minutes (the deadline follows from the baseline's measured time).
local core = require("kloop.core.api")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local ffi, C = core.ffi, core.C
local util = require("kloop.util")
local compile = require("kloop.eval.compile")
local eval = require("kloop.eval.evaluator")
local be = require("kloop.worker.backend_cuda")

local failures = 0
local function check(cond, what)
  print((cond and "PASS: " or "FAIL: ") .. what)
  if not cond then failures = failures + 1 end
end

-- Compiled before this process takes the GPU (NVRTC runs in forked children, which must
-- not inherit a CUDA context).
local arch = core.gpu_probe(0).arch or "sm_90"
local job = compile.compile(eval.check_source, { arch = arch, name = "kloop_check_regions.cu" })
assert(job.ok, job.log)
local heap_src = [[
extern "C" __global__ void try_malloc(unsigned long long bytes, int *ok) {
  void *p = malloc(bytes);
  *ok = p != 0;
  if (p) free(p);
}
]]
local hj = compile.compile(heap_src, { arch = arch, name = "heap.cu" })
assert(hj.ok, hj.log)

-- 1. a hang on the naive gemm (in a worker, before this process takes the GPU): the deadline follows from the baseline's time
local task = assert(require("kloop.eval.task").load("kernels/gemm.lua"))
local ev = eval.new(task, { timing = { budget = 1.0 } })
local base = ev:evaluate(nil)
check(base.verdict == "ok", string.format("naive gemm baseline: %s %.3f ms", base.verdict, base.time_ms or -1))
local deadline, source = ev:deadline("evaluate", ev:timing({ budget = 1.0 }))
local hang = util.read_file("tests/adversarial/hang.cu")
t0 = C.kl_now()
local r = ev:evaluate(hang, { name = "hang.cu", timing = { budget = 1.0 } })
local cost = C.kl_now() - t0
check(r.verdict == "timeout" and cost < 60, string.format("hang: %s after %.1f s (deadline %.1f s: %s)", r.verdict, cost, deadline, source))
check(r.reason:find("deadline:", 1, true) ~= nil, "the timeout's reason names the deadline and its source: " .. r.reason)
t0 = C.kl_now()
local g = ev:evaluate(util.read_file("bench/ladder/1_coalesced.cu"), { name = "coalesced.cu" })
check(g.verdict == "ok", string.format("the next candidate after the hang: %s %.3f ms (worker restart + setup + evaluation %.1f s)",
  g.verdict, g.time_ms or -1, C.kl_now() - t0))
ev:close()
-- 2. the kernel against kl_regions_check; this process takes the GPU itself
assert(be.init({ device = 0, device_heap = 2^20 }))
assert(be.set_check_kernel(job.cubin_path))
local sizes = { 1, 31, 1000, 65536 + 3, 2^22 + 5 }
local regions, hosts = {}, {}
for k, n in ipairs(sizes) do
  local h = ffi.new("uint32_t[?]", n)
  C.kl_buf_fill(h, C.KL_U32, n, C.KL_DIST_INT, 0, 2^31, 1000 + k)
  local d = assert(be.alloc(n * 4))
  assert(be.h2d(d, h, n * 4))
  hosts[k] = h
  regions[#regions + 1] = { dev = d, host = h, n = n, mode = C.KL_REGION_DIGEST, seed = 77 + k }
  -- a guard zone with one word changed, and a constant region with two
  local g = ffi.new("uint32_t[?]", n)
  C.kl_guard_fill(g, n, 99 + k)
  local first = math.floor(n / 2)
  g[first] = g[first] + 1
  local dg = assert(be.alloc(n * 4))
  assert(be.h2d(dg, g, n * 4))
  regions[#regions + 1] = { dev = dg, host = g, n = n, mode = C.KL_REGION_GUARD, seed = 99 + k, first = first }
  local z = ffi.new("uint32_t[?]", n)
  if n > 2 then z[n - 1] = 5 z[n - 2] = 5 end
  local dz = assert(be.alloc(n * 4))
  assert(be.h2d(dz, z, n * 4))
  regions[#regions + 1] = { dev = dz, host = z, n = n, mode = C.KL_REGION_CONST, seed = 0, word = 0 }
end
local n = #regions
local darr, harr = ffi.new("kl_region[?]", n), ffi.new("kl_region[?]", n)
for k, r in ipairs(regions) do
  for _, pair in ipairs({ { darr, r.dev }, { harr, tonumber(ffi.cast("uintptr_t", r.host)) } }) do
    local d = pair[1][k - 1]
    d.ptr, d.nwords, d.seed, d.mode, d.word = pair[2], r.n, r.seed, r.mode, r.word or 0
  end
end
local dout, hout = ffi.new("kl_region_result[?]", n), ffi.new("kl_region_result[?]", n)
local t0 = C.kl_now()
assert(be.check_regions(darr, n, dout))
local gpu_s = C.kl_now() - t0
C.kl_regions_check(harr, n, hout)
local same = true
for k = 0, n - 1 do
  if dout[k].value ~= hout[k].value or dout[k].first ~= hout[k].first then
    same = false
    print(string.format("  region %d (mode %d, %d words): gpu %s/%s host %s/%s", k + 1, regions[k + 1].mode, regions[k + 1].n,
      tostring(dout[k].value), tostring(dout[k].first), tostring(hout[k].value), tostring(hout[k].first)))
  end
end
check(same, string.format("state-check kernel = host computation on %d regions (%.2f ms for all)", n, gpu_s * 1e3))
local g4 = regions[#regions - 1]
check(tonumber(0xFFFFFFFFFFFFFFFFULL - dout[n - 2].first) == g4.first and dout[n - 2].value == 1ULL,
  "a guard trip reports its first changed word and the count")

-- 3. the device heap is capped: a 4 MiB malloc fails under the 1 MiB default (CUDA's own default is 8 MiB)
local mod = assert(be.load(hj.cubin_path))
local fn = assert(be.func(mod, "try_malloc"))
local okbuf = assert(be.alloc(4))
local function try(bytes)
  local pb, po = ffi.new("uint64_t[1]", bytes), ffi.new("uint64_t[1]", okbuf)
  local params = ffi.new("void*[2]", { pb, po })
  assert(be.launch(fn, { 1, 1, 1 }, { 1, 1, 1 }, 0, params))
  assert(be.sync())
  local h = ffi.new("int[1]")
  assert(be.d2h(h, okbuf, 4))
  return h[0] == 1
end
local small, big = try(64 * 1024), try(4 * 2^20)
check(small and not big, string.format("device heap: a 64 KiB malloc %s, a 4 MiB one %s (1 MiB cap)",
  small and "works" or "FAILS", big and "WORKS" or "is refused"))

os.exit(failures == 0 and 0 or 1)
