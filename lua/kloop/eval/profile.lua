-- kloop.eval.profile: what the CUPTI counters and the cost model say about a kernel: the
-- default metric set, totals over a launch plan's kernels, theoretical occupancy, the
-- roofline position against measured ceilings, and plain-language hints. Pure Lua:
-- the worker collects (kloop.protocol.profile), this module explains. The occupancy
-- limits per chip are GPU facts (kloop.core.gpu).
local gpu = require("kloop.core.gpu")

local M = {}

-- Headline metrics (names as ncu spells them); shown by `kloop profile`.
M.DEFAULT = {
  "gpu__time_duration.sum",
  "sm__throughput.avg.pct_of_peak_sustained_elapsed",
  "dram__throughput.avg.pct_of_peak_sustained_elapsed",
  "sm__warps_active.avg.pct_of_peak_sustained_active",
  "dram__bytes_read.sum",
  "dram__bytes_write.sum",
  "lts__t_sector_hit_rate.pct",
  "l1tex__t_sector_hit_rate.pct",
  "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
  "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
}
-- Counters behind the hints (coalescing, bank conflicts); collected in the same passes.
M.SUPPORT = {
  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
  "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
  "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
}

M.LABELS = {
  ["gpu__time_duration.sum"] = "kernel time",
  ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = "SM throughput",
  ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = "DRAM throughput",
  ["sm__warps_active.avg.pct_of_peak_sustained_active"] = "achieved occupancy",
  ["dram__bytes_read.sum"] = "DRAM read",
  ["dram__bytes_write.sum"] = "DRAM written",
  ["lts__t_sector_hit_rate.pct"] = "L2 hit rate",
  ["l1tex__t_sector_hit_rate.pct"] = "L1 hit rate",
  ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = "tensor pipes active",
  ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "memory pipelines (L1, L2, DRAM: the busiest)",
  ["sm__cycles_elapsed.avg.per_second"] = "SM clock",
}

