-- tests/spec/support/sim_gemm.lua: helpers to write gemm "kernels" for the sim backend.
local ffi = require("ffi")
local M = {}
-- Decodes gemm parameters (M, N, K, A, B, C) from a kernel parameter array.
function M.args(params, cdtype)
  local function int(i) return ffi.cast("int32_t*", params[i])[0] end
  local function p(i, t) return ffi.cast(t, ffi.cast("uint64_t*", params[i])[0]) end
  return int(0), int(1), int(2), p(3, "float*"), p(4, "float*"), p(5, cdtype or "float*")
end
function M.gemm(Mm, N, K, A, B, C, acc_type)
  for r = 0, Mm - 1 do
    for c = 0, N - 1 do
      local acc = 0
      for k = 0, K - 1 do acc = acc + A[r * K + k] * B[k * N + c] end
      C[r * N + c] = acc
    end
  end
end
return M
