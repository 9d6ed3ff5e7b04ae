-- tests/store/fixture.lua: fills a store with fake but complete runs for the CLI transcripts.
-- usage: kloop tests/store/fixture.lua DB   (timestamps are fixed so output is stable)
local store = require("kloop.store.db")
local path = assert(arg[1], "usage: kloop tests/store/fixture.lua DB")
local db = assert(store.open(path))

local naive = [[
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
  C[i * N + j] = acc;
}
]]

local tiled = [[
#ifndef BM
#define BM 32
#endif
#ifndef BN
#define BN 32
#endif
// kloop: launch grid = {cdiv(N, BN), cdiv(M, BM)}, block = {BN, BM}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int i = blockIdx.y * BM + threadIdx.y, j = blockIdx.x * BN + threadIdx.x;
  if (i >= M || j >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
  C[i * N + j] = acc;
}
]]

local function ok_result(ms, extra)
  local r = { verdict = "ok", reason = "verified on 4 sizes x 2 input sets; timed", time_ms = ms,
    ci_ms = { ms * 0.99, ms * 1.01 }, min_ms = ms * 0.98, spread = 0.02, reps = 5,
    samples = { ms * 0.98, ms * 0.99, ms, ms * 1.01, ms * 1.02 },
    tflops = 2 * 4096 ^ 3 / (ms * 1e-3) / 1e12, gbps = 4 * 3 * 4096 ^ 2 / (ms * 1e-3) / 1e9,
    frac_peak = 0.1, bound = "compute", floor_ms = 0.05,
    resources = { gemm = { registers = 40, static_smem = 0, local_bytes = 0, spill_stores = 0, spill_loads = 0 } },
    compile_log = "", gpu = "NVIDIA H200", arch = "sm_90", compile_seconds = 0.2, eval_seconds = 1.5,
    wall_seconds = 1.8, created_at = "2026-01-02T10:00:00.000Z" }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local run = assert(db:begin_run {
  strategy_path = "strategies/beam.lua", strategy_text = "-- beam search\nreturn function() end\n",
  task_name = "sgemm", task_path = "kernels/gemm.cu", options = { beam = 4, llm = { model = "claude-x" } },
  budget = { candidates = 4, seconds = 600 }, seed = 42, kloop_version = "0.1.0", hostname = "gpu-box-1",
  pid = 4242, gpu_name = "NVIDIA H200", gpu_arch = "sm_90", driver_version = "13.0", cuda_version = "13.0",
  nvrtc_version = "13.0", started_at = "2026-01-02T10:00:00.000Z",
})
local c1 = assert(db:add_candidate(run, { source = naive, proposer = "baseline", name = "gemm.cu",
  created_at = "2026-01-02T10:00:01.000Z" }))
assert(db:add_evaluation(c1, ok_result(4.0)))
local c2 = assert(db:add_candidate(run, { source = tiled, proposer = "tune", parents = { c1 },
  params = { BM = 16, BN = 64 }, created_at = "2026-01-02T10:01:00.000Z" }))
assert(db:add_evaluation(c2, ok_result(1.25, { created_at = "2026-01-02T10:01:05.000Z" })))
local c3 = assert(db:add_candidate(run, { source = tiled:gsub("acc %+= ", "acc -= "), proposer = "llm", parents = { c2 },
  params = { BM = 16, BN = 64 }, model = "claude-x", prompt_id = "rewrite", prompt_hash = "9f2c01ab",
  sampling = { temperature = 0.7, max_tokens = 4096 }, llm_seed = 1234, tokens_in = 1800, tokens_out = 650,
  cost = 0.0123, created_at = "2026-01-02T10:02:00.000Z" }))
assert(db:add_evaluation(c3, { verdict = "wrong", reason = "check1 set 1: C[0] = -3.5 but the reference has 3.5",
  evidence = { case = "check1", set = 1, arg = "C", index = 0, out = -3.5, ref = 3.5, rel_err = 2, count = 98431 },
  compile_log = "", gpu = "NVIDIA H200", arch = "sm_90", created_at = "2026-01-02T10:02:04.000Z" }))
local faster = tiled:gsub("  float acc = 0.f;\n", "  float acc = 0.f;\n#pragma unroll 8\n")
local c4 = assert(db:add_candidate(run, { source = faster, proposer = "llm", parents = { c2, c1 },
  params = { BM = 16, BN = 64 }, model = "claude-x", prompt_id = "rewrite", prompt_hash = "9f2c01ab",
  sampling = { temperature = 0.7, max_tokens = 4096 }, llm_seed = 1235, tokens_in = 1900, tokens_out = 700,
  cost = 0.0131, created_at = "2026-01-02T10:03:00.000Z",
  launch_plan = { size = { M = 4096, N = 4096, K = 4096 },
    bench = { { entry = "gemm", grid = { 64, 256, 1 }, block = { 64, 16, 1 }, smem = 0 } } } }))
assert(db:add_evaluation(c4, ok_result(0.8, { created_at = "2026-01-02T10:03:06.000Z" })))
assert(db:add_llm_call(run, { candidate_id = c3, request_hash = "a1b2c3", model = "claude-x", latency_s = 12.5,
  http_status = 200, tokens_in = 1800, tokens_out = 650, retries = 0, cost = 0.0123 }))
assert(db:add_llm_call(run, { candidate_id = c4, request_hash = "d4e5f6", model = "claude-x", latency_s = 14.1,
  http_status = 200, tokens_in = 1900, tokens_out = 700, retries = 1, cost = 0.0131 }))
assert(db:end_run(run, "done", "budget exhausted", "2026-01-02T10:04:00.000Z"))

-- a second run, killed: still marked running, its writer (pid 999999999) long gone
local run2 = assert(db:begin_run { strategy_path = "strategies/tune.lua", strategy_text = "-- tune\n",
  task_name = "sgemm", task_path = "kernels/gemm.cu", seed = 7, hostname = (io.open("/proc/sys/kernel/hostname"):read("*l")),
  pid = 999999999, kloop_version = "0.1.0", started_at = "2026-01-03T08:00:00.000Z" })
local d1 = assert(db:add_candidate(run2, { source = naive, proposer = "baseline", created_at = "2026-01-03T08:00:01.000Z" }))
assert(db:add_evaluation(d1, ok_result(4.1, { created_at = "2026-01-03T08:00:03.000Z" })))
assert(db:add_candidate(run2, { source = tiled, proposer = "tune", parents = { d1 }, params = { BM = 32, BN = 32 },
  created_at = "2026-01-03T08:00:04.000Z" }))
db:close()
print(string.format("runs %d, %d", run, run2))
