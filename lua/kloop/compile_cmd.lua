-- kloop.compile_cmd: `kloop compile TARGET`: compile only (no GPU needed); log and resources.
local args = require("kloop.args")
local taskmod = require("kloop.task")
local compile = require("kloop.compile")
local util = require("kloop.util")
local cjson = require("cjson")

local M = {}

M.usage = [[
usage: kloop compile TARGET [--candidate FILE] [--arch sm_90] [--params K=V,...] [--json]

Compiles the task's kernel (or FILE) with NVRTC to a cubin for ARCH (default sm_90),
or, for a .c task, with the system C compiler (cc, -O3 -march=native) to a shared object,
through the same include and option fences as an evaluation; prints the log and the
resource usage (registers, shared memory, stack, spills). Works without a GPU.
Exit: 0 compiled, 3 did not compile (or was rejected), 1 error, 2 bad usage.
]]

function M.main(argv)
  local opts, pos = args.parse(argv, { ["--candidate"] = "value", ["--arch"] = "value", ["--json"] = "flag",
    ["--params"] = "value", ["--no-cache"] = "flag", ["-h"] = "flag", ["--help"] = "flag" })
  if not opts then util.eprintf("kloop compile: %s\n%s", pos, M.usage) return 2 end
  if opts.h or opts.help then io.stdout:write(M.usage) return 0 end
  if #pos ~= 1 then util.eprintf("kloop compile: give one TARGET\n%s", M.usage) return 2 end
  local task, err = taskmod.load(pos[1])
  if not task then util.eprintf("kloop compile: %s\n", err) return 1 end
  local src, name = task.source, util.basename(task.kernel)
  if opts.candidate then
    src = util.read_file(opts.candidate)
    if not src then util.eprintf("kloop compile: cannot read candidate %s\n", opts.candidate) return 1 end
    name = util.basename(opts.candidate)
  end
  local defines, derr = args.defines(opts.params)
  if not defines then util.eprintf("kloop compile: --params: %s\n", derr) return 2 end
  local compiler = task.backend == "host" and require("kloop.compile_host") or compile
  local arch = task.backend == "host" and "host" or (opts.arch or "sm_90")
  local job = compiler.compile(src, { arch = arch, dir = task.dir, options = task.options,
    defines = defines, name = name, no_cache = opts.no_cache })
  local verdict = job.ok and "ok" or (job.rejected and "rejected" or "compile_error")
  if opts.json then
    print(cjson.encode({ verdict = verdict, log = job.rejected and job.log or compile.filter_log(job.log), resources = job.resources,
      seconds = job.seconds, cached = job.cached or false, cubin = job.cubin_path }))
  else
    print(string.format("%s: %s (%s, %.2f s%s)", name, verdict, arch, job.seconds or 0,
      job.cached and ", cached" or ""))
    local log = job.rejected and job.log or compile.filter_log(job.log)
    if log ~= "" then print(log) end
    for _, entry in ipairs(util.sorted_keys(job.resources or {})) do
      local r = job.resources[entry]
      print(string.format("  %s: %d registers, %d B static smem, %d B stack, spills %d B stores / %d B loads",
        entry, r.registers, r.static_smem, r.stack_bytes, r.spill_stores, r.spill_loads))
    end
  end
  return job.ok and 0 or 3
end

return M
