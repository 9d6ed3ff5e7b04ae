-- kloop.core.buf: the wrapper of the core's host buffers (kl_host_alloc, kl_buf_*,
-- kl_dtype_size, kl_poison_word, kl_guard_*, kl_digest, kl_regions_check): element
-- types, random fills, poison, hashes, comparison, guard patterns and region checks.
-- The only Lua code that calls them (kloop.worker.protocol holds the policy).
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- Element types and fill distributions by the names tasks use (kl_dtype, kl_dist).
M.DTYPE = { f32 = C.KL_F32, f64 = C.KL_F64, f16 = C.KL_F16, bf16 = C.KL_BF16, i32 = C.KL_I32,
  i64 = C.KL_I64, u32 = C.KL_U32, u8 = C.KL_U8, i8 = C.KL_I8 }
M.DIST = { uniform = C.KL_DIST_UNIFORM, normal = C.KL_DIST_NORMAL, const = C.KL_DIST_CONST, int = C.KL_DIST_INT }
-- How a region is checked (kl_region_mode).
M.REGION = { digest = C.KL_REGION_DIGEST, guard = C.KL_REGION_GUARD, const = C.KL_REGION_CONST }

-- Bytes of one element of a dtype name.
function M.dtype_size(dtype) return tonumber(C.kl_dtype_size(M.DTYPE[dtype])) end

-- The 32-bit pattern an output of this dtype is poisoned with.
function M.poison_word(dtype) return C.kl_poison_word(M.DTYPE[dtype]) end

-- The raw bits of one poisoned element of a 4- or 8-byte dtype (uint64_t cdata): what a
-- comparison on the device tests each element against.
function M.poison_pattern(dtype)
  local tmp = ffi.new("uint64_t[1]")
  C.kl_buf_poison(tmp, 8, C.kl_poison_word(M.DTYPE[dtype]))
  if C.kl_dtype_size(M.DTYPE[dtype]) == 8 then return tmp[0] end
  return ffi.cast("uint64_t", ffi.cast("uint32_t*", tmp)[0])
end

-- A 64-byte aligned host buffer (uint8_t*) freed by the GC, or nil when out of memory.
function M.host_alloc(bytes)
  local p = C.kl_host_alloc(math.max(bytes, 4))
  if p == nil then return nil end
  return ffi.gc(ffi.cast("uint8_t*", p), C.kl_host_free)
end

-- Raw host memory the caller frees with host_free (a backend's "device" memory).
function M.host_alloc_raw(bytes) return C.kl_host_alloc(bytes) end
function M.host_free(p) C.kl_host_free(p) end

-- Fills n elements of p from a distribution ({kind, a, b} as a task writes it): true, or nil.
function M.fill(p, dtype, n, dist, seed)
  return C.kl_buf_fill(p, M.DTYPE[dtype], n, M.DIST[dist.kind], dist.a, dist.b, seed) == 0 or nil
end

-- The parameters of the same fill drawn on the device (a backend's kloop_fill): the
-- dist's kl_dist code, the integer range's low end and span, and the generator's key
-- (uint64_t cdata); or nil for a bad distribution.
function M.fill_args(dist, seed)
  local lo, span, key = ffi.new("double[1]"), ffi.new("double[1]"), ffi.new("uint64_t[1]")
  local code = M.DIST[dist.kind]
  if not code or C.kl_buf_fill_args(code, dist.a, dist.b, seed, lo, span, key) ~= 0 then return nil end
  return tonumber(code), lo[0], span[0], key[0]
end

-- Repeats a 32-bit word over bytes of p.
function M.poison(p, bytes, word) C.kl_buf_poison(p, bytes, word) end

-- A 64-bit hash of bytes of p (uint64_t cdata).
function M.hash(p, bytes) return C.kl_buf_hash(p, bytes) end

-- n elements of src (dtype) converted into dst (dtype): true, or nil.
function M.convert(src, src_dtype, dst, dst_dtype, n)
  return C.kl_buf_convert(src, M.DTYPE[src_dtype], dst, M.DTYPE[dst_dtype], n) == 0 or nil
end

-- Compares n elements of out with ref: the kl_cmp cdata (counts, first indices, norms,
-- the worst element). atol/rtol bound each element; check_poison counts elements still
-- holding poison (the poison word of out's dtype).
function M.compare(out, out_dtype, ref, ref_dtype, n, atol, rtol, check_poison)
  local cmp = ffi.new("kl_cmp")
  C.kl_buf_compare(out, M.DTYPE[out_dtype], ref, M.DTYPE[ref_dtype], n, atol, rtol,
    check_poison and C.kl_poison_word(M.DTYPE[out_dtype]) or 0, check_poison and 1 or 0, cmp)
  return cmp
end

-- Index of the first element where a and b differ, -1 when bit-identical.
function M.first_diff(a, b, dtype, n) return tonumber(C.kl_buf_first_diff(a, b, M.DTYPE[dtype], n)) end

-- Writes nwords of a guard pattern (from seed) into host memory p.
function M.guard_fill(p, nwords, seed) C.kl_guard_fill(p, nwords, seed) end

-- The first nparts kl_cmp_part of parts (a comparison's blocks, in order) merged into a
-- kl_cmp, as buf.compare's own parts are (kl_cmp_merge): n elements in all.
function M.merge_parts(parts, nparts, n)
  local cmp = ffi.new("kl_cmp")
  C.kl_cmp_merge(parts, nparts, n, cmp)
  return cmp
end

-- dst = src masked with the mask of seed (kl_buf_mask; applying it twice restores src).
function M.mask(dst, src, nwords, seed) C.kl_buf_mask(dst, src, nwords, seed) end

-- The digest of nwords of p, as a region check computes it (uint64_t cdata).
function M.digest(p, nwords, seed) return C.kl_digest(p, nwords, seed) end

-- A list of regions checked in one call: items are {ptr, nwords, seed, mode, word, ...};
-- the ffi descriptors are built once (arr, n) with room for the results (out).
function M.region_list(items)
  local n = #items
  local arr = ffi.new("kl_region[?]", math.max(n, 1))
  for k, r in ipairs(items) do
    local d = arr[k - 1]
    d.ptr, d.nwords, d.seed, d.mode, d.word = r.ptr, r.nwords, r.seed or 0, r.mode, r.word or 0
  end
  return { items = items, arr = arr, n = n, out = ffi.new("kl_region_result[?]", math.max(n, 1)) }
end

-- Checks n regions of host memory into out (the host backend's check).
function M.regions_check(arr, n, out) C.kl_regions_check(arr, n, out) end

return M
