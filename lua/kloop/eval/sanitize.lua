-- kloop.eval.sanitize: the sanitizer step of a promotion (docs/PROMOTION.md). CUDA: the
-- worker runs under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) and
-- verifies the candidate on one small size. Host (.c): the candidate is linked with a
-- harness into an AddressSanitizer + UBSan executable that runs once on a small size in
-- its own sandboxed process (seccomp deny-list, rlimits, no writes, no exec). A missing
-- tool, or a device the tool refuses, is a skip with its reason, never a pass.
-- Each check returns {status = "passed"|"failed"|"skipped", reason, evidence}.
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local proc = require("kloop.core.proc")
local taskmod = require("kloop.eval.task")
local compile_host = require("kloop.eval.compile_host")
local hidden = require("kloop.eval.hidden_sizes")

local M = {}

M.CUDA_TOOLS = { "memcheck", "racecheck", "synccheck", "initcheck" }
M.QUOTE_LINES = 12
M.ERROR_EXIT = 86

-- Where a sanitizer runs: the smallest declared check size with at least this many
-- bytes of buffers (cheap, yet more than one thread's work).
M.MIN_BYTES = 16384

function M.small_size(task)
  -- the smallest declared check size that still has some work in it (16 KiB of buffers:
  -- a race between threads needs more than one thread, and N = 1 has one); else the
  -- largest check size; a sanitizer slows a kernel 10-100x, so never the bench size
  local sized = {}
  for _, s in ipairs(task.sizes.check) do sized[#sized + 1] = { s = s, b = hidden.bytes_at(task, s) or math.huge } end
  table.sort(sized, function(a, b) return a.b < b.b end)
  for _, x in ipairs(sized) do
    if x.b >= M.MIN_BYTES then return x.s end
  end
  return sized[#sized] and sized[#sized].s or task.sizes.bench
end

-- A copy of the task that verifies on `list` only (the last one as its bench case).
function M.task_with_sizes(task, list)
  local t = {}
  for k, v in pairs(task) do t[k] = v end
  local check = {}
  for i = 1, #list - 1 do check[i] = list[i] end
  t.sizes = { check = check, bench = list[#list], hidden = task.sizes.hidden, promote = task.sizes.promote }
  return t
end

-- Verification only (no timing) of cand = {source, defines} by evaluator e: a result
-- table (submit, as the sentinel does: an untimed result has no rates to derive).
function M.verify_only(e, cand)
  return e:submit("evaluate", cand.source, { defines = cand.defines }, { verify_only = true })
end

-- compute-sanitizer: $KLOOP_CUDA_HOME/bin, the toolkit's usual place, then PATH.
function M.find_compute_sanitizer()
  local home = os.getenv("KLOOP_CUDA_HOME")
  for _, p in ipairs({ home and (home .. "/bin/compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer" }) do
    if p and util.file_exists(p) then return p end
  end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local p = dir .. "/compute-sanitizer"
    if util.file_exists(p) then return p end
  end
  return nil
end

-- The first lines of a report worth quoting (blank lines and the banner dropped).
local function quote(text, n)
  local out = {}
  for line in (text or ""):gmatch("[^\n]+") do
    local l = line:gsub("%s+$", "")
    if l ~= "" and l ~= "=========" and not l:match("^=+ COMPUTE%-SANITIZER$") and not l:match("^=+$") then
      out[#out + 1] = l
      if #out >= (n or M.QUOTE_LINES) then break end
    end
  end
  return out
end
M.quote = quote

-- Reads one compute-sanitizer log: "errors" (with the count), "clean", or "skipped" (why).
function M.read_cuda_log(text)
  text = text or ""
  if text:find("Device not supported", 1, true) or text:find("is not supported on this", 1, true)
    or text:find("Unable to find injection library", 1, true)
    or text:find("Target application terminated before first instrumented API call", 1, true) then
    local why = text:match("([^\n]*not supported[^\n]*)") or text:match("([^\n]*Unable to find[^\n]*)")
      or text:match("([^\n]*terminated before first[^\n]*)")
    return "skipped", (why or "the tool refused the device"):gsub("^=+%s*", "")
  end
  -- memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
  -- "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
  local n = text:match("ERROR SUMMARY: (%d+) error")
    or text:match("RACECHECK SUMMARY: %d+ hazards? displayed %((%d+) errors?")
  if not n then return "skipped", "the tool wrote no summary (it did not finish)" end
  n = tonumber(n)
  if n > 0 then return "errors", n end
  return "clean", 0
end

-- Runs the candidate's verification on one size under each compute-sanitizer tool.
-- cand = {source, defines}; opts = {secret, evaluator_opts, tools, log}.
function M.cuda(task, cand, opts)
  local evaluator = require("kloop.eval.evaluator")
  local tool_path = M.find_compute_sanitizer()
  if not tool_path then
    return { status = "skipped", reason = "compute-sanitizer not found ($KLOOP_CUDA_HOME/bin, /usr/local/cuda/bin, PATH)",
      evidence = { tool = "compute-sanitizer", found = false } }
  end
  local small = M.small_size(task)
  local t = M.task_with_sizes(task, { small })
  local ev = { tool = tool_path, size = small, tools = {} }
  local failed, skipped = {}, {}
  for _, tool in ipairs(opts.tools or M.CUDA_TOOLS) do
    local log = os.tmpname()
    local eopts = { secret = opts.secret .. "/sanitize/" .. tool, nsets = 1, measure_peaks = false, guards = false,
      deadline = 600, close_grace_ms = 120000,
      worker_prefix = { tool_path, "--tool", tool, "--error-exitcode", tostring(M.ERROR_EXIT), "--log-file", log,
        "--print-limit", "20" } }
    for k, v in pairs(opts.evaluator_opts or {}) do if eopts[k] == nil then eopts[k] = v end end
    local e = evaluator.new(t, eopts)
    local t0 = sys.now()
    local r = M.verify_only(e, cand)
    local guards_off = e.guards_off
    e:close()
    local text = util.read_file(log) or ""
    os.remove(log)
    local kind, n = M.read_cuda_log(text)
    local entry = { tool = tool, verdict = r.verdict, reason = r.reason, seconds = sys.now() - t0,
      guard_zones = guards_off and "off" or "on (the worker protocol has no switch yet)" }
    if kind == "errors" then
      entry.status, entry.errors, entry.quote = "failed", n, quote(text)
      failed[#failed + 1] = entry
    elseif kind == "skipped" then
      entry.status, entry.reason = "skipped", n
      skipped[#skipped + 1] = entry
    elseif r.verdict ~= "ok" then
      -- clean under the tool but not verified there: the run says nothing either way
      entry.status = r.infrastructure and "skipped" or "failed"
      entry.reason = "under " .. tool .. ": " .. tostring(r.verdict) .. ": " .. tostring(r.reason)
      entry.quote = quote(text)
      if entry.status == "failed" then failed[#failed + 1] = entry else skipped[#skipped + 1] = entry end
    else
      entry.status = "passed"
    end
    ev.tools[#ev.tools + 1] = entry
    if opts.log then opts.log(string.format("  %s: %s", tool, entry.status)) end
  end
  if #failed > 0 then
    local f = failed[1]
    return { status = "failed", evidence = ev, reason = string.format("%s at %s: %s", f.tool,
      hidden.describe(small), f.errors and (f.errors .. " error(s): " .. (f.quote[1] or "")) or f.reason) }
  end
  if #skipped == #ev.tools then
    return { status = "skipped", evidence = ev, reason = "compute-sanitizer did not run: " .. tostring(skipped[1].reason) }
  end
  local names = {}
  for _, x in ipairs(ev.tools) do if x.status == "passed" then names[#names + 1] = x.tool end end
  local reason = "clean under " .. table.concat(names, ", ") .. " at " .. hidden.describe(small)
  if #skipped > 0 then reason = reason .. " (" .. skipped[1].tool .. " skipped: " .. tostring(skipped[1].reason) .. ")" end
  return { status = "passed", reason = reason, evidence = ev }
end

---------------------------------------------------------------------------
-- Host: the harness.

local C_SCALAR = { f32 = "float", f64 = "double", i32 = "int32_t", u32 = "uint32_t", i64 = "int64_t",
  u8 = "uint8_t", i8 = "int8_t" }
local DTYPE_CODE = { f32 = 0, f64 = 1, i32 = 2, u32 = 3, i64 = 4, u8 = 5, i8 = 6 }
local DIST_CODE = { uniform = 0, normal = 1, int = 2, const = 3 }

M.harness_prelude = [[
/* kloop sanitizer harness (kloop.eval.sanitize): runs the candidate once on exact-size
   heap buffers under AddressSanitizer and UBSan. The sandbox is entered from
   .preinit_array, after the sanitizer's runtime and before any constructor of the
   candidate: no exec, fork, sockets, signals to others or file writes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sched.h>
#if defined(__x86_64__)
#define KL_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KL_ARCH AUDIT_ARCH_AARCH64
#endif
#define KL_DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
static void kl_sandbox(void) {
  struct rlimit cpu = { KL_CPU_SECONDS, KL_CPU_SECONDS }, none = { 0, 0 };
  signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_CPU, &cpu);
  setrlimit(RLIMIT_FSIZE, &none);
  setrlimit(RLIMIT_CORE, &none);
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KL_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    KL_DENY(__NR_execve), KL_DENY(__NR_execveat),
#ifdef __NR_fork
    KL_DENY(__NR_fork), KL_DENY(__NR_vfork),
#endif
    KL_DENY(__NR_socket), KL_DENY(__NR_ptrace), KL_DENY(__NR_kill), KL_DENY(__NR_process_vm_writev),
    KL_DENY(__NR_mount), KL_DENY(__NR_unshare), KL_DENY(__NR_setns),
    KL_DENY(__NR_unlinkat), KL_DENY(__NR_renameat2), KL_DENY(__NR_mkdirat), KL_DENY(__NR_fchmodat),
#ifdef __NR_unlink
    KL_DENY(__NR_unlink), KL_DENY(__NR_rename), KL_DENY(__NR_renameat), KL_DENY(__NR_rmdir), KL_DENY(__NR_mkdir),
    KL_DENY(__NR_chmod), KL_DENY(__NR_creat), KL_DENY(__NR_truncate),
#endif
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    /* clone: threads only */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* openat for writing */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "kloop sanitizer harness: cannot enter the sandbox\n");
    _exit(70);
  }
}
__attribute__((section(".preinit_array"), used)) static void (*kl_preinit)(void) = kl_sandbox;

static uint64_t kl_state;
static double kl_unit(void) { /* xorshift64*, [0, 1) */
  kl_state ^= kl_state >> 12; kl_state ^= kl_state << 25; kl_state ^= kl_state >> 27;
  return (double)((kl_state * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}
static void *kl_buffer(size_t count, int dtype, int dist, double a, double b, uint64_t seed, int fill) {
  static const size_t sz[] = { 4, 8, 4, 4, 8, 1, 1 };
  void *p = malloc(count * sz[dtype] ? count * sz[dtype] : 1);
  if (!p) { fprintf(stderr, "kloop sanitizer harness: out of memory\n"); exit(71); }
  kl_state = seed | 1;
  for (size_t i = 0; i < count; ++i) {
    double v;
    if (!fill) v = NAN;
    else if (dist == 0) v = a + (b - a) * kl_unit();
    else if (dist == 1) v = a + b * (kl_unit() + kl_unit() + kl_unit() - 1.5) * 2.0;
    else if (dist == 2) v = floor(a + (b - a + 1) * kl_unit());
    else v = a;
    switch (dtype) {
    case 0: ((float *)p)[i] = (float)v; break;
    case 1: ((double *)p)[i] = v; break;
    case 2: ((int32_t *)p)[i] = fill ? (int32_t)v : -1; break;
    case 3: ((uint32_t *)p)[i] = fill ? (uint32_t)v : 0xFFFFFFFFu; break;
    case 4: ((int64_t *)p)[i] = fill ? (int64_t)v : -1; break;
    case 5: ((uint8_t *)p)[i] = fill ? (uint8_t)v : 0xFF; break;
    default: ((int8_t *)p)[i] = fill ? (int8_t)v : -1; break;
    }
  }
  return p;
}
]]

-- The harness source for a task at one size: main() allocates every buffer exactly,
-- fills the inputs from their first distribution, calls the entry once, frees.
-- Returns the C text, or nil, why (a type the harness does not know).
function M.harness(task, size, seed, cpu_seconds)
  local args = taskmod.concrete_args(task, size, taskmod.default_point(task.params))
  local proto, decl, call, frees = {}, {}, {}, {}
  for i, a in ipairs(task.args) do
    if a.pointer then
      if not DTYPE_CODE[a.dtype] then return nil, "the harness has no host type for " .. a.dtype end
      local d = a.dists and a.dists[1] or { kind = "const", a = 0, b = 0 }
      proto[i] = "void *"
      decl[#decl + 1] = string.format("  void *a%d = kl_buffer(%dULL, %d, %d, %.17g, %.17g, %dULL, %d); /* %s */", i,
        args[i].count, DTYPE_CODE[a.dtype], DIST_CODE[d.kind] or 3, d.a or 0, d.b or 0, (seed + i) % 2^52,
        a.role == "output" and 0 or 1, a.name:gsub("%*/", ""))
      frees[#frees + 1] = string.format("  free(a%d);", i)
    else
      local ct = C_SCALAR[a.dtype]
      if not ct then return nil, "the harness has no host type for " .. a.dtype end
      proto[i] = ct
      decl[#decl + 1] = string.format("  %s a%d = (%s)%.17g;", ct, i, ct, args[i].value)
    end
    call[i] = "a" .. i
  end
  return table.concat({
    "#define KL_CPU_SECONDS " .. math.floor(cpu_seconds or 60),
    M.harness_prelude,
    string.format("void %s(%s);", task.entry, table.concat(proto, ", ")),
    "int main(void) {",
    table.concat(decl, "\n"),
    string.format("  %s(%s);", task.entry, table.concat(call, ", ")),
    table.concat(frees, "\n"),
    '  fprintf(stderr, "kloop sanitizer harness: done\\n");',
    "  return 0;",
    "}", "" }, "\n")
end

-- What a sanitized run's output says: "errors" with the quoted lines, or "clean".
function M.read_host_output(text)
  text = text or ""
  local first = text:find("ERROR: AddressSanitizer", 1, true) or text:find("runtime error:", 1, true)
    or text:find("ERROR: LeakSanitizer", 1, true) or text:find("ERROR: UndefinedBehaviorSanitizer", 1, true)
  if first then
    local from = text:sub(1, first):match(".*\n()") or 1
    return "errors", quote(text:sub(from))
  end
  return "clean"
end

M.HOST_ENV = "ASAN_OPTIONS=detect_leaks=0:exitcode=86:abort_on_error=0:symbolize=1:allocator_may_return_null=1"
  .. " UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87"

-- The host sanitizer run: build (ASan + UBSan), run once on the small size.
-- cand = {source, defines}; opts = {secret, deadline}.
function M.host(task, cand, opts)
  local small = M.small_size(task)
  local seed = tonumber(sys.hash64((opts.secret or "") .. "/sanitize", 0) % 0x10000000000000ULL)
  local ev = { tool = "AddressSanitizer + UBSan (" .. compile_host.cc() .. ")", size = small }
  local harness, herr = M.harness(task, small, seed, opts.cpu_seconds)
  if not harness then return { status = "skipped", reason = herr, evidence = ev } end
  local b = compile_host.build_sanitized(cand.source, harness,
    { dir = task.dir, options = task.options, defines = taskmod.size_defines(task, small, cand.defines), name = "candidate.c" })
  ev.build_seconds = b.seconds
  if b.rejected then return { status = "failed", reason = "refused before building: " .. tostring(b.log), evidence = ev } end
  if not b.ok then
    ev.build_log = quote(b.log)
    if b.timeout then return { status = "skipped", reason = "the sanitizer build ran past its deadline", evidence = ev } end
    if (b.log or ""):find("asan", 1, true) or (b.log or ""):find("ubsan", 1, true) or (b.log or ""):find("sanitize", 1, true) then
      return { status = "skipped", reason = "cc cannot build with -fsanitize=address,undefined here: "
        .. tostring(ev.build_log[1]), evidence = ev }
    end
    return { status = "failed", reason = "the candidate does not build with the sanitizers: " .. tostring(ev.build_log[1]),
      evidence = ev }
  end
  local t0 = sys.now()
  local p, perr = proc.spawn({ "/bin/sh", "-c", "exec env " .. M.HOST_ENV .. ' "$0"', b.exe }, { "PATH", "LANG", "LC_" })
  if not p then return { status = "skipped", reason = "cannot start the sanitizer build: " .. tostring(perr), evidence = ev } end
  local ok, why = p:close(math.floor((opts.deadline or 120) * 1000))
  local out = p:tail():gsub(util.escape_pattern(b.dir .. "/"), "")
  local status = p:exit_status()
  sys.rm_rf(b.dir) -- (not os.execute: system() would drop a Ctrl-C meanwhile)
  ev.seconds = sys.now() - t0
  local kind, lines = M.read_host_output(out)
  ev.exit_status = status
  if kind == "errors" then
    ev.quote = lines
    return { status = "failed", evidence = ev,
      reason = string.format("AddressSanitizer/UBSan at %s: %s", hidden.describe(small),
        out:match("SUMMARY: ([^\n]+)") or lines[1] or "an error") }
  end
  if not ok and why == "timeout" then
    return { status = "failed", evidence = ev, reason = string.format("did not finish within %.0f s under the sanitizers",
      opts.deadline or 120) }
  end
  if status and status < 256 and status % 128 == 31 then
    return { status = "failed", evidence = ev, reason = "the harness's sandbox stopped a forbidden system call" }
  end
  if status ~= 0 then
    ev.quote = quote(out)
    return { status = "failed", evidence = ev, reason = string.format("the sanitized run exited with status %s: %s",
      tostring(status), ev.quote[#ev.quote] or "no output") }
  end
  return { status = "passed", evidence = ev, reason = "clean under AddressSanitizer and UBSan at " .. hidden.describe(small) }
end

-- The step for a task's backend.
function M.run(task, cand, opts)
  if task.backend == "host" then return M.host(task, cand, opts) end
  return M.cuda(task, cand, opts)
end

return M