-- The metric list for a request: nil -> defaults and support counters; "a,b" -> just
-- those; "+a,b" -> defaults plus those. Returns list, or nil, message.
function M.metric_list(spec)
  local out, seen = {}, {}
  local function add(name)
    if not seen[name] then seen[name] = true out[#out + 1] = name end
  end
  local extra = spec
  if spec == nil or spec == "" or (type(spec) == "string" and spec:sub(1, 1) == "+") then
    for _, m in ipairs(M.DEFAULT) do add(m) end
    for _, m in ipairs(M.SUPPORT) do add(m) end
    extra = spec and spec:sub(2) or ""
  end
  local list = extra
  if type(extra) == "string" then
    list = {}
    for item in extra:gmatch("[^,]+") do list[#list + 1] = item:match("^%s*(.-)%s*$") end
  end
  if type(list) ~= "table" then return nil, "metrics: give a list of names or a comma-separated string" end
  for _, m in ipairs(list) do
    if type(m) ~= "string" or not m:match("^[%a_][%w_]*__[%w_]+[%w_%.]*$") then
      return nil, string.format("metrics: '%s' is not a metric name (names look like dram__bytes_read.sum)", tostring(m))
    end
    add(m)
  end
  if #out == 0 then return nil, "metrics: the list is empty" end
  return out
end

-- How a metric combines over several kernels: counts add up, rates and percentages
-- are averaged weighted by each kernel's duration.
local function additive(name)
  return name:match("%.sum$") ~= nil
end

-- per_kernel: list of {metric -> value}. Returns totals {metric -> value}.
function M.aggregate(names, per_kernel)
  local totals = {}
  if #per_kernel == 1 then
    for _, n in ipairs(names) do totals[n] = per_kernel[1][n] end
    return totals
  end
  local tkey = "gpu__time_duration.sum"
  for _, n in ipairs(names) do
    local sum, wsum, w = 0, 0, 0
    for _, k in ipairs(per_kernel) do
      local v = k[n]
      if type(v) == "number" and v == v then
        sum = sum + v
        local wt = k[tkey]
        if type(wt) ~= "number" or wt ~= wt then wt = 1 end
        wsum = wsum + v * wt
        w = w + wt
      end
    end
    if additive(n) then
      totals[n] = sum
    elseif n:match("%.max$") or n:match("%.min$") then
      local best
      for _, k in ipairs(per_kernel) do
        local v = k[n]
        if type(v) == "number" and v == v and (best == nil or (n:match("max$") and v > best) or (n:match("min$") and v < best)) then
          best = v
        end
      end
      totals[n] = best
    else
      totals[n] = w > 0 and wsum / w or nil
    end
  end
  return totals
end

-- Theoretical occupancy of one kernel: {pct, blocks_per_sm, limiter} or nil when the
-- chip or the resources are unknown. res: kloop resources (registers, static_smem,
-- dynamic_smem); threads: threads per block.
function M.occupancy(arch, res, threads)
  local L = gpu.limits(arch)
  if not (L and res and res.registers and threads and threads > 0) then return nil end
  local warps = math.ceil(threads / 32)
  local by = {}
  by["block size"] = math.floor(L.warps / warps)
  by["blocks per SM"] = L.blocks
  local regs_per_warp = math.ceil(math.max(res.registers, 1) * 32 / L.reg_unit) * L.reg_unit
  by["registers"] = math.floor(L.regs / (regs_per_warp * warps))
  local smem = (res.static_smem or 0) + (res.dynamic_smem or 0)
  if smem > 0 then by["shared memory"] = math.floor(L.smem / (smem + L.smem_reserved)) end
  local blocks, limiter = math.huge, nil
  for _, k in ipairs({ "registers", "shared memory", "block size", "blocks per SM" }) do
    if by[k] and by[k] < blocks then blocks, limiter = by[k], k end
  end
  return { pct = 100 * math.min(blocks * warps, L.warps) / L.warps, blocks_per_sm = blocks, limiter = limiter,
    warps_per_block = warps }
end

local function fmt_bytes(b)
  if type(b) ~= "number" or b ~= b or b == math.huge then return tostring(b) end
  if b >= 1e9 then return string.format("%.2f GB", b / 1e9) end
  if b >= 1e6 then return string.format("%.1f MB", b / 1e6) end
  if b >= 1e3 then return string.format("%.1f kB", b / 1e3) end
  return string.format("%d B", b)
end
M.fmt_bytes = fmt_bytes

-- The summary of one profile. p = {
--   metrics = totals, kernels = per-kernel list, launches = {{entry, grid, block, smem}},
--   activity = {plan_kernels, reps = {{event_ms, kernel_ms, kernels}}}, passes, resources,
--   time_ms (the evaluation's median, else the activity reps' event median), cost = {flops,
--   bytes}, peaks = {flops, bytes} (measured, else datasheet), peaks_source, arch,
--   unit (task unit, e.g. fp32) }
-- Returns a table that JSON keeps (stored with the evaluation) with `hints`.
function M.summarize(p)
  local s = { metrics = p.metrics, passes = p.passes, hints = {}, peaks_source = p.peaks_source }
  local met = p.metrics or {}
  local hints = s.hints
  local function hint(kind, text) hints[#hints + 1] = { kind = kind, text = text } end

  -- time: the evaluation's median, else the event timer around the activity runs
  local t = p.time_ms
  s.time_source = t and "evaluation" or nil
  if not t and p.activity and p.activity.reps and #p.activity.reps > 0 then
    local ev = {}
    for i, r in ipairs(p.activity.reps) do ev[i] = r.event_ms end
    table.sort(ev)
    t = ev[math.floor((#ev + 1) / 2)]
    s.time_source = "event timer"
  end
  if not t and met["gpu__time_duration.sum"] then
    t = met["gpu__time_duration.sum"] * 1e-6
    s.time_source = "profiler"
  end
  s.time_ms = t

  -- roofline from the cost model against the ceilings
  local cost, pk = p.cost, p.peaks
  if t and t > 0 and cost and pk and pk.flops and pk.bytes then
    local sec = t * 1e-3
    s.flops, s.bytes = cost.flops, cost.bytes
    s.achieved = { tflops = cost.flops / sec / 1e12, tbps = cost.bytes / sec / 1e12 }
    s.ceilings = { tflops = pk.flops / 1e12, tbps = pk.bytes / 1e12 }
    s.ridge = pk.flops / pk.bytes
    -- (no bytes at all: nothing but compute; JSON has no infinity, so intensity stays nil)
    s.intensity = cost.bytes > 0 and cost.flops / cost.bytes or nil
    s.bound = (not s.intensity or s.intensity >= s.ridge) and "compute" or "memory"
    if s.bound == "compute" then
      s.frac = (cost.flops / sec) / pk.flops
    else
      s.frac = (cost.bytes / sec) / pk.bytes
    end
    s.ceiling_ms = math.max(cost.flops / pk.flops, cost.bytes / pk.bytes) * 1e3
  end

  -- what the DRAM counters say against the cost model
  local rd, wr = met["dram__bytes_read.sum"], met["dram__bytes_write.sum"]
  if rd and wr then
    s.dram_bytes = rd + wr
    if t and t > 0 then s.dram_tbps = s.dram_bytes / (t * 1e-3) / 1e12 end
    if cost and cost.bytes and cost.bytes > 0 then s.dram_vs_model = s.dram_bytes / cost.bytes end
  end

  -- occupancy: achieved (counters) against theoretical (resources, block size)
  local occ
  for _, l in ipairs(p.launches or {}) do
    local res = p.resources and p.resources[l.entry]
    local threads = (l.block[1] or 1) * (l.block[2] or 1) * (l.block[3] or 1)
    local o = M.occupancy(p.arch, res and { registers = res.registers, static_smem = res.static_smem,
      dynamic_smem = l.smem } or nil, threads)
    if o and (not occ or o.pct < occ.pct) then
      occ = o
      occ.entry, occ.threads, occ.registers = l.entry, threads, res.registers
      occ.smem = (res.static_smem or 0) + (l.smem or 0)
    end
  end
  s.occupancy = { achieved = met["sm__warps_active.avg.pct_of_peak_sustained_active"], theoretical = occ and occ.pct,
    limiter = occ and occ.pct < 100 and occ.limiter or nil, blocks_per_sm = occ and occ.blocks_per_sm }

  -- activity: do the kernels CUPTI recorded account for the timed median? (Against
  -- the evaluation's median, measured without tracing: CUPTI's tracing adds about
  -- 0.15 ms of launch latency to an event-timed run of its own, seen on an H200.)
  local act = p.activity
  if act and act.reps and #act.reps > 0 then
    local ks, evs = {}, {}
    for i, r in ipairs(act.reps) do ks[i], evs[i] = r.kernel_ms, r.event_ms end
    table.sort(ks)
    table.sort(evs)
    local mid = math.floor((#ks + 1) / 2)
    local basis = p.time_ms or evs[mid]
    s.activity = { kernel_ms = ks[mid], traced_event_ms = evs[mid], basis_ms = basis,
      basis = p.time_ms and "timed median" or "traced run",
      coverage = basis > 0 and ks[mid] / basis or 0, kernels = act.reps[1].kernels, plan_kernels = act.plan_kernels }
  end

  -- the profiler must have seen every kernel of the plan, or the totals undercount
  if p.kernels and p.launches and #p.kernels > 0 and #p.kernels ~= #p.launches then
    s.warning = string.format("the profiler returned %d ranges for a plan of %d kernels: totals may be off",
      #p.kernels, #p.launches)
  end
  if (p.dropped_ranges or 0) > 0 then
    s.warning = string.format("the profiler dropped %d ranges: totals undercount", p.dropped_ranges)
  end

  -- hints, most telling first
  if s.dram_vs_model and s.dram_vs_model > 1.5 then
    hint("reuse", string.format("DRAM traffic is %.1fx the cost model's minimum (%s moved, %s needed): data is "
      .. "fetched from memory again and again; reuse it from shared memory or registers (tiling)",
      s.dram_vs_model, fmt_bytes(s.dram_bytes), fmt_bytes(cost.bytes)))
  end
  local sec, req = met["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], met["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
  if sec and req and req > 0 then
    s.sectors_per_request = sec / req
    if s.sectors_per_request > 8 then
      hint("coalescing", string.format("global loads touch %.1f sectors per request (4 is ideal for consecutive "
        .. "4-byte loads, 32 means every thread reads its own sector): uncoalesced; make consecutive threads "
        .. "(threadIdx.x) read consecutive addresses", s.sectors_per_request))
    end
  end
  local bc, wf = met["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"], met["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
  if bc and wf and wf > 0 then
    s.bank_conflict_frac = bc / wf
    if s.bank_conflict_frac > 0.1 then
      hint("bank_conflicts", string.format("shared-memory bank conflicts: %.0f%% of shared-memory wavefronts are "
        .. "replays; pad shared arrays (e.g. [32][33]) or change which thread reads which word", 100 * s.bank_conflict_frac))
    end
  end
  local ach, theo = s.occupancy.achieved, s.occupancy.theoretical
  if theo and theo < 50 then
    local why = ({
      registers = string.format("%d registers per thread; cap them with __launch_bounds__ or hold less state per thread",
        occ.registers or 0),
      ["shared memory"] = string.format("%s of shared memory per block; use smaller tiles or fewer buffers", fmt_bytes(occ.smem or 0)),
      ["block size"] = string.format("blocks of %d threads", occ.threads or 0),
      ["blocks per SM"] = string.format("small blocks (%d threads): at most %d blocks fit an SM; use larger blocks",
        occ.threads or 0, occ.blocks_per_sm or 0),
    })[occ.limiter] or occ.limiter
    hint("occupancy", string.format("theoretical occupancy %.0f%% (%d blocks per SM), limited by %s",
      theo, occ.blocks_per_sm, why))
  elseif ach and ach < 30 and theo and theo >= 50 then
    hint("occupancy", string.format("achieved occupancy %.0f%% of a theoretical %.0f%%: too few blocks for the "
      .. "GPU or uneven work; launch more (smaller) blocks", ach, theo))
  end
  for entry, r in pairs(p.resources or {}) do
    local lb = r.local_bytes or 0
    if lb > 0 or (r.spill_stores or 0) > 0 then
      hint("spills", string.format("%s uses %d B of local memory per thread (spills %s B stored): local memory goes "
        .. "through L1/L2; lower register pressure or index arrays with compile-time constants", entry, lb,
        tostring(r.spill_stores or 0)))
    end
  end
  local smt, dmt = met["sm__throughput.avg.pct_of_peak_sustained_elapsed"], met["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
  local tensor = met["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]
  local mt = met["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
  if s.bound == "memory" and dmt and dmt > 80 then
    hint("memory_roofline", string.format("DRAM is %.0f%% busy: the kernel is at the memory roofline; only moving "
      .. "fewer bytes helps (fusion, smaller types, better reuse)", dmt))
  elseif s.bound == "compute" and smt and smt > 60 and (tensor or 0) < 1 then
    hint("compute_roofline", string.format("the SMs are %.0f%% busy and the tensor pipes idle: near the CUDA-core "
      .. "limit; only fewer instructions per FLOP or tensor-core MMA (if the tolerance allows) raise the rate", smt))
  elseif mt and mt > 60 and (dmt or 0) < 0.5 * mt and (smt or 0) < mt then
    hint("memory_pipeline", string.format("the on-chip memory pipelines (L1/L2) are %.0f%% busy while DRAM is at %.0f%% "
      .. "and the SMs at %.0f%%: load/store traffic limits the kernel; coalesce accesses, load wider (float4) and "
      .. "reuse data from registers", mt, dmt or 0, smt or 0))
  elseif smt and dmt and smt < 30 and dmt < 30 and (mt or 0) < 30 then
    hint("latency", string.format("neither the SMs (%.0f%%) nor memory (%.0f%%) is busy: latency-bound; give each "
      .. "thread more independent work (ILP), keep more warps resident, or synchronize less", smt, math.max(dmt, mt or 0)))
  end
  if s.activity then
    if s.activity.kernels ~= s.activity.plan_kernels then
      hint("activity", string.format("CUPTI saw %d kernels for a launch plan of %d", s.activity.kernels or 0,
        s.activity.plan_kernels or 0))
    elseif s.activity.coverage < 0.9 and (s.activity.plan_kernels or 1) > 1 then
      hint("launch_gaps", string.format("the %d kernels run %.0f%% of the timed interval; gaps between launches cost "
        .. "the rest: fuse kernels", s.activity.plan_kernels, 100 * s.activity.coverage))
    elseif s.activity.coverage < 0.9 or s.activity.coverage > 1.1 then
      hint("timer_check", string.format("CUPTI's kernel records (%.4f ms) and the timed median (%.4f ms) differ by "
        .. "more than 10%%: treat the time with care", s.activity.kernel_ms, s.activity.basis_ms))
    end
  end
  return s
end

local function pct(v) return v and string.format("%.1f%%", v) or "-" end

-- Metric value as text, with its unit from the name.
function M.fmt_metric(name, v)
  if type(v) ~= "number" then return tostring(v) end
  if name:match("pct") or name:match("%.pct$") then return string.format("%.2f%%", v) end
  if name:match("^gpu__time_duration") then
    if v >= 1e6 then return string.format("%.4f ms", v / 1e6) end
    return string.format("%.2f us", v / 1e3)
  end
  if name:match("per_second") then
    if name:match("cycles") then return string.format("%.0f MHz", v / 1e6) end
    if name:match("bytes") then return string.format("%.3g GB/s", v / 1e9) end
    return string.format("%.4g /s", v)
  end
  if name:match("bytes") then return fmt_bytes(v) end
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
  return string.format("%.4g", v)
end

-- The roofline line: "compute-bound (intensity 683 FLOP/B >= ridge 12.4): 0.50 of 51.5 TFLOP/s, 1.0% of the ceiling"
function M.roofline_text(s)
  if not s.bound then return nil end
  local inten = s.intensity and string.format("%.3g", s.intensity) or "inf"
  if s.bound == "compute" then
    return string.format("compute-bound by the cost model (%s FLOP/B >= ridge %.3g): %.3g of %.3g TFLOP/s, %.1f%% of the %s ceiling",
      inten, s.ridge, s.achieved.tflops, s.ceilings.tflops, 100 * s.frac, s.peaks_source or "")
  end
  return string.format("memory-bound by the cost model (%s FLOP/B < ridge %.3g): %.3g of %.3g TB/s, %.1f%% of the %s ceiling",
    inten, s.ridge, s.achieved.tbps, s.ceilings.tbps, 100 * s.frac, s.peaks_source or "")
end

-- Compact text for an LLM prompt: the roofline line, the headline counters and hints.
function M.prompt_text(s)
  if type(s) ~= "table" then return false end
  local lines = {}
  local rl = M.roofline_text(s)
  if rl then lines[#lines + 1] = "- " .. rl end
  local met = s.metrics or {}
  local c = {}
  local function add(label, v) if v then c[#c + 1] = label .. " " .. v end end
  local function metric_pct(name) return met[name] and pct(met[name]) end
  add("SM throughput", metric_pct("sm__throughput.avg.pct_of_peak_sustained_elapsed"))
  add("DRAM throughput", metric_pct("dram__throughput.avg.pct_of_peak_sustained_elapsed"))
  add("memory pipelines", metric_pct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"))
  add("achieved occupancy", s.occupancy and s.occupancy.achieved and pct(s.occupancy.achieved))
  add("theoretical occupancy", s.occupancy and s.occupancy.theoretical and pct(s.occupancy.theoretical))
  add("L2 hit", met["lts__t_sector_hit_rate.pct"] and pct(met["lts__t_sector_hit_rate.pct"]))
  add("L1 hit", met["l1tex__t_sector_hit_rate.pct"] and pct(met["l1tex__t_sector_hit_rate.pct"]))
  add("DRAM moved", s.dram_bytes and fmt_bytes(s.dram_bytes))
  add("global-load sectors/request", s.sectors_per_request and string.format("%.1f", s.sectors_per_request))
  if #c > 0 then lines[#lines + 1] = "- counters: " .. table.concat(c, ", ") end
  for _, h in ipairs(s.hints or {}) do lines[#lines + 1] = "- " .. h.text end
  if s.no_counters then lines[#lines + 1] = "- hardware counters unavailable: " .. tostring(s.no_counters) end
  return #lines > 0 and table.concat(lines, "\n") or false
end

-- The full report `kloop profile` prints.
function M.text(s, names)
  local out = {}
  local function line(k, v) out[#out + 1] = string.format("%-12s %s", k, v) end
  if s.time_ms then line("time", string.format("%.4f ms (%s)", s.time_ms, s.time_source or "?")) end
  local rl = M.roofline_text(s)
  if rl then line("roofline", rl) end
  if s.dram_bytes then
    line("DRAM", string.format("%s moved, %.3g TB/s%s", fmt_bytes(s.dram_bytes), s.dram_tbps or 0,
      s.dram_vs_model and string.format(", %.2fx the cost model's bytes", s.dram_vs_model) or ""))
  end
  if s.occupancy and (s.occupancy.achieved or s.occupancy.theoretical) then
    line("occupancy", string.format("achieved %s, theoretical %s%s", pct(s.occupancy.achieved), pct(s.occupancy.theoretical),
      s.occupancy.limiter and (" (limited by " .. s.occupancy.limiter .. ")") or ""))
  end
  if s.activity then
    line("activity", string.format("%d kernel(s) recorded (plan: %d), %.4f ms of kernel time: %.1f%% of the %s (%.4f ms)",
      s.activity.kernels or 0, s.activity.plan_kernels or 0, s.activity.kernel_ms or 0, 100 * (s.activity.coverage or 0),
      s.activity.basis or "?", s.activity.basis_ms or 0))
  end
  if s.no_counters then line("counters", "unavailable: " .. tostring(s.no_counters)) end
  if s.metrics and next(s.metrics) then
    out[#out + 1] = string.format("metrics (%d replay passes%s):", s.passes or 0,
      s.replay and (", " .. s.replay .. " replay") or "")
    for _, n in ipairs(names or {}) do
      local v = s.metrics[n]
      if v ~= nil then
        out[#out + 1] = string.format("  %-62s %16s%s", n, M.fmt_metric(n, v), M.LABELS[n] and ("  " .. M.LABELS[n]) or "")
      end
    end
  end
  if #s.hints > 0 then
    out[#out + 1] = "hints:"
    for _, h in ipairs(s.hints) do out[#out + 1] = "  - " .. h.text end
  end
  return table.concat(out, "\n")
end

return M
