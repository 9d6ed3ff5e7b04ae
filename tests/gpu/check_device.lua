-- tests/gpu/check_device.lua: kloop's state check and output comparison on the GPU give
-- the host's results (src/kl_buf.c: kl_regions_check, kl_buf_compare) on the layouts a
-- clever kernel would aim at: regions that start anywhere on a word (a guard zone right
-- after a buffer), lengths of 1 to 3 words past a 16-byte boundary, changed words in a
-- region's first and last word, a long region with one changed word; comparisons whose
-- length is not a multiple of 4, with wrong, NaN and unwritten elements in the last
-- group, f32 and f64 outputs and references, and a misaligned output (the kernels read
-- 16 bytes at a time where they can: a word dropped or read twice at an edge shows here).
-- Label gpu.
local core = require("kloop.core.api")
local compile = require("kloop.eval.compile")
local wc = require("kloop.eval.worker_client")
local buf = require("kloop.core.buf")
local ffi = require("ffi")
local be = require("kloop.worker.backend_cuda")
local probe = core.gpu_probe(0)
if not probe then print("SKIP: no GPU here") os.exit(77) end

-- compiled before this process takes the GPU (NVRTC runs in forked children)
local cjob = compile.compile(wc.check_source, { arch = probe.arch, name = "kloop_check_regions.cu" })
local mjob = compile.compile(wc.compare_source, { arch = probe.arch, name = "kloop_compare.cu" })
assert(cjob.ok, cjob.log)
assert(mjob.ok, mjob.log)
assert(be.init({ device = 0, device_heap = 2^20 }))
assert(be.set_check_kernel(cjob.cubin_path))
assert(be.set_compare_kernel(mjob.cubin_path))

local failures, checks = 0, 0
local function check(cond, fmt, ...)
  checks = checks + 1
  if not cond then failures = failures + 1 print("FAIL: " .. string.format(fmt, ...)) end
end
local x = 0x2545F4914F6CDD1DULL
local function rand32()
  x = bit.bxor(x, bit.lshift(x, 13)) x = bit.bxor(x, bit.rshift(x, 7)) x = bit.bxor(x, bit.lshift(x, 17))
  return tonumber(bit.band(bit.rshift(x, 16), 0xFFFFFFFFULL))
end
local function randint(n) return rand32() % n end

