-- kloop.worker.protocol: the verification and timing protocols, written once above the
-- backends. Runs inside a worker process; `be` is a backend module (backend_cuda, ...).
-- Every failure of a candidate is a result table with a verdict, never an error.
local ffi = require("ffi")
local buf = require("kloop.core.buf")
local sys = require("kloop.core.sys")
local stats = require("kloop.eval.stats")
-- (required here, before the sandbox closes the file system: the check function's guards)
local sidecar = require("kloop.eval.sidecar")

local M = {}

local SCALAR_CT = { f32 = "float[1]", f64 = "double[1]", i32 = "int32_t[1]", u32 = "uint32_t[1]",
  i64 = "int64_t[1]", u8 = "uint8_t[1]", i8 = "int8_t[1]" }

-- Host buffers (inputs, references, read-backs) through the core's allocator, freed by
-- the GC when the worker lets go of them.
local host_alloc = buf.host_alloc

local function round4(b) return math.ceil(b / 4) * 4 end

-- Roles (docs/TASKS.md): inputs and inouts are filled from the input sets; outputs and
-- inouts are compared; outputs and scratch buffers are poisoned before every launch
-- (scratch: working memory, never compared, sized per candidate where the point says).
local function filled(a) return a.role == "input" or a.role == "inout" end
local function compared(a) return a.role == "output" or a.role == "inout" end
local function poisoned(a) return a.role == "output" or a.role == "scratch" end

-- The worker's state for one task: inputs, reference outputs and device buffers per case.
local state = nil

-- Every device buffer a candidate can reach (its arguments) and every copy kloop keeps
-- on the device (the input originals) sits inside a larger allocation, with a guard zone
-- on each side: an off-by-one row or a ragged tile lands there instead of in the next
-- allocation. Guards are as large as the buffer, between 64 KiB and 16 MiB a side
-- (docs/TASKS.md, "Guard zones").
local GUARD_MIN, GUARD_MAX = 64 * 1024, 16 * 2^20
local REGION = buf.REGION

local function guard_size(bytes)
  local g = math.min(math.max(bytes, GUARD_MIN), GUARD_MAX)
  return math.ceil(g / 65536) * 65536
end

local function free_state(be)
  if not state then return end
  for _, b in ipairs(state.bufs) do be.free(b.base) end
  state = nil
end

-- A seed for region n of this worker, from the run secret's guard seed (spec.guard_seed).
local function region_seed(n)
  local key = tostring(state.guard_seed) .. "/" .. n
  return sys.hash64(key, 0x67756172ULL)
end

-- Allocates `bytes` (rounded up to words) between two guard zones; what names it in
-- verdicts. Returns the buffer record ({ptr, bytes, guards, ...}) or nil, msg, fatal.
local function alloc_guarded(be, bytes, what)
  local used = round4(math.max(bytes, 4))
  if state.spec.guards == false then
    -- a sanitizer run (kloop.eval.sanitize): the exact size and no guard zones, so an
    -- overrun by one element leaves the allocation and the sanitizer sees it
    local base, msg, fatal = be.alloc(used)
    if not base then return nil, msg, fatal end
    local b = { base = base, ptr = base, bytes = bytes, used = used, what = what, guards = {} }
    state.bufs[#state.bufs + 1] = b
    return b
  end
  local g = guard_size(bytes)
  local total = 2 * g + math.ceil(used / 256) * 256
  local base, msg, fatal = be.alloc(total)
  if not base then return nil, msg, fatal end
  local b = { base = base, ptr = base + g, bytes = bytes, used = used, what = what }
  local n = #state.bufs + 1
  state.bufs[n] = b
  b.guards = {
    { ptr = base, nwords = g / 4, mode = REGION.guard, seed = region_seed(2 * n), side = "before", buf = b },
    { ptr = base + g + used, nwords = (total - g - used) / 4, mode = REGION.guard, seed = region_seed(2 * n + 1),
      side = "after", buf = b },
  }
  return b
end

-- Writes a buffer's guard patterns (at setup, and to restore them after a trip).
local function fill_guards(be, b)
  -- (on the device where the backend can: nothing copied from the host)
  local on_dev = be.fill_guard_ready and be.fill_guard_ready()
  for _, r in ipairs(b.guards) do
    local ok, msg, fatal
    if on_dev then
      ok, msg, fatal = be.fill_guard(r.ptr, r.nwords, r.seed)
    else
      buf.guard_fill(state.guard_tmp, r.nwords, r.seed)
      ok, msg, fatal = be.h2d(r.ptr, state.guard_tmp, r.nwords * 4)
    end
    if not ok then return nil, msg, fatal end
  end
  return true
end

-- A list of regions checked in one backend call: ffi descriptors built once (the
-- backend copies them to the device right before each check).
local region_list = buf.region_list

local function verdict(v, reason, evidence)
  return { verdict = v, reason = reason, evidence = evidence or {} }
end

-- The parameter array holds raw pointers to its slots, which the GC cannot see:
-- the slots stay alive exactly as long as the array does.
local anchors = setmetatable({}, { __mode = "k" })

-- Builds the kernel parameter array for a case from the live device buffers; with
-- cand, the candidate's own scratch buffers and scalar values where its point differs
-- from the reference's (req.args: load_candidate).
local function build_params(spec, case, out_ptrs, cand)
  local n = #spec.args
  local params = ffi.new("void*[?]", math.max(n, 1))
  local keep = {}
  local own = cand and cand.own and cand.own[case.label] or {}
  for i, a in ipairs(spec.args) do
    local slot
    if a.pointer then
      local ptr = (out_ptrs and out_ptrs[i]) or (own[i] and own[i].buf and own[i].buf.ptr) or case.dev[i]
      slot = ffi.new("uint64_t[1]", ptr)
    else
      local v = own[i] and own[i].value
      if v == nil then v = case.args[i].value end
      slot = ffi.new(SCALAR_CT[a.dtype], v)
    end
    keep[i] = slot
    params[i - 1] = slot
  end
  anchors[params] = keep
  return params
end

-- Launches a plan (list of {fn, grid, block, smem}); returns true or nil, msg, fatal.
local function launch_plan(be, kernels, params)
  for k, kern in ipairs(kernels) do
    local ok, msg, fatal = be.launch(kern.fn, kern.grid, kern.block, kern.smem, params)
    if not ok then return nil, (#kernels > 1 and ("kernel " .. k .. ": ") or "") .. msg, fatal end
  end
  return true
end

-- The candidates whose modules are loaded now (state.live; pruned at the next load).
-- Their symbols get each input set's values and their own scratch buffers the poison
-- alongside the case's buffers, so a launch of any of them (an A/B interleaves two)
-- finds what it needs, whichever was loaded last.
local function live_cands()
  local out = {}
  for cand in pairs(state.live) do
    if cand.mod and cand.mod.ptr ~= nil and not cand.released then out[#out + 1] = cand end
  end
  return out
end

-- Copies set s's symbol values into each symbol of the given resolution ({ptr, bytes}).
local function load_symbols(be, syms, set)
  for k, sy in ipairs(syms or {}) do
    local ok, msg, fatal = be.h2d(sy.ptr, set.symbols[k], sy.bytes)
    if not ok then return nil, "symbol " .. state.spec.symbols[k].name .. ": " .. tostring(msg), fatal end
  end
  return true
end

-- Copies set `s` of a case's inputs into the live buffers (inputs and inouts), and its
-- symbol values into every loaded candidate's module (docs/TASKS.md, "Symbols").
local function load_inputs(be, spec, case, s)
  local set = case.sets[s]
  for i, a in ipairs(spec.args) do
    if a.pointer and filled(a) then
      local ok, msg, fatal = be.d2d(case.dev[i], set.dev_inputs[i], round4(case.bytes[i]))
      if not ok then return nil, msg, fatal end
    end
  end
  if #(spec.symbols or {}) > 0 then
    for _, cand in ipairs(live_cands()) do
      -- (each case's own module where sizes are compiled in)
      local ok, msg, fatal = load_symbols(be, cand.cases[case.label].syms, set)
      if not ok then return nil, msg, fatal end
    end
  end
  return true
end

local function poison_outputs(be, spec, case)
  for i, a in ipairs(spec.args) do
    if a.pointer and poisoned(a) then
      local ok, msg, fatal = be.fill32(case.dev[i], buf.poison_word(a.dtype), round4(case.bytes[i]) / 4)
      if not ok then return nil, msg, fatal end
    end
  end
  for _, cand in ipairs(live_cands()) do
    for i, o in pairs(cand.own and cand.own[case.label] or {}) do
      if o.buf then
        local ok, msg, fatal = be.fill32(o.buf.ptr, buf.poison_word(spec.args[i].dtype), o.buf.used / 4)
        if not ok then return nil, msg, fatal end
      end
    end
  end
  return true
end

-- Resolves the task's symbols in a loaded module: a list of {ptr, bytes}, or nil, why,
-- fatal. A missing symbol or one of another size than the task declares is refused.
local function resolve_symbols(be, mod, spec)
  local out = {}
  for k, sy in ipairs(spec.symbols or {}) do
    if not be.symbol then return nil, "this backend cannot fill symbols" end
    local ptr, bytes, fatal = be.symbol(mod, sy.name)
    if not ptr then return nil, tostring(bytes), fatal end
    local want = sy.count * buf.dtype_size(sy.dtype)
    if bytes ~= want then
      return nil, string.format("symbol '%s' is %d bytes in the module, the task declares %d elements of %s (%d bytes) (symbols[%d])",
        sy.name, bytes, sy.count, sy.dtype, want, k)
    end
    out[k] = { ptr = ptr, bytes = bytes }
  end
  return out
end

-- A region list of items followed by the case's output digests (first_out: how many
-- come before them).
local function with_outputs(items, case)
  local with = {}
  for _, r in ipairs(items) do with[#with + 1] = r end
  for _, r in ipairs(case.out_regions.items) do with[#with + 1] = r end
  local list = region_list(with)
  list.first_out = #items
  return list
end

-- What is checked after each launch of a case: the guards of its buffers and of the
-- live candidates' own scratch buffers, and its inputs' digests (rebuilt when a
-- candidate brings or drops buffers of its own).
local function build_case_regions(spec, case)
  local items, guards = {}, {}
  for i, a in ipairs(spec.args) do
    local b = case.bufs[i]
    if b then
      for _, g in ipairs(b.guards) do items[#items + 1], guards[#guards + 1] = g, g end -- (none with guards = false)
      if a.role == "input" then
        items[#items + 1] = { ptr = b.ptr, nwords = b.used / 4, mode = REGION.digest, seed = state.dseed, input = i, buf = b }
      end
    end
  end
  for _, cand in ipairs(state.live and live_cands() or {}) do
    for _, o in pairs(cand.own and cand.own[case.label] or {}) do
      for _, g in ipairs(o.buf and o.buf.guards or {}) do items[#items + 1], guards[#guards + 1] = g, g end
    end
  end
  case.guard_regions = region_list(guards)
  case.launch_regions = region_list(items)
  -- the same, followed by the outputs' digests: one launch of the check kernel reads both
  -- (check_launch's with_digests)
  case.guard_out_regions = with_outputs(guards, case)
  case.launch_out_regions = with_outputs(items, case)
end

-- Outputs of at least this many elements are compared on the device where the backend
-- can (be.compare_device): the reference stays there, masked (kl_buf_mask with a seed
-- of the run secret), guarded, and checked with kloop's state after every candidate.
M.DEVICE_COMPARE_MIN = 65536
local DEVICE_DTYPES = { f32 = true, f64 = true }

local function device_compare_on(be)
  return be.compare_device ~= nil and be.device_compare_ready ~= nil and be.device_compare_ready()
end

-- Whether reference r (of arg a) is compared on the device (kept there, masked).
local function device_kept(be, a, r)
  return not state.check and device_compare_on(be) and DEVICE_DTYPES[a.dtype] and DEVICE_DTYPES[r.dtype]
    and (r.count or 0) >= M.DEVICE_COMPARE_MIN
end

-- The digest (state.dseed) of a device buffer's words, computed by the device: at
-- setup, before any candidate ran, the device's own account is the truth.
-- Input i of an input set on the host (the truth restored and checked against where the
-- device cannot draw it): drawn at setup on a backend that cannot draw on the device,
-- else drawn here the first time something needs it (a check function, the first
-- changed element of an input a kernel modified). The same bits either way
-- (kl_buf_fill, kloop_fill). Returns the buffer, or nil, msg.
local function host_input(set, i)
  local h = set.host_inputs[i]
  if h then return h end
  local f = set.fills and set.fills[i]
  if not f then return nil, "no input " .. tostring(i) .. " in this set" end
  h = host_alloc(f.used)
  if not h then return nil, "out of host memory for inputs" end
  ffi.fill(h + f.bytes, f.used - f.bytes)
  if not buf.fill(h, f.dtype, f.count, f.dist, f.seed) then return nil, "cannot fill " .. f.name end
  -- drawn after a device draw: the bits must be the ones the device holds (its digest)
  if set.digests[i] and buf.digest(h, f.used / 4, state.dseed) ~= set.digests[i] then
    return nil, string.format("the host's draw of %s differs from the device's (kloop_fill and kl_buf_fill disagree)",
      f.name)
  end
  set.host_inputs[i] = h
  return h
end

-- Draws input i of a set into its device copy b where it is (be.fill_input): nothing
-- is drawn on the host or copied. Returns true, or nil, msg, fatal.
local function fill_on_device(be, set, i, b)
  local f = set.fills[i]
  return be.fill_input(b.ptr, f.dtype, f.count, f.used, f.dist, f.seed)
end

local function device_digest(be, ptr, nwords)
  local list = region_list({ { ptr = ptr, nwords = nwords, mode = REGION.digest, seed = state.dseed } })
  local ok, msg = be.check_regions(list.arr, list.n, list.out)
  if not ok then return nil, "state check: " .. tostring(msg) end
  return list.out[0].value
end

-- Masks reference r (of arg a, case cs, set s), computed in ref_ptr on the device, where
-- it is (be.mask_device): the plain reference never comes back to the host. A second
-- masked copy, guarded and digest-checked like the first, is what restore_state puts
-- back after a candidate damaged the first. Returns true when kept on the device (r.dev_buf,
-- r.backup, r.dev_digest, r.mask_seed set), false where there is no room (the host path
-- then), or nil, msg.
local function mask_on_device(be, a, cs, s, r, ref_ptr)
  local used = round4(r.bytes)
  local key = region_seed(string.format("mask/%s/%d/%s", cs.label, s, a.name))
  local nb = #state.bufs
  local function undo()
    for k = #state.bufs, nb + 1, -1 do be.free(state.bufs[k].base) state.bufs[k] = nil end
  end
  local b = alloc_guarded(be, r.bytes, string.format("kloop's reference of %s (%s, set %d)", a.name, cs.label, s))
  local bk = b and alloc_guarded(be, r.bytes, string.format("kloop's second copy of the reference of %s (%s, set %d)",
    a.name, cs.label, s))
  if not bk then undo() return false end -- (the device is full: compared on the host)
  local ok, msg = fill_guards(be, b)
  if ok then ok, msg = fill_guards(be, bk) end
  if ok then ok, msg = be.mask_device(b.ptr, ref_ptr, used / 4, key) end
  if ok then ok, msg = be.d2d(bk.ptr, b.ptr, used) end
  local digest
  if ok then digest, msg = device_digest(be, b.ptr, used / 4) end
  if not digest then undo() return nil, tostring(msg) end
  r.dev_buf, r.backup, r.mask_seed, r.dev_digest = b, bk, key, digest
  return true
end

-- Keeps reference r (of arg a, case cs, set s) on the device when it is compared there.
local function keep_on_device(be, a, cs, s, r)
  if not device_kept(be, a, r) then return true end
  local used = round4(r.bytes)
  local masked = host_alloc(used)
  if not masked then return true end -- (no room for the masked copy: compared on the host)
  ffi.fill(masked, used)
  -- a key of its own per reference: two masked references XORed give nothing away
  local key = region_seed(string.format("mask/%s/%d/%s", cs.label, s, a.name))
  buf.mask(masked, r.host, r.bytes / 4, key)
  local nb = #state.bufs
  local b = alloc_guarded(be, r.bytes, string.format("kloop's reference of %s (%s, set %d)", a.name, cs.label, s))
  if not b then return true end -- (the device is full: this one is compared on the host)
  local ok, e2 = fill_guards(be, b)
  if ok then ok, e2 = be.h2d(b.ptr, masked, used) end
  if not ok then
    be.free(b.base)
    state.bufs[nb + 1] = nil
    return nil, e2
  end
  r.dev_buf, r.masked, r.mask_seed = b, masked, key
  r.dev_digest = buf.digest(masked, used / 4, state.dseed)
  return true
end

-- The distinct modules of a table of {mod = ...} records (several labels may share one).
local function distinct_mods(list)
  local out, seen = {}, {}
  for _, r in pairs(list or {}) do
    if r.mod and not seen[r.mod] then seen[r.mod] = true out[#out + 1] = r.mod end
  end
  return out
end

local function unload_reference(be, refs)
  for _, mod in ipairs(distinct_mods(refs)) do be.unload(mod) end
end

-- Loads the reference for every case: ref_cubin is one binary (a path) or, with sizes
-- compiled in, {label -> path}. Returns {label -> {mod, fn, syms}} (cases sharing a
-- binary share its module), or nil, msg (what was loaded is unloaded).
local function load_reference(be, spec, ref_cubin)
  local refs, by_path = {}, {}
  for _, cs in ipairs(spec.cases) do
    local path = type(ref_cubin) == "table" and ref_cubin[cs.label] or ref_cubin
    local function fail(m) unload_reference(be, refs) return nil, (type(ref_cubin) == "table" and (cs.label .. ": ") or "") .. m end
    if type(path) ~= "string" then return fail("no reference binary for " .. cs.label) end
    local r = by_path[path]
    if not r then
      local mod, msg = be.load(path)
      if not mod then return fail(tostring(msg)) end
      r = { mod = mod }
      refs[cs.label], by_path[path] = r, r
      r.fn, msg = be.func(mod, spec.reference.entry)
      if not r.fn then return fail(tostring(msg)) end
      r.syms, msg = resolve_symbols(be, mod, spec)
      if not r.syms then return fail(tostring(msg)) end
    end
    refs[cs.label] = r
  end
  return refs
end

-- Sets up the task: fresh inputs from the run secret, reference outputs in higher
-- precision, guarded device buffers, and the digests of every input (host truth that
-- the device copies are checked against). spec is the concrete task (see kloop.eval).
function M.setup(be, spec, ref_cubin)
  free_state(be)
  local t0 = sys.now()
  if be.set_signature then be.set_signature(spec.args) end
  local check_fn, cerr = M.compile_check(spec.check)
  if cerr then return nil, cerr end
  local no_ref = spec.reference.none
  -- the reference's module of each case: one binary, or (sizes compiled in) one per case
  local refs, msg = {}
  if not no_ref then
    local rerr
    refs, rerr = load_reference(be, spec, ref_cubin)
    if not refs then return nil, "reference: " .. rerr end
  end
  state = { spec = spec, cases = {}, bufs = {}, guard_seed = spec.guard_seed or 0, check = check_fn, live = {} }
  state.dseed = region_seed(0)
  state.oseed = region_seed(-1)
  -- a poisoned element's bits per dtype, for the comparison on the device (built once)
  state.poison_pattern = setmetatable({}, { __index = function(t, dtype)
    t[dtype] = buf.poison_pattern(dtype)
    return t[dtype]
  end })
  if spec.guards ~= false then -- (without guard zones there is no pattern to write)
    state.guard_tmp = host_alloc(GUARD_MAX + 256)
    if not state.guard_tmp then free_state(be) return nil, "out of host memory for guard patterns" end
  end
  local function fail(m) unload_reference(be, refs) free_state(be) return nil, m end
  local ref_dtype = spec.reference.precision
  -- inputs drawn on the device where the backend can (kloop_fill, kl_buf_fill's bits):
  -- no host fill, no copy; the host copy is drawn only if something needs it
  local draw_on_device = be.fill_input_ready and be.fill_input_ready() or false
  for ci, cs in ipairs(spec.cases) do
    local case = { label = cs.label, bench = cs.bench, args = cs.args, bytes = {}, dev = {}, bufs = {}, sets = {},
      size = cs.size }
    state.cases[ci] = case
    for i, a in ipairs(spec.args) do
      if a.pointer then
        local count = cs.args[i].count
        case.bytes[i] = count * buf.dtype_size(a.dtype)
        local b, err = alloc_guarded(be, case.bytes[i], string.format("%s (%s)", a.name, cs.label))
        if not b then return fail(string.format("%s: allocating %s: %s", cs.label, a.name, err)) end
        local ok, e2 = fill_guards(be, b)
        if not ok then return fail(e2) end
        case.dev[i], case.bufs[i] = b.ptr, b
      end
    end
    for s = 1, spec.nsets do
      local set = { host_inputs = {}, digests = {}, dev_inputs = {}, bufs = {}, refs = {}, ref_rms = {},
        symbols = {}, fills = {}, on_device = {} }
      case.sets[s] = set
      -- the symbols' values of this set (seeds after the arguments'), for candidate and reference alike
      for k, sy in ipairs(spec.symbols or {}) do
        local h = host_alloc(round4(sy.count * buf.dtype_size(sy.dtype)))
        if not h or not buf.fill(h, sy.dtype, sy.count, sy.dists[(s - 1) % #sy.dists + 1], cs.seeds[s][#spec.args + k]) then
          return fail("cannot fill symbol " .. sy.name)
        end
        set.symbols[k] = h
      end
      for i, a in ipairs(spec.args) do
        if a.pointer and filled(a) then
          local used = round4(math.max(case.bytes[i], 4))
          set.fills[i] = { name = a.name, dtype = a.dtype, count = cs.args[i].count, used = used,
            bytes = case.bytes[i], dist = a.dists[(s - 1) % #a.dists + 1], seed = cs.seeds[s][i] }
          local b, err = alloc_guarded(be, case.bytes[i], string.format("kloop's copy of input %s (%s, set %d)",
            a.name, cs.label, s))
          if not b then return fail("allocating input copies: " .. err) end
          local ok, e2 = fill_guards(be, b)
          if ok and draw_on_device then
            -- drawn where it is kept, and its digest taken there
            ok, e2 = fill_on_device(be, set, i, b)
            if ok then
              set.digests[i], e2 = device_digest(be, b.ptr, used / 4)
              ok = set.digests[i] ~= nil
            end
            set.on_device[i] = true
          elseif ok then
            local h, he = host_input(set, i)
            if not h then return fail(he) end
            set.digests[i] = buf.digest(h, used / 4, state.dseed)
            ok, e2 = be.h2d(b.ptr, h, used)
          end
          if not ok then return fail(e2) end
          set.dev_inputs[i], set.bufs[i] = b.ptr, b
        end
      end
      -- The reference writes its own (higher precision) output buffers.
      local ok, err = true, nil
      local ref = refs[cs.label]
      if not no_ref then ok, err = load_inputs(be, spec, case, s) end
      if ok and not no_ref then ok, err = load_symbols(be, ref.syms, set) end
      if not ok then return fail(err) end
      local ref_out = {}
      for i, a in ipairs(no_ref and {} or spec.args) do
        if a.pointer and a.role == "scratch" then
          -- the reference's own working memory, in its type or the task's: never read back
          local bytes = cs.args[i].count * math.max(buf.dtype_size(ref_dtype), buf.dtype_size(a.dtype))
          ref_out[i] = assert(be.alloc(round4(math.max(bytes, 4))))
        elseif a.pointer and a.role ~= "input" then
          local bytes = cs.args[i].count * buf.dtype_size(ref_dtype)
          ref_out[i] = assert(be.alloc(round4(bytes)))
          set.refs[i] = { bytes = bytes }
          if a.role == "inout" and set.on_device[i] then
            -- the reference starts from the same initial values as the candidate (a
            -- stencil's halo it never writes), in its own precision: drawn on the device
            -- through the task's type, as the conversion below gives them
            local f = set.fills[i]
            local okh, eh = be.fill_input(ref_out[i], ref_dtype, f.count, bytes, f.dist, f.seed,
              ref_dtype ~= a.dtype and a.dtype or nil)
            if not okh then return fail(eh) end
          elseif a.role == "inout" then
            local h, he = host_input(set, i)
            if not h then return fail(he) end
            if ref_dtype ~= a.dtype then
              local conv = host_alloc(bytes)
              if not conv or not buf.convert(h, a.dtype, conv, ref_dtype, cs.args[i].count) then
                return fail(string.format("cannot convert %s's initial values to the reference's %s", a.name, ref_dtype))
              end
              h = conv
            end
            local okh, eh = be.h2d(ref_out[i], h, bytes)
            if not okh then return fail(eh) end
          end
        end
      end
      local params = build_params(spec, case, ref_out)
      local kernels = {}
      for k, p in ipairs(no_ref and {} or cs.ref_plan) do
        -- (a reference plan of several kernels names each: a two-stage reduction's)
        local fn = ref.fn
        if p.entry and p.entry ~= spec.reference.entry then
          fn, msg = be.func(ref.mod, p.entry)
          if not fn then return fail("reference: " .. tostring(msg)) end
        end
        kernels[k] = { fn = fn, grid = p.grid, block = p.block, smem = p.smem }
        be.prepare_launch(fn, p.smem)
      end
      if not no_ref then ok, err = launch_plan(be, kernels, params) end
      if ok and not no_ref then ok, err = be.sync() end
      for i, a in ipairs(spec.args) do
        if a.role == "scratch" and ref_out[i] then be.free(ref_out[i]) end
      end
      if not ok then return fail("reference failed on " .. cs.label .. ": " .. err) end
      for i, r in pairs(set.refs) do
        r.dtype = ref_dtype
        r.count = cs.args[i].count
        local cmp, on_dev
        if be.mask_device_ready and be.mask_device_ready() and device_kept(be, spec.args[i], r) then
          on_dev, err = mask_on_device(be, spec.args[i], cs, s, r, ref_out[i])
          if on_dev == nil then be.free(ref_out[i]) return fail(err) end
        end
        if on_dev then
          -- rms (and NaN/Inf) of the reference: the device's comparison of it with itself
          local m2
          cmp, m2 = be.compare_device(ref_out[i], ref_dtype, r.dev_buf.ptr, ref_dtype, r.count, 0, 0,
            state.poison_pattern[ref_dtype], false, r.mask_seed)
          be.free(ref_out[i])
          if not cmp then return fail("the reference's norm on the device: " .. tostring(m2)) end
        else
          local h = host_alloc(r.bytes)
          ok, err = be.d2h(h, ref_out[i], r.bytes)
          be.free(ref_out[i])
          if not ok then return fail(err) end
          r.host = h
          -- rms of the reference, for the scale of the per-element bound
          cmp = buf.compare(h, ref_dtype, h, ref_dtype, r.count, 0, 0, false)
        end
        set.ref_rms[i] = cmp.ref_norm / math.sqrt(math.max(1, cs.args[i].count))
        if cmp.n_nonfinite > 0 then
          return fail(string.format("the reference wrote NaN/Inf on %s (element %d)", cs.label, tonumber(cmp.first_nonfinite)))
        end
        if not on_dev then
          local okd, derr = keep_on_device(be, spec.args[i], cs, s, r)
          if not okd then return fail(derr) end
        end
      end
    end
  end
  unload_reference(be, refs)
  -- host scratch for read-backs: the largest output of any case, twice (determinism);
  -- with a check, one per output (the check sees every output at once)
  local maxb, outb = 4, {}
  for _, case in ipairs(state.cases) do
    for i, a in ipairs(spec.args) do
      if a.pointer then maxb = math.max(maxb, round4(case.bytes[i])) end
      if a.pointer and compared(a) then outb[i] = math.max(outb[i] or 4, round4(case.bytes[i])) end
    end
  end
  state.scratch = { host_alloc(maxb), host_alloc(maxb) }
  if check_fn then
    state.check_out = {}
    for i, b in pairs(outb) do
      state.check_out[i] = host_alloc(b)
      if not state.check_out[i] then return fail("out of host memory for the check's copies") end
    end
  end
  -- What is checked after each launch of a case (its guards and its live inputs), and
  -- after each candidate (every guard, every input original, the backend's own state).
  local all = {}
  for _, case in ipairs(state.cases) do
    -- the outputs' digests (kloop's region check, keyed by a seed of the run secret): a
    -- repeat or timed launch whose outputs hash like the verified ones is bit-identical
    local outs = {}
    for i, a in ipairs(spec.args) do
      if a.pointer and compared(a) then
        outs[#outs + 1] = { ptr = case.dev[i], nwords = round4(math.max(case.bytes[i], 4)) / 4, mode = REGION.digest,
          seed = state.oseed }
      end
    end
    case.out_regions = region_list(outs)
    build_case_regions(spec, case)
    for _, r in ipairs(case.guard_regions.items) do all[#all + 1] = r end
    for _, set in ipairs(case.sets) do
      for i, b in pairs(set.bufs) do
        for _, g in ipairs(b.guards) do all[#all + 1] = g end
        all[#all + 1] = { ptr = b.ptr, nwords = b.used / 4, mode = REGION.digest, seed = state.dseed,
          expect = set.digests[i], buf = b, original = true }
      end
      for _, r in pairs(set.refs) do
        for _, b in ipairs({ r.dev_buf, r.backup }) do
          for _, g in ipairs(b.guards) do all[#all + 1] = g end
          all[#all + 1] = { ptr = b.ptr, nwords = b.used / 4, mode = REGION.digest, seed = state.dseed,
            expect = r.dev_digest, buf = b, original = true }
        end
      end
    end
  end
  for _, r in ipairs(be.state_regions and be.state_regions() or {}) do all[#all + 1] = r end
  state.all_regions = region_list(all)
  local bad = M.check_state(be)
  if bad then return fail("the worker's state does not check out right after setup: " .. bad.reason) end
  local guard_bytes = 0
  for _, b in ipairs(state.bufs) do
    for _, g in ipairs(b.guards) do guard_bytes = guard_bytes + 4 * g.nwords end
  end
  return { seconds = sys.now() - t0, cases = #state.cases, sets = spec.nsets, guard_bytes = guard_bytes,
    guards = spec.guards ~= false }
end

-- Runs a region list through the backend; returns the results array or nil, verdict, fatal.
-- beside (optional): host work the backend runs while the check runs on the GPU (a
-- backend that checks on the host runs it after; one that ignores it leaves the next
-- repetition's reload whole, time_interleaved)
local function run_regions(be, list, beside)
  local ok, msg, fatal = be.check_regions(list.arr, list.n, list.out, beside)
  if not ok then return nil, verdict(fatal and "crashed" or "launch_error", "state check: " .. tostring(msg)), fatal end
  return list.out
end

-- The out_of_bounds verdict for a tripped guard: which buffer, which side, where, how many.
local function guard_verdict(r, res, phase)
  local b = r.buf
  local count, first = tonumber(res.value), tonumber(0xFFFFFFFFFFFFFFFFULL - res.first)
  local offset = r.side == "after" and (b.used + 4 * first) or -(4 * (r.nwords - first))
  local ev = { buffer = b.what, side = r.side, offset = offset, count = count, phase = phase }
  local where = r.side == "after" and string.format("%d bytes past the end", offset - b.bytes)
    or string.format("%d bytes before the start", -offset)
  return verdict("out_of_bounds", string.format(
    "the kernel wrote outside its buffers: %d words changed in the guard zone %s %s%s, the first %s",
    count, r.side, b.what, phase and (" (" .. phase .. ")") or "", where), ev)
end

-- Guards of the buffers a launch on `case` could reach, and (when s is given) its live
-- inputs against the digest of input set s. Returns nil when intact, or a verdict, fatal.
-- with_digests: the outputs' digests are read in the same launch of the check kernel
-- (then returned third, a list of uint64 cdata, when the launch's regions check out).
-- beside: as run_regions's.
local function check_launch(be, spec, case, s, phase, with_digests, beside)
  local list
  if with_digests then list = s and case.launch_out_regions or case.guard_out_regions
  else list = s and case.launch_regions or case.guard_regions end
  local out, v, fatal = run_regions(be, list, beside)
  if not out then return v, fatal end
  local nlaunch = list.first_out or list.n
  for k = 1, nlaunch do
    local r, res = list.items[k], out[k - 1]
    if r.mode == REGION.guard and res.value ~= 0 then
      state.tripped = true
      return guard_verdict(r, res, phase)
    elseif r.input and res.value ~= case.sets[s].digests[r.input] then
      -- a changed original (a far write in an earlier launch) is not this input's fault
      local bad = M.check_state(be)
      if bad then return bad end
      local i = r.input
      local a = spec.args[i]
      local host = state.scratch[2]
      local ok, msg, f2 = be.d2h(host, case.dev[i], case.bytes[i])
      if not ok then return verdict(f2 and "crashed" or "launch_error", msg), f2 end
      local truth, terr = host_input(case.sets[s], i)
      if not truth then return verdict("launch_error", terr) end
      local idx = buf.first_diff(host, truth, a.dtype, case.args[i].count)
      return verdict("inputs_modified", string.format("input %s was changed by the kernel (%s, first at element %d)",
        a.name, case.label, idx), { case = case.label, arg = a.name, index = idx })
    end
  end
  if not with_digests then return nil end
  local d = {}
  for k = nlaunch + 1, list.n do d[#d + 1] = out[k - 1].value end
  return nil, nil, d
end

-- Checks everything the worker keeps on the device against host truth: every guard zone,
-- every input original, the backend's own buffers (the L2 flush scratch). Returns nil
-- when intact, or an out_of_bounds verdict naming the first thing found changed.
function M.check_state(be)
  if not state then return nil end
  local list = state.all_regions
  local out, v = run_regions(be, list)
  if not out then return v end
  for k, r in ipairs(list.items) do
    local res = out[k - 1]
    if r.mode == REGION.guard and res.value ~= 0 then
      state.tripped = true
      return guard_verdict(r, res, "state check after the candidate")
    elseif r.mode == REGION.digest and res.value ~= r.expect then
      state.tripped = true
      return verdict("out_of_bounds", string.format("the kernel wrote outside its buffers: %s was changed", r.buf.what),
        { buffer = r.buf.what, phase = "state check after the candidate" })
    elseif r.mode == REGION.const and res.value ~= 0 then
      state.tripped = true
      return verdict("out_of_bounds", string.format("the kernel wrote outside its buffers: %s was changed (%d words)",
        r.what or "kloop's scratch", tonumber(res.value)), { buffer = r.what, count = tonumber(res.value),
        phase = "state check after the candidate" })
    end
  end
  return nil
end

-- Puts every guard, input original and backend buffer back from host truth, then checks
-- again. Returns true, or nil, why (the worker must then be restarted).
function M.restore_state(be)
  for _, b in ipairs(state.bufs) do
    local ok, msg = fill_guards(be, b)
    if not ok then return nil, msg end
  end
  for _, case in ipairs(state.cases) do
    for _, set in ipairs(case.sets) do
      for i, b in pairs(set.bufs) do
        local ok, msg
        if set.on_device[i] then
          ok, msg = fill_on_device(be, set, i, b) -- (drawn again: the same bits)
        else
          ok, msg = be.h2d(b.ptr, set.host_inputs[i], b.used)
        end
        if not ok then return nil, msg end
      end
      for _, r in pairs(set.refs) do
        -- (masked on the device: the copy whose digest is intact is copied over the
        -- other; with neither intact the check below fails, and the worker restarts)
        if r.backup then
          local nw = r.dev_buf.used / 4
          local dp, e1 = device_digest(be, r.dev_buf.ptr, nw)
          local db, e2 = device_digest(be, r.backup.ptr, nw)
          if not (dp and db) then return nil, tostring(e1 or e2) end
          local ok, msg = true, nil
          if dp ~= r.dev_digest and db == r.dev_digest then
            ok, msg = be.d2d(r.dev_buf.ptr, r.backup.ptr, r.dev_buf.used)
          elseif db ~= r.dev_digest and dp == r.dev_digest then
            ok, msg = be.d2d(r.backup.ptr, r.dev_buf.ptr, r.dev_buf.used)
          end
          if not ok then return nil, msg end
        elseif r.dev_buf then
          local ok, msg = be.h2d(r.dev_buf.ptr, r.masked, r.dev_buf.used)
          if not ok then return nil, msg end
        end
      end
    end
  end
  if be.restore_state then
    local ok, msg = be.restore_state()
    if not ok then return nil, msg end
  end
  local bad = M.check_state(be)
  if bad then return nil, bad.reason end
  state.tripped = false
  return true
end

-- After every candidate request: the whole state is checked; a change found is this
-- candidate's verdict (out_of_bounds, whatever it got before), and the state is restored
-- from host truth or, where that fails, the worker restarts (result.restart).
local function after_candidate(be, result)
  if result.fatal or not state then return result end
  -- how many output comparisons ran on the device for this candidate (kept on the result)
  if (state.device_compares or 0) > 0 then result.device_compares = state.device_compares end
  state.device_compares = 0
  local bad = M.check_state(be)
  if bad or state.tripped then
    if bad then
      if result.verdict ~= "out_of_bounds" then
        bad.evidence.prior_verdict = result.verdict
        -- (the stage it reached stays: a cascade's reply says it itself)
        local keep = { resources = true, eval_seconds = true, stage = true, screen = true, screen_case = true }
        for k in pairs(result) do if not keep[k] then result[k] = nil end end
        result.verdict, result.reason, result.evidence = bad.verdict, bad.reason, bad.evidence
      end
    end
    local ok, why = M.restore_state(be)
    if not ok then
      result.restart = true
      result.restart_reason = "the worker's state could not be restored: " .. tostring(why)
    end
  end
  return result
end

-- Compares the live outputs of a case with the reference of set s.
-- Returns nil when right, or a verdict table.
local function check_outputs(be, spec, case, s, phase)
  local set = case.sets[s]
  local tol = spec.tolerance
  for i, a in ipairs(spec.args) do
    if a.pointer and compared(a) then
      local count = case.args[i].count
      local rms = set.ref_rms[i] or 0
      local max_abs = tol.max_abs or (64 * tol.rel * math.max(rms, 1e-30))
      local ref = set.refs[i]
      local cmp
      if ref and ref.dev_buf and device_compare_on(be) then
        -- on the device, against the masked reference: nothing read back
        local m2, f2
        cmp, m2, f2 = be.compare_device(case.dev[i], a.dtype, ref.dev_buf.ptr, ref.dtype, count, max_abs, 64 * tol.rel,
          state.poison_pattern[a.dtype], true, ref.mask_seed)
        state.device_compares = (state.device_compares or 0) + 1
        if not cmp then return verdict(f2 and "crashed" or "launch_error", "comparison on the device: " .. tostring(m2)), f2 end
      else
        local host = state.check_out and state.check_out[i] or state.scratch[1]
        local ok, msg, fatal = be.d2h(host, case.dev[i], case.bytes[i])
        if not ok then return verdict(fatal and "crashed" or "launch_error", msg), fatal end
        -- no reference (a check in its place): the outputs against themselves, for the
        -- unwritten elements only; the check judges the values
        ref = ref or { host = host, dtype = a.dtype }
        cmp = buf.compare(host, a.dtype, ref.host, ref.dtype, count, max_abs, 64 * tol.rel, true)
      end
      local rel = cmp.ref_norm > 0 and cmp.err_norm / cmp.ref_norm or cmp.err_norm
      -- the words of a verdict are built only when there is one
      if cmp.n_unwritten > 0 or cmp.n_nonfinite > 0 or rel > tol.rel or cmp.n_bad > 0 then
        local where = string.format("%s (%s, input set %d%s)", a.name, case.label, s, phase and (", " .. phase) or "")
        local ev = { case = case.label, set = s, arg = a.name, phase = phase, size = case.size }
        if cmp.n_unwritten > 0 then
          ev.index, ev.count = tonumber(cmp.first_unwritten), tonumber(cmp.n_unwritten)
          return verdict("unwritten", string.format("%d of %d elements of %s were never written (first at %d)",
            ev.count, count, where, ev.index), ev)
        end
        if cmp.n_nonfinite > 0 then
          ev.index, ev.count = tonumber(cmp.first_nonfinite), tonumber(cmp.n_nonfinite)
          return verdict("nan", string.format("%d NaN/Inf elements in %s where the reference is finite (first at %d)",
            ev.count, where, ev.index), ev)
        end
        ev.rel_err, ev.max_abs_err = rel, cmp.max_abs_err
        ev.index, ev.out, ev.ref = tonumber(cmp.worst_index), cmp.worst_out, cmp.worst_ref
        ev.bad = tonumber(cmp.n_bad)
        return verdict("wrong", string.format("%s: relative error %.3g (limit %.3g), %d elements off; worst at %d: %.9g vs %.9g",
          where, rel, tol.rel, ev.bad, ev.index, ev.out, ev.ref), ev)
      end
      case.last_err = math.max(case.last_err or 0, rel)
    end
  end
  if state.check then return M.run_check(spec, case, s, phase) end
  return nil
end

-- The task's check function (docs/TASKS.md "Check functions"): the sidecar's text run
-- again here, in the sidecar sandbox (the worker opens no files). Returns the function,
-- nil when the task has none, or nil, a message.
function M.compile_check(chk)
  if not chk then return nil end
  if type(chk.text) ~= "string" then return nil, "the task's check came without its sidecar's text" end
  local t, err = sidecar.run_text(chk.text, chk.file or "the sidecar")
  if not t then return nil, "the task's check: " .. tostring(err) end
  if type(t.check) ~= "function" then return nil, "the task's check: the sidecar gives no check function" end
  return t.check
end

-- A read-only, 0-based view of n elements of host memory p (x[i], #x, x.n).
local function accessor(p, dtype, n, what)
  if dtype == "f16" or dtype == "bf16" then
    -- read as float64: half and bfloat16 have no C type here
    local wide = host_alloc(8 * math.max(n, 1))
    if not wide or not buf.convert(p, dtype, wide, "f64", n) then error("the check cannot widen " .. what, 0) end
    p, dtype = wide, "f64"
  end
  local ct = SCALAR_CT[dtype]
  if not ct then error(string.format("the check cannot read %s: no accessor for %s", what, tostring(dtype)), 0) end
  local v = ffi.cast((ct:gsub("%[1%]", "*")), p)
  local u = newproxy(true)
  local mt = getmetatable(u)
  mt.__index = function(_, i)
    if i == "n" then return n end
    if type(i) ~= "number" or i < 0 or i >= n or i % 1 ~= 0 then
      error(string.format("%s[%s] is out of range (0..%d)", what, tostring(i), n - 1), 2)
    end
    return tonumber(v[i])
  end
  mt.__len = function() return n end
  mt.__newindex = function() error(what .. " is read-only", 2) end
  return u
end

-- Runs the check on case/set s over the host copies (inputs: the set's host truth;
-- outputs: what the candidate wrote). nil when it holds, or a verdict: `wrong` with
-- its words when it refuses, `launch_error` when it raises or runs out of time.
function M.run_check(spec, case, s, phase)
  local set = case.sets[s]
  -- the set's host inputs drawn before the check runs (drawn on the device at setup, they
  -- are drawn here once): their time is kloop's, not the check's deadline
  for i, a in ipairs(spec.args) do
    if a.pointer and filled(a) then
      local h, herr = host_input(set, i)
      if not h then return verdict("launch_error", "the check's inputs: " .. tostring(herr)) end
    end
  end
  local function view(name, out)
    for i, a in ipairs(spec.args) do
      if a.name == name and a.pointer then
        local h = out and state.check_out[i] or (not out and set.host_inputs[i])
        if not h then error(string.format("%s is not an %s of the task", name, out and "output" or "input"), 2) end
        return accessor(h, a.dtype, case.args[i].count, name)
      end
    end
    error(string.format("the task has no buffer named %s", tostring(name)), 2)
  end
  local c = { sizes = case.size, input = function(name) return view(name, false) end,
    output = function(name) return view(name, true) end }
  local where = string.format("size %s (set %d%s)", case.label, s, phase and (", " .. phase) or "")
  local ev = { case = case.label, set = s, phase = phase, size = case.size, check = true }
  local ok, res, why = sidecar.guarded_pcall("the task's check function", state.check, c)
  if not ok then
    local e = sys.is_interrupt(res) and why or res
    if type(e) == "table" and e.message then e = e.message end
    return verdict("launch_error", string.format("the task's check failed on %s: %s", where, tostring(e)), ev)
  end
  if res == true then return nil end
  if res == false or res == nil then
    return verdict("wrong", string.format("the task's check refused %s: %s", where,
      why ~= nil and tostring(why) or "(no reason given)"), ev)
  end
  return verdict("launch_error", string.format("the task's check returned %s on %s, not true or false, \"why\"",
    type(res), where), ev)
end

-- One launch of the candidate on case/set, then sync. Returns nil or a verdict (+fatal).
local function run_once(be, spec, case, s, kernels, params)
  local ok, msg, fatal = load_inputs(be, spec, case, s)
  if ok then ok, msg, fatal = poison_outputs(be, spec, case) end
  if not ok then return verdict(fatal and "crashed" or "launch_error", msg), fatal end
  ok, msg, fatal = launch_plan(be, kernels, params)
  if not ok then
    return verdict(fatal and "crashed" or "launch_error", string.format("%s: %s", case.label, msg),
      { case = case.label }), fatal
  end
  ok, msg, fatal = be.sync()
  if not ok then
    return verdict(fatal and "crashed" or "launch_error", string.format("%s: %s", case.label, msg),
      { case = case.label }), fatal
  end
  return nil
end

-- Lets go of the candidates whose modules are unloaded: their own buffers are freed and
-- the cases' region lists rebuilt without them.
local function prune_live(be)
  local keep, dropped = {}, false
  for cand in pairs(state.live) do
    if cand.mod and cand.mod.ptr ~= nil then
      keep[cand] = true
    else
      cand.released = true
      for _, per in pairs(cand.own or {}) do
        for _, o in pairs(per) do
          if o.buf then
            be.free(o.buf.base)
            for k, b in ipairs(state.bufs) do if b == o.buf then table.remove(state.bufs, k) break end end
            dropped = true
          end
        end
      end
    end
  end
  state.live = keep
  return dropped
end

-- A candidate's own arguments where its point differs from the reference's (req.args,
-- kloop.eval.evaluator's point_args: {label -> {"i" -> {count} or {value}}}): a guarded
-- scratch buffer of its count, or a scalar value. Returns true, or nil, msg, fatal.
local function own_args(be, cand, req)
  cand.own = {}
  for label, per in pairs(req.args or {}) do
    local case
    for _, c in ipairs(state.cases) do if c.label == label then case = c end end
    if not case then return nil, "req.args names no case " .. tostring(label) end
    cand.own[label] = {}
    for key, d in pairs(per) do
      local i = tonumber(key)
      local a = state.spec.args[i]
      if not a then return nil, "req.args names no argument " .. tostring(key) end
      if d.count ~= nil then
        if a.role ~= "scratch" then return nil, a.name .. " is not scratch: its size cannot change with the point" end
        local b, msg, fatal = alloc_guarded(be, d.count * buf.dtype_size(a.dtype),
          string.format("%s (%s, %d elements at this candidate's point)", a.name, label, d.count))
        if not b then return nil, msg, fatal end
        local ok, m2, f2 = fill_guards(be, b)
        if not ok then return nil, m2, f2 end
        cand.own[label][i] = { buf = b }
      else
        cand.own[label][i] = { value = d.value }
      end
    end
  end
  return true
end

-- The binary a candidate runs on a case: req.cubin for every case, or, with sizes
-- compiled in (docs/TASKS.md), the case's own (req.cubins[label]).
local function cand_path(req, label)
  return req.cubins and req.cubins[label] or req.cubin
end

-- Unloads every module of a candidate (each case's; one shared by several cases once).
local function unload_cand(be, cand)
  for _, mod in ipairs(distinct_mods(cand.cases)) do be.unload(mod) end
  if cand.mod then be.unload(cand.mod) end
end

-- Loads a candidate's modules (one per distinct binary of its cases) and resolves, in
-- each case's module, every kernel of that case's plan and the task's symbols; then its
-- own arguments (own_args). Returns cand = {mod (the bench case's: the candidate is live
-- while it is loaded), cases = {label -> {mod, syms}}, plans = {label -> kernels},
-- resources (the bench module's), own}, or nil, verdict table (everything unloaded).
local function load_candidate(be, req)
  local dropped = prune_live(be)
  local cand = { cases = {}, plans = {}, resources = {}, req = req }
  local per_case = req.cubins ~= nil
  local function failed(v)
    unload_cand(be, cand)
    state.live[cand] = true -- (its own buffers go at the next prune)
    return nil, v
  end
  local by_path = {}
  for _, case in ipairs(state.cases) do
    local path = cand_path(req, case.label)
    local where = per_case and (" (" .. case.label .. ")") or ""
    local r = by_path[path]
    if type(path) ~= "string" then return failed({ verdict = "launch_error", reason = "no binary for " .. case.label }) end
    if not r then
      local mod, msg, fatal = be.load(path)
      if not mod then
        return failed({ verdict = fatal and "crashed" or "launch_error", reason = "module load" .. where .. ": " .. msg, fatal = fatal })
      end
      r = { mod = mod, fns = {} }
      by_path[path] = r
      cand.cases[case.label] = r
      local syms, serr, sfatal = resolve_symbols(be, mod, state.spec)
      if not syms then
        return failed({ verdict = sfatal and "crashed" or "launch_error", reason = (per_case and (case.label .. ": ") or "")
          .. tostring(serr), fatal = sfatal })
      end
      r.syms = syms
    end
    cand.cases[case.label] = r
    if case.bench then cand.mod = r.mod end
  end
  cand.mod = cand.mod or cand.cases[state.cases[#state.cases].label].mod
  local ok0, oerr, ofatal = own_args(be, cand, req)
  if not ok0 then return failed({ verdict = ofatal and "crashed" or "launch_error", reason = oerr, fatal = ofatal }) end
  cand.syms = cand.cases[state.cases[#state.cases].label].syms
  state.live[cand] = true
  if dropped or next(req.args or {}) then
    for _, case in ipairs(state.cases) do build_case_regions(state.spec, case) end
  end
  for _, case in ipairs(state.cases) do
    local p = req.plans[case.label]
    if not p then return failed({ verdict = "launch_error", reason = "no launch plan for " .. case.label }) end
    local r = cand.cases[case.label]
    local kernels = {}
    for k, l in ipairs(p) do
      local fn = r.fns[l.entry]
      if not fn then
        local msg, fatal
        fn, msg, fatal = be.func(r.mod, l.entry)
        if not fn then return failed({ verdict = fatal and "crashed" or "launch_error", reason = msg, fatal = fatal }) end
        r.fns[l.entry] = fn
        -- (with a binary per size, the bench one's resources are the candidate's)
        local prev = cand.resources[l.entry]
        if not prev or case.bench then
          cand.resources[l.entry] = be.attrs(fn)
          cand.resources[l.entry].dynamic_smem = prev and prev.dynamic_smem or nil
        end
      end
      local res = cand.resources[l.entry]
      res.dynamic_smem = math.max(res.dynamic_smem or 0, l.smem)
      local ok, m2, f2 = be.prepare_launch(fn, l.smem)
      if not ok then
        return failed({ verdict = f2 and "crashed" or "launch_error", fatal = f2, resources = cand.resources,
          reason = "shared memory " .. l.smem .. " bytes: " .. m2 })
      end
      kernels[k] = { fn = fn, grid = l.grid, block = l.block, smem = l.smem }
    end
    cand.plans[case.label] = kernels
  end
  return cand
end

-- A fresh load of a candidate's module (the case's) before each timed repetition: its
-- globals start from their initial values every time, so nothing it computed in an
-- earlier launch (verification's, or the last repetition's) can be replayed into a timed one.
-- In two halves. fresh_module loads the new instance and resolves its symbols and the
-- launch functions of every case that uses this module, while the old one stays loaded
-- and in use: pre = {r, mod, fns, syms, plans}, or nil, verdict, fatal. install_module
-- unloads the old one and puts the new one in its place (every case whose launches use
-- this module gets its functions from the new one: one binary for every size, and a
-- cascade verifies the other sizes after the screen's timing). time_interleaved runs the
-- first half while the last repetition's state check runs on the GPU.
local function fresh_module(be, cand, case)
  local r = cand.cases[case.label]
  -- (the image the first load read, where the backend keeps one: no file read per repetition)
  local mod, msg, fatal = be.load(cand_path(cand.req, case.label), r.mod.image)
  if not mod then return nil, verdict(fatal and "crashed" or "launch_error", "module reload: " .. tostring(msg)), fatal end
  local function fail(v, f)
    be.unload(mod)
    return nil, v, f
  end
  local syms, serr, sfatal = resolve_symbols(be, mod, state.spec)
  if not syms then return fail(verdict(sfatal and "crashed" or "launch_error", "module reload: " .. tostring(serr)), sfatal) end
  local pre = { r = r, mod = mod, fns = {}, syms = syms, plans = {} }
  for _, c in ipairs(state.cases) do
    if cand.cases[c.label] == r then
      local kernels = {}
      for k, l in ipairs(cand.req.plans[c.label]) do
        local fn = pre.fns[l.entry]
        if not fn then
          local m2, f2
          fn, m2, f2 = be.func(mod, l.entry)
          if not fn then return fail(verdict(f2 and "crashed" or "launch_error", m2), f2) end
          pre.fns[l.entry] = fn
        end
        local ok, m3, f3 = be.prepare_launch(fn, l.smem)
        if not ok then return fail(verdict(f3 and "crashed" or "launch_error", m3), f3) end
        kernels[k] = { fn = fn, grid = l.grid, block = l.block, smem = l.smem }
      end
      pre.plans[c.label] = kernels
    end
  end
  return pre
end

local function install_module(be, cand, case, pre)
  local r, old = pre.r, pre.r.mod
  be.unload(old)
  r.mod, r.fns, r.syms = pre.mod, pre.fns, pre.syms
  if cand.mod == old then cand.mod = pre.mod end
  if case.bench then cand.syms = pre.syms end
  for label, kernels in pairs(pre.plans) do cand.plans[label] = kernels end
  return cand.plans[case.label]
end

-- The case's kernels from a fresh instance of its module (pre: one fresh_module loaded
-- already), or nil, verdict, fatal. Without pre the old instance goes first, so a module
-- that fits on the device once is still timed (where a preload found no room for a second
-- instance, it failed, and this loads it here).
local function reload_for_timing(be, cand, case, pre)
  if not pre then
    local v, f
    be.unload(cand.cases[case.label].mod) -- (its image stays with it: the reload reads it)
    pre, v, f = fresh_module(be, cand, case)
    if not pre then return nil, v, f end
  end
  return install_module(be, cand, case, pre)
end

local function fail_with(cand, v, fatal)
  v.resources = cand.resources
  v.fatal = fatal or nil
  return v
end

-- The digests of a case's outputs as the device holds them now: a list of uint64 cdata,
-- or nil, verdict, fatal.
local function output_digests(be, case)
  local out, v, fatal = run_regions(be, case.out_regions)
  if not out then return nil, v, fatal end
  local d = {}
  for k = 1, case.out_regions.n do d[k] = out[k - 1].value end
  return d
end

local function same_digests(a, b)
  if not (a and b) or #a ~= #b then return false end
  for k = 1, #a do if a[k] ~= b[k] then return false end end
  return true
end

-- Records the digests of outputs that were just verified (case, input set s) on cand,
-- so later launches on the same inputs are checked on the device (check_again).
local function record_digests(be, cand, case, s, d)
  local v, fatal
  if not d then d, v, fatal = output_digests(be, case) end
  if not d then return v, fatal end
  cand.digests = cand.digests or {}
  cand.digests[case.label] = cand.digests[case.label] or {}
  cand.digests[case.label][s] = d
  return nil
end

-- The digests cand's outputs of case on input set s were verified with (record_digests),
-- or nil where none were recorded yet.
local function verified_digests(cand, case, s)
  return cand.digests and cand.digests[case.label] and cand.digests[case.label][s]
end

-- The outputs of a later launch on input set s (a timed repetition): right when they
-- hash like the verified outputs of set s (exactly the same bits); otherwise, or where
-- nothing was recorded (a screen verifies another size), compared as at verification
-- (a task that allows nondeterminism passes there within its tolerance). d: the
-- digests as read already (check_launch's with_digests), else read here.
local function check_again(be, spec, cand, case, s, phase, d)
  local want = verified_digests(cand, case, s)
  if want then
    local v, fatal
    if not d then d, v, fatal = output_digests(be, case) end
    if not d then return v, fatal end
    if same_digests(d, want) then return nil end
    -- not the verified bits: wrong if it is wrong; for a task that asks for exact
    -- repeats, different bits on the same inputs are nondeterministic even within tolerance
    local v2, f2 = check_outputs(be, spec, case, s, phase)
    if v2 or spec.tolerance.deterministic ~= "exact" then return v2, f2 end
    return verdict("nondeterministic", string.format("%s: the outputs on input set %d differ from the verified "
      .. "ones (their digests; within the tolerance, but the task asks for exact repeats)", phase or case.label, s),
      { case = case.label, set = s, phase = phase })
  end
  return check_outputs(be, spec, case, s, phase)
end

-- Verification: every case (check sizes, then bench) and every input set, with
-- poisoned outputs, the reference comparison and unchanged inputs; then a
-- determinism run per case. Returns nil when the candidate passes, or a verdict.
-- scope (screening, docs/TASKS.md "Stages"): {cases = {case}, nsets = 1, determinism =
-- false} narrows it to the cases and input sets given, with or without the repeat.
-- scope.done = {label -> set}: that case's set was verified already on this loaded
-- candidate (a cascade's screen, M.cascade) and is not run again; its repeat is.
local function verify(be, spec, cand, scope)
  scope = scope or {}
  local done = scope.done or {}
  for _, case in ipairs(scope.cases or state.cases) do
    local kernels = cand.plans[case.label]
    local params = build_params(spec, case, nil, cand)
    for s = 1, scope.nsets or spec.nsets do
      if done[case.label] ~= s then
        -- (the outputs' digests read with the launch's regions: comparing them reads only)
        local v, fatal, d = run_once(be, spec, case, s, kernels, params)
        if not v then v, fatal, d = check_launch(be, spec, case, s, nil, true) end
        if not v then v, fatal = check_outputs(be, spec, case, s) end
        if not v then v, fatal = record_digests(be, cand, case, s, d) end
        if v then return fail_with(cand, v, fatal) end
      end
    end
    local last = scope.nsets or spec.nsets
    -- the repeat: one more run on the last set's inputs; outputs that hash like the
    -- verified ones are the same bits. Otherwise the old way, element by element: the
    -- repeat's outputs kept, a third run, the first element that differs.
    local repeat_needed = scope.determinism ~= false
    if repeat_needed then
      local v, fatal, d = run_once(be, spec, case, last, kernels, params)
      if not v then v, fatal, d = check_launch(be, spec, case, nil, "repeat", true) end
      if v then return fail_with(cand, v, fatal) end
      repeat_needed = not same_digests(d, cand.digests[case.label][last])
    end
    for i, a in ipairs(repeat_needed and spec.args or {}) do
      if a.pointer and compared(a) then
        be.d2h(state.scratch[2], case.dev[i], case.bytes[i])
        local v, fatal = run_once(be, spec, case, last, kernels, params)
        if not v then v, fatal = check_launch(be, spec, case, nil, "repeat") end
        if v then return fail_with(cand, v, fatal) end
        be.d2h(state.scratch[1], case.dev[i], case.bytes[i])
        local idx = buf.first_diff(state.scratch[1], state.scratch[2], a.dtype, case.args[i].count)
        if spec.tolerance.deterministic == "exact" then
          -- (the digests differed: when the third run matches the repeat, the first run
          -- was the odd one, or another output differed)
          return fail_with(cand, verdict("nondeterministic", idx >= 0 and string.format(
            "two runs on the same inputs differ (%s, %s, first at element %d)", a.name, case.label, idx)
            or string.format("two runs on the same inputs differ (%s: the outputs' digests differ)", case.label),
            { case = case.label, arg = idx >= 0 and a.name or nil, index = idx >= 0 and idx or nil }))
        end
        v, fatal = check_outputs(be, spec, case, last, "repeat")
        if v then
          v.verdict = "nondeterministic"
          return fail_with(cand, v, fatal)
        end
        break
      end
    end
  end
  return nil
end

local function bench_case()
  for _, case in ipairs(state.cases) do
    if case.bench then return case end
  end
  return state.cases[#state.cases]
end

-- One timed repetition on the bench case: inputs of set s copied in, outputs poisoned
-- and the cache flushed outside the timed region; events around the launch plan only.
local function prepare_rep(be, spec, case, s, flush)
  local ok, m, fatal = load_inputs(be, spec, case, s)
  if ok then ok, m, fatal = poison_outputs(be, spec, case) end
  if ok and flush ~= false then ok, m, fatal = be.flush_cache() end
  return ok, m, fatal
end

-- `before` (optional) runs between the preparation and the timed part (profiling
-- starts its kernel records there). The Lua collector is held for the timed part: a
-- collection step that lands inside it (the host backend allocates its call's
-- arguments there) would be charged to whichever side happened to trigger it.
local function timed_rep(be, spec, case, kernels, params, s, flush, before, during)
  local ok, m, fatal = prepare_rep(be, spec, case, s, flush)
  if ok and before then ok, m, fatal = before() end
  collectgarbage("stop")
  if ok then ok, m, fatal = be.timer_start() end
  if ok then ok, m, fatal = launch_plan(be, kernels, params) end
  if ok then ok, m, fatal = be.timer_stop() end
  collectgarbage("restart")
  -- (host work while the repetition runs on the GPU, before its stop event is read: the
  -- clocks, time_interleaved)
  if ok and during then during() end
  local ms
  if ok then ms, m, fatal = be.timer_read() end
  if not ms then return nil, verdict(fatal and "crashed" or "launch_error", "timed launch: " .. tostring(m)), fatal end
  return ms
end

-- The order of the candidates in repetition r. Two candidates run in ABBA blocks: A
-- first in odd repetitions, B first in even ones, so whatever the first (or second)
-- place of a pair costs falls on both sides alike. timing.order = "fixed" keeps A
-- first in every pair (the order before issue 17; tests show what it costs).
local function pair_order(n, r, order)
  local o = {}
  for c = 1, n do o[c] = c end
  if n == 2 and order ~= "fixed" and r % 2 == 0 then o[1], o[2] = 2, 1 end
  return o
end

-- The untimed warm-up: each candidate is reloaded, prepared and launched once exactly
-- as a timed repetition is, so neither side's first timed launch is the one that pays
-- for cold code, a cold loader or a cold cache. Returns nil, or index, verdict, fatal.
local function warm_up(be, spec, case, cands, params, timing)
  for c, cand in ipairs(cands) do
    local kernels = cand.plans[case.label]
    if timing.reload ~= false then
      local rv, rf
      kernels, rv, rf = reload_for_timing(be, cand, case)
      if not kernels then return c, rv, rf end
    end
    local ok, m, fatal = prepare_rep(be, spec, case, 1, timing.flush)
    if ok then ok, m, fatal = launch_plan(be, kernels, cand.params or params) end
    if ok then ok, m, fatal = be.sync() end
    if not ok then return c, verdict(fatal and "crashed" or "launch_error", "warm-up launch: " .. tostring(m)), fatal end
    local v, f2 = check_launch(be, spec, case, nil, "warm-up launch")
    if v then return c, v, f2 end
  end
  return nil
end

-- Is the timing precise enough to stop? One candidate: its median's CI half-width
-- within target. Two: the paired ratio's (kloop.eval.stats.paired_ratio), at the end of
-- an ABBA block only.
local function precise_enough(samples, target)
  if #samples == 2 then
    local ratio, lo, hi, blocks = stats.paired_ratio(samples[1], samples[2])
    return blocks ~= nil and blocks >= stats.PAIRED_MIN_REPS / 2 and (hi - lo) / 2 <= target * ratio
  end
  for c = 1, #samples do
    local med, lo, hi = stats.median_ci(samples[c])
    if (hi - lo) / 2 > target * med then return false end
  end
  return true
end

-- Timing loop over one or several candidates, interleaved (AB, BA, AB, ... for two:
-- pair_order; a pair after one untimed warm-up launch each), so they see the same
-- machine state. Stops when the CI is within target (precise_enough), or at the budget; a pair
-- stops at the end of a block only. Outputs of timed launches are re-verified (the first
-- two repetitions and the last), with the inputs rotating between sets.
-- seed (one candidate only): samples timed already under this protocol on the same
-- loaded candidate (a cascade's screen): they count as the first repetitions.
-- clocks (optional, one candidate, a backend with sample): clocks.first and clocks.last
-- get NVML's clocks read while the first and the last repetition timed here run (the GPU
-- busy: an idle GPU's NVML reads stall now and then for 0.5-3 ms, which a read between
-- launches would leave the GPU idle for; bench/nvml_calls.py --busy).
-- Returns samples per candidate, or nil, index of the failing candidate, verdict, fatal.
local function time_interleaved(be, spec, cands, timing, seed, clocks)
  timing = timing or {}
  local case = bench_case()
  local params = build_params(spec, case)
  for _, cand in ipairs(cands) do
    if cand.own and cand.own[case.label] then cand.params = build_params(spec, case, nil, cand) end
  end
  local paired = #cands == 2
  local min_reps = math.max(timing.min_reps or 5, paired and stats.PAIRED_MIN_REPS or 1)
  local max_reps = math.max(timing.max_reps or 500, min_reps)
  local budget = timing.budget or 2.0
  local target = timing.target_ci or 0.01
  local samples = {}
  for c = 1, #cands do samples[c] = {} end
  for k, ms in ipairs(seed or {}) do samples[1][k] = ms end
  -- a backend whose region checks run on the device checks every repetition; one that
  -- digests on the CPU (the host backend) the first two and the last
  local every = be.checks_on_device == true
  if paired and timing.warmup ~= false then
    local c, wv, wf = warm_up(be, spec, case, cands, params, timing)
    if c then return nil, c, wv, wf end
  end
  local tstart = sys.now()
  -- timing.fill (seconds from timing.fill_from, the request's start): the parent expects
  -- the GPU to wait that long for the next candidate's compile; repetitions go on past
  -- the CI target until then (never past the budget or max_reps)
  local fill_end = (timing.fill or 0) > 0 and (timing.fill_from or tstart) + timing.fill or nil
  local r = #samples[1]
  local r0 = r + 1
  local pre -- (the next repetition's fresh module: fresh_module)
  while true do
    r = r + 1
    local s = (r - 1) % spec.nsets + 1
    local done = false -- a pair ends with a whole ABBA block: never after an odd repetition
    if not (paired and r % 2 == 1) then
      done = r >= max_reps or (r >= min_reps and sys.now() - tstart > budget)
      if r >= min_reps and not done then
        done = r > 1 and precise_enough(samples, target) and not (fill_end and sys.now() < fill_end)
      end
    end
    local during
    if clocks and (r == r0 or done) then
      during = function()
        local x = be.sample()
        if r == r0 then clocks.first = x end
        if done then clocks.last = x end
      end
    end
    local phase = "timed launch " .. r
    for _, c in ipairs(pair_order(#cands, r, timing.order)) do
      local cand = cands[c]
      local kernels = cand.plans[case.label]
      if timing.reload ~= false then
        local rv, rf
        kernels, rv, rf = reload_for_timing(be, cand, case, pre)
        pre = nil
        if not kernels then return nil, c, rv, rf end
      end
      local ms, v, fatal = timed_rep(be, spec, case, kernels, cand.params or params, s, timing.flush, nil, during)
      if not ms then return nil, c, v, fatal end
      samples[c][r] = ms
      -- on a backend that checks regions on the device, every repetition's inputs and
      -- outputs are checked (a launch of kloop's check kernel); elsewhere the first two
      -- and the last
      local checked = every or r <= 2 or done
      -- one candidate: the next repetition's fresh module is loaded while this one's
      -- state check runs on the GPU (not while a timed repetition runs: nothing else
      -- happens on the GPU then). A load that fails here fails again, with its verdict,
      -- at the next repetition's reload.
      local beside
      if not done and not paired and timing.reload ~= false then
        beside = function() pre = fresh_module(be, cand, case) end
      end
      local v2, f2, d = check_launch(be, spec, case, checked and s or nil, phase, checked, beside)
      if not v2 and checked then v2, f2 = check_again(be, spec, cand, case, s, phase, d) end
      -- the first verified outputs of an input set (the bench size not verified before its
      -- timing: M.evaluate, a screen): their digests are the ones later launches on the
      -- set must repeat, bit for bit where the task asks for exact repeats
      if not v2 and checked and not verified_digests(cand, case, s) then
        v2, f2 = record_digests(be, cand, case, s, d)
      end
      if v2 then
        if pre then be.unload(pre.mod) end
        return nil, c, v2, f2
      end
    end
    if done then break end
  end
  return samples
end

local function timing_result(samples, cand, floor_ms)
  local summary = stats.summarize(samples)
  local result = {
    verdict = "ok",
    reason = "verified on " .. #state.cases .. " sizes x " .. state.spec.nsets .. " input sets; timed " .. #samples .. " repetitions",
    time_ms = summary.median, ci_ms = { summary.ci_lo, summary.ci_hi }, min_ms = summary.min,
    spread = summary.spread, samples = samples, reps = #samples, resources = cand.resources,
  }
  -- the physical floor: faster than the hardware allows is a cheat or a bug
  if floor_ms and summary.median < floor_ms then
    result.verdict = "too_fast"
    result.reason = string.format("median %.4f ms is below the physical floor %.4f ms (max of flops/peak and bytes/bandwidth)",
      summary.median, floor_ms)
  end
  return result
end

-- The case a screen verifies on: the one labelled req.screen_case (the parent picks the
-- cheapest check size by the task's cost model), else the check case with the fewest
-- bytes of buffers.
local function screen_case(req)
  local best, best_bytes
  for _, case in ipairs(state.cases) do
    if req.screen_case and case.label == req.screen_case then return case end
    local bytes = 0
    for _, b in pairs(case.bytes) do bytes = bytes + b end
    if not case.bench and (not best or bytes < best_bytes) then best, best_bytes = case, bytes end
  end
  return best or bench_case()
end

-- Whether a full evaluation verifies the bench size on its timed launches rather than
-- before them: where every timed launch is checked on the device (its regions, inputs
-- and outputs' digests) and the timing runs at least one launch per input set and one
-- more, each set's first timed launch is verified as a verification launch is (poisoned
-- outputs, the reference, unchanged inputs: check_again), its digests are kept
-- (time_interleaved), and the next launch on that set must repeat them: the same checks,
-- with no bench launches of their own. Elsewhere (the host backend checks the first two
-- and the last repetitions only) the bench size is verified first, as before.
local function timed_verifies(be, spec, timing)
  local min_reps = (timing or {}).min_reps or 5
  return be.checks_on_device == true and (timing or {}).reload ~= false and min_reps >= spec.nsets + 1
end
local IN_TIMING = " (the bench size verified on its timed launches)"

-- After a timing that verified the bench size (timed_verifies): two more launches of
-- it on the module the last timed repetition loaded, without a reload, as verification
-- ran three on one load. Each timed launch is the first after its load, so a kernel
-- right only on a fresh module (a counter or accumulator its globals keep, reset only
-- by a load) shows here: first on the other input set, then on that set again (the
-- repeat: a failure there is nondeterministic, as verify's is). Both are checked as
-- timed launches are (check_launch, check_again against the set's verified digests).
-- Returns nil, or verdict, fatal.
local function again_on_one_load(be, spec, cand, nreps)
  local case = bench_case()
  local kernels = cand.plans[case.label]
  local params = cand.params or build_params(spec, case, nil, cand)
  local s = nreps % spec.nsets + 1 -- (the set after the last timed repetition's)
  for k = 1, 2 do
    local phase = k == 1 and "a second launch on one load" or "the repeat on one load"
    local v, fatal = run_once(be, spec, case, s, kernels, params)
    local d
    if not v then v, fatal, d = check_launch(be, spec, case, s, phase, true) end
    if not v then v, fatal = check_again(be, spec, cand, case, s, phase, d) end
    if v then
      if k == 2 and v.verdict == "wrong" then v.verdict = "nondeterministic" end
      return v, fatal
    end
  end
  return nil
end

-- The timing of one candidate (req.timing; seed: repetitions timed already, a
-- cascade's screen), the two launches on one load where the timing verified the bench
-- size (in_timing), the clocks read during it and the fill it was given: the result table
-- and, when the timing ran through, its samples.
local function timed_result(be, spec, cand, req, t0, in_timing, seed)
  local clocks = be.sample and {} or nil
  if req.timing and req.timing.fill then req.timing.fill_from = t0 end
  local samples, _, tv, fatal = time_interleaved(be, spec, { cand }, req.timing, seed, clocks)
  if samples and in_timing then
    local ov, of = again_on_one_load(be, spec, cand, #samples[1])
    if ov then samples, tv, fatal = nil, ov, of end
  end
  if not samples then return fail_with(cand, tv, fatal) end
  local result = timing_result(samples[1], cand, req.floor_ms)
  -- (one repetition timed here: one read, kept once)
  if clocks then result.clocks = { before = clocks.first ~= clocks.last and clocks.first or nil, after = clocks.last } end
  if req.timing and req.timing.fill then result.fill_s = req.timing.fill end
  return result, samples[1]
end

-- The screen (docs/TASKS.md, "Stages") of a loaded candidate: the screen case (req) with
-- one input set and no repeat, then `timing`'s repetitions at the bench size. Returns
-- the result (stage "screened") and, where it is ok, its samples.
local function screen_stage(be, spec, cand, req, t0, timing)
  local scase = screen_case(req)
  local result = verify(be, spec, cand, { cases = { scase }, nsets = 1, determinism = false })
  local samples
  if not result then
    result, samples = timed_result(be, spec, cand, { timing = timing, floor_ms = req.floor_ms }, t0, false)
    if samples and result.verdict == "ok" then
      result.reason = string.format("screened: verified on %s x 1 input set; timed %d repetitions at the bench size",
        scase.label, #samples)
    else
      samples = nil
    end
  end
  result.stage, result.screen_case = "screened", scase.label
  return result, samples
end

-- Every case but the bench one.
local function sizes_but_bench()
  local bc, list = bench_case(), {}
  for _, case in ipairs(state.cases) do if case ~= bc then list[#list + 1] = case end end
  return list
end

-- Evaluates one candidate: req = {cubin, plans = {label -> plan}, timing = {...}, floor_ms}.
-- req.stage = "screen": the first stage of the cascade (docs/TASKS.md, "Stages"): one
-- check size with one input set and no determinism run, then a few timed repetitions
-- of the bench size (req.timing says how many; their outputs are verified as always).
-- The state checks after the candidate are the same for both stages.
function M.evaluate(be, req)
  if not state then return { verdict = "launch_error", reason = "worker has no task (setup first)" } end
  local spec = state.spec
  local t0 = sys.now()
  local cand, v = load_candidate(be, req)
  if not cand then return after_candidate(be, v) end
  local result
  if req.stage == "screen" then
    result = screen_stage(be, spec, cand, req, t0, req.timing)
  else
    local in_timing = not req.verify_only and timed_verifies(be, spec, req.timing)
    result = verify(be, spec, cand, in_timing and { cases = sizes_but_bench() } or nil)
    if not result and req.verify_only then
      result = { verdict = "ok", reason = "verified on " .. #state.cases .. " sizes x " .. spec.nsets .. " input sets (not timed)",
        resources = cand.resources, verified_only = true }
    elseif not result then
      local samples
      result, samples = timed_result(be, spec, cand, req, t0, in_timing)
      if samples and in_timing then result.reason = result.reason .. IN_TIMING end
    end
  end
  unload_cand(be, cand)
  result.eval_seconds = sys.now() - t0
  return after_candidate(be, result)
end

-- The screening stage as a request of its own (worker op "screen").
function M.screen(be, req)
  req.stage = "screen"
  return M.evaluate(be, req)
end

-- The cascade in one request (worker op "cascade", docs/TASKS.md "Stages"): the screen
-- as M.screen runs it (req.screen_timing its repetitions), then, when the screen is ok
-- and its median at most req.promote_below ms, the full protocol on the same loaded
-- candidate. The full stage does not run again what the screen did on it: the screen's
-- verified size and input set (its repeat runs, as every size's does) and its timed
-- repetitions, which count as the first of the full timing (the same protocol: reloaded,
-- cold, every output verified). Returns the screen's result (stage "screened"), or the
-- full one (stage "full") with result.screen the screen's summary.
function M.cascade(be, req)
  if not state then return { verdict = "launch_error", reason = "worker has no task (setup first)" } end
  local spec = state.spec
  local t0 = sys.now()
  local cand, v = load_candidate(be, req)
  if not cand then
    v.stage = "screened"
    return after_candidate(be, v)
  end
  local result, seed = screen_stage(be, spec, cand, req, t0, req.screen_timing)
  local scase_label = result.screen_case
  result.eval_seconds = sys.now() - t0
  if not seed or (req.promote_below and result.time_ms > req.promote_below) then
    unload_cand(be, cand)
    return after_candidate(be, result)
  end
  local screen = { verdict = result.verdict, time_ms = result.time_ms, reps = result.reps,
    screen_case = scase_label, eval_seconds = result.eval_seconds }
  local in_timing = timed_verifies(be, spec, { min_reps = math.max((req.timing or {}).min_reps or 5, #seed),
    reload = (req.timing or {}).reload })
  local full = verify(be, spec, cand, { done = { [scase_label] = 1 }, cases = in_timing and sizes_but_bench() or nil })
  if not full then
    local samples
    full, samples = timed_result(be, spec, cand, req, t0, in_timing, seed)
    if samples then
      full.reason = full.reason .. string.format(" (the first %d the screen's)", #seed) .. (in_timing and IN_TIMING or "")
      full.screen_reps_reused = #seed
    end
  end
  full.stage, full.screen = "full", screen
  unload_cand(be, cand)
  full.eval_seconds = sys.now() - t0
  return after_candidate(be, full)
end

-- Profiles one candidate on the bench case, never inside the timing: verification
-- first (unless the parent just verified this binary: req.verified), then `reps` runs
-- under CUPTI kernel activity with the event timer around each (does the kernel time
-- account for the timed interval?), then one launch of the plan under the range
-- profiler (each kernel replayed once per pass), and the outputs checked again.
-- req = {cubin, plans, metrics = {...}, reps, verified, timing = {flush}}.
local function profile(be, req)
  if not state then return { verdict = "launch_error", reason = "worker has no task (setup first)" } end
  local spec = state.spec
  local t0 = sys.now()
  local cand, v = load_candidate(be, req)
  if not cand then return v end
  local result = not req.verified and verify(be, spec, cand) or nil
  if result then unload_cand(be, cand) return result end
  local case = bench_case()
  local kernels = cand.plans[case.label]
  local params = build_params(spec, case, nil, cand)
  local out = { verdict = "ok", resources = cand.resources, case = case.label, launches = {} }
  for k, l in ipairs(req.plans[case.label]) do
    out.launches[k] = { entry = l.entry, grid = l.grid, block = l.block, smem = l.smem }
  end
  local timing = req.timing or {}
  if be.activity_start then
    -- recording stays on across the runs (enabling it delays the next launch); one
    -- warm-up run first; each run is the timing's repetition, and only the records of
    -- the timed part count (the L2 flush kernel runs before it)
    local reps = {}
    local okact, amsg = be.activity_start()
    if not okact then out.activity_error = amsg end
    for r = 0, okact and (req.reps or 3) or -1 do
      local ms, tv, fatal = timed_rep(be, spec, case, kernels, params, r % spec.nsets + 1, timing.flush, function()
        local ok, msg, f = be.sync() -- the flush kernel done, its record taken away
        if ok then be.activity_take() end
        return ok, msg, f
      end)
      if not ms then
        be.activity_stop()
        unload_cand(be, cand)
        return fail_with(cand, tv, fatal)
      end
      local recs, dropped = be.activity_take()
      if not recs then out.activity_error = dropped break end
      local sum = 0
      for _, k in ipairs(recs) do sum = sum + k.ms end
      if r > 0 then reps[r] = { event_ms = ms, kernel_ms = sum, kernels = #recs, dropped = dropped } end
      if r == 1 then
        out.activity_kernels = {}
        for i, k in ipairs(recs) do out.activity_kernels[i] = { name = k.name, ms = k.ms, grid = k.grid, block = k.block } end
      end
    end
    if okact then be.activity_stop() end
    out.activity = { reps = reps, plan_kernels = #kernels }
  end
  if req.metrics and #req.metrics > 0 and be.profile_metrics then
    local res, perr, pfatal, noperm = be.profile_metrics(req.metrics,
      function() return launch_plan(be, kernels, params) end, #kernels + 2,
      function() return prepare_rep(be, spec, case, 1, timing.flush) end)
    if res then
      out.per_kernel, out.passes, out.chip, out.dropped_ranges = res.per_kernel, res.passes, res.chip, res.dropped
      out.replay, out.passes_run, out.user_replay_error = res.replay, res.passes_run, res.user_replay_error
      -- each pass was prepared afresh (or, in kernel replay, memory restored by CUPTI):
      -- the outputs of the last one must be right
      local v2, f2 = check_outputs(be, spec, case, 1, "after profiling")
      if v2 then out.profile_warning = v2.reason pfatal = f2 end
    else
      out.metrics_error = perr
      out.no_counters = noperm or nil
    end
    if pfatal then unload_cand(be, cand) return fail_with(cand, verdict("crashed", tostring(perr)), true) end
  end
  unload_cand(be, cand)
  out.eval_seconds = sys.now() - t0
  return out
end

-- A/B comparison: both verified, then timed interleaved in ABBA blocks. req = {a = req,
-- b = req, timing}. Returns {a = result, b = result, ratio (time_a / time_b: the median
-- of the blocks' paired ratios), ratio_ci = {lo, hi} (95%), blocks, order}.
local function compare(be, req)
  if not state then return { verdict = "launch_error", reason = "worker has no task (setup first)" } end
  local spec = state.spec
  local cands, out = {}, {}
  for _, key in ipairs({ "a", "b" }) do
    local cand, v = load_candidate(be, req[key])
    if not cand then
      out[key] = v
    else
      v = verify(be, spec, cand)
      if v then out[key] = v else cands[#cands + 1] = cand cand.key = key end
    end
  end
  if #cands == 1 then
    -- (verified, but with nothing to be timed against: as the parent says of a side whose
    -- other side did not compile)
    out[cands[1].key] = { verdict = "not_run", reason = "verified; not timed: the other candidate failed",
      resources = cands[1].resources }
  elseif #cands == 2 then
    local samples, c, v, fatal = time_interleaved(be, spec, cands, req.timing)
    if not samples then
      out[cands[c].key] = fail_with(cands[c], v, fatal)
    else
      out.a = timing_result(samples[1], cands[1], req.a.floor_ms)
      out.b = timing_result(samples[2], cands[2], req.b.floor_ms)
      -- one statistic, its estimate and its CI alike: the median of the ABBA blocks'
      -- paired ratios, with the sign test's CI of that median (kloop.eval.stats)
      local ratio, lo, hi, blocks = stats.paired_ratio(samples[1], samples[2])
      out.ratio, out.ratio_ci, out.blocks = ratio, { lo, hi }, blocks
      out.order = req.timing and req.timing.order == "fixed" and "fixed" or "ABBA"
    end
  end
  for _, cand in ipairs(cands) do unload_cand(be, cand) end
  out.fatal = (out.a and out.a.fatal) or (out.b and out.b.fatal) or nil
  return out
end

-- The worker's state, for tests that play a hostile kernel (they need real addresses).
function M.debug_state() return state end

-- Profiling and A/B comparisons end with the same state check as an evaluation; in a
-- comparison a change cannot be pinned on one side, so both get the verdict.
function M.profile(be, req) return after_candidate(be, profile(be, req)) end

function M.compare(be, req)
  local out = compare(be, req)
  if out.fatal then return out end
  local probe = after_candidate(be, { verdict = "ok" })
  if probe.verdict ~= "ok" then
    probe.reason = probe.reason .. " (during an A/B comparison: either candidate)"
    out.a, out.b = probe, probe
    out.ratio, out.ratio_ci = nil, nil
  end
  out.restart = probe.restart
  return out
end

return M