-- ---- the state check ----
local WORDS = 3 * 2^20 + 4096
local dev = assert(be.alloc(WORDS * 4))
local host = ffi.new("uint32_t[?]", WORDS)
for i = 0, WORDS - 1 do host[i] = rand32() end
assert(be.h2d(dev, host, WORDS * 4))
local lengths = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 255, 257, 1023, 4099, 65537, 2^20 + 3 }
local items, at, planted = {}, 1, {}
for k = 1, 96 do
  local len = lengths[(k - 1) % #lengths + 1]
  if len > 4099 and k > #lengths then len = 4099 end -- (the long ones once)
  at = at + randint(5) -- (any start on a word: 0 to 3 words past a 16-byte boundary)
  if at + len >= WORDS then break end
  local mode = ({ buf.REGION.digest, buf.REGION.guard, buf.REGION.const })[k % 3 + 1]
  local r = { ptr = dev + 4 * at, nwords = len, seed = 0x9E3779B97F4A7C15ULL * k + k, mode = mode,
    word = 0xA5A5A5A5 + k, at = at }
  if mode == buf.REGION.guard then
    buf.guard_fill(host + at, len, r.seed)
  elseif mode == buf.REGION.const then
    for i = 0, len - 1 do host[at + i] = r.word end
  end
  if mode ~= buf.REGION.digest then
    -- changed words: none, the first, the last, or one in the middle of the long ones
    local which = k % 4
    local idx = which == 1 and 0 or which == 2 and len - 1 or which == 3 and math.floor(len / 2) or nil
    if idx then host[at + idx] = bit.bnot(host[at + idx]) planted[k] = idx end
  end
  items[#items + 1] = r
  at = at + len
end
assert(be.h2d(dev, host, WORDS * 4))
local dlist = buf.region_list(items)
local hitems = {}
for k, r in ipairs(items) do
  hitems[k] = { ptr = ffi.cast("uintptr_t", host + r.at), nwords = r.nwords, seed = r.seed, mode = r.mode, word = r.word }
end
local hlist = buf.region_list(hitems)
assert(be.check_regions(dlist.arr, dlist.n, dlist.out))
buf.regions_check(hlist.arr, hlist.n, hlist.out)
local trips = 0
for k = 0, dlist.n - 1 do
  local d, h = dlist.out[k], hlist.out[k]
  local r = items[k + 1]
  check(d.value == h.value and d.first == h.first, "region %d (%d words at word %d, mode %d): device %s/%s, host %s/%s",
    k + 1, r.nwords, r.at, r.mode, tostring(d.value), tostring(d.first), tostring(h.value), tostring(h.first))
  if planted[k + 1] then
    trips = trips + 1
    check(d.value == 1 and d.first == bit.bnot(ffi.cast("uint64_t", planted[k + 1])),
      "region %d: the changed word %d not found alone (%s, %s)", k + 1, planted[k + 1], tostring(d.value), tostring(d.first))
  elseif r.mode ~= buf.REGION.digest then
    check(d.value == 0, "region %d: %s words reported changed where none was", k + 1, tostring(d.value))
  end
end
print(string.format("state check: %d regions (%d with a changed word), device and host compared", dlist.n, trips))

-- ---- the comparison ----
-- (what the worker passes: the raw bits of one poisoned element, and the word itself)
local pattern = { f32 = buf.poison_pattern("f32"), f64 = buf.poison_pattern("f64") }
local function compare_case(n, out_dtype, ref_dtype, offset_words)
  local osz, rsz = buf.dtype_size(out_dtype), buf.dtype_size(ref_dtype)
  local out_h = ffi.new("uint8_t[?]", n * osz + 64)
  local ref_h = ffi.new("uint8_t[?]", n * rsz + 64)
  local o = ffi.cast(out_dtype == "f64" and "double*" or "float*", out_h)
  local r = ffi.cast(ref_dtype == "f64" and "double*" or "float*", ref_h)
  for i = 0, n - 1 do
    local v = (rand32() / 2^31) - 1
    r[i] = v
    o[i] = v * (1 + 1e-9 * ((rand32() % 3) - 1))
  end
  -- wrong, NaN and unwritten elements, some in the last group of four and at the very end
  local bad = { n - 1, n - 2, math.floor(n / 2), 3, 0 }
  o[bad[1]] = o[bad[1]] + 0.5
  o[bad[3]] = 0 / 0
  if n > 8 then o[bad[4]] = o[bad[4]] - 0.25 end
  local raw = ffi.cast(out_dtype == "f64" and "uint64_t*" or "uint32_t*", out_h)
  raw[bad[2]] = out_dtype == "f64" and pattern.f64 or buf.poison_word("f32")
  -- the reference masked as the worker keeps it on the device
  local seed = 0xC0FFEE1234567ULL + n
  local rwords = math.ceil(n * rsz / 4)
  local masked = ffi.new("uint32_t[?]", rwords)
  buf.mask(masked, ref_h, rwords, seed)
  local od = assert(be.alloc(n * osz + 64))
  local rd = assert(be.alloc(rwords * 4 + 64))
  local optr = od + 4 * (offset_words or 0)
  assert(be.h2d(optr, out_h, n * osz))
  assert(be.h2d(rd, masked, rwords * 4))
  local atol, rtol = 1e-6, 1e-5
  local dc = assert(be.compare_device(optr, out_dtype, rd, ref_dtype, n, atol, rtol, pattern[out_dtype], true, seed))
  local hc = buf.compare(out_h, out_dtype, ref_h, ref_dtype, n, atol, rtol, true)
  be.free(od)
  be.free(rd)
  local what = string.format("compare n=%d %s/%s offset %d", n, out_dtype, ref_dtype, offset_words or 0)
  for _, f in ipairs({ "n_unwritten", "first_unwritten", "n_nonfinite", "first_nonfinite", "n_bad", "first_bad",
    "worst_index" }) do
    check(tonumber(dc[f]) == tonumber(hc[f]), "%s: %s device %s, host %s", what, f, tostring(dc[f]), tostring(hc[f]))
  end
  check(dc.max_abs_err == hc.max_abs_err and dc.ref_max_abs == hc.ref_max_abs, "%s: max error %.17g/%.17g, ref max %.17g/%.17g",
    what, dc.max_abs_err, hc.max_abs_err, dc.ref_max_abs, hc.ref_max_abs)
  -- (the norms are sums: the order of the additions differs, the last bits may)
  check(math.abs(dc.err_norm - hc.err_norm) <= 1e-9 * hc.err_norm and math.abs(dc.ref_norm - hc.ref_norm) <= 1e-9 * hc.ref_norm,
    "%s: norms %.17g/%.17g, %.17g/%.17g", what, dc.err_norm, hc.err_norm, dc.ref_norm, hc.ref_norm)
  check(tonumber(dc.n_unwritten) == 1 and tonumber(dc.first_unwritten) == bad[2], "%s: the unwritten element %d not found (%s at %s)",
    what, bad[2], tostring(dc.n_unwritten), tostring(dc.first_unwritten))
end
local ncases = 0
for _, n in ipairs({ 3, 4, 5, 6, 7, 9, 4097, 65536 + 3, 3 * 2^20 + 1, 2^22 }) do
  for _, t in ipairs({ { "f32", "f32" }, { "f32", "f64" }, { "f64", "f64" } }) do
    compare_case(n, t[1], t[2], 0)
    ncases = ncases + 1
  end
  if n > 8 then compare_case(n, "f32", "f32", 1) ncases = ncases + 1 end -- (an output 4 bytes off 16)
end
print(string.format("comparison: %d cases, device and host compared", ncases))
be.free(dev)
if failures > 0 then print(string.format("FAIL: %d of %d checks", failures, checks)) os.exit(1) end
print(string.format("PASS: the state check and the comparison on the device equal the host's (%d checks)", checks))
