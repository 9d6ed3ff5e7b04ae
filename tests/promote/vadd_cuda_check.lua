-- tests/promote/vadd_cuda_check.lua: the CUDA vadd with a check function and no
-- reference (docs/TASKS.md "Check functions"): z[i] against x[i] + y[i] in float64.
-- The bench size is small: the check runs interpreted, under the 5 s sidecar deadline.
return kloop.task {
  name = "vadd_cuda_check", entry = "vadd", kernel = "vadd_cuda.cu",
  args = {
    { "N", "int" },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "z", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 262144 }, check = { { N = 4097 }, { N = 1 } } },
  launch = function(s) return { grid = { cdiv(s.N, 256) }, block = { 256 } } end,
  check = function(c)
    local x, y, z = c.input("x"), c.input("y"), c.output("z")
    for i = 0, z.n - 1 do
      local want = x[i] + y[i]
      if math.abs(z[i] - want) > 1e-6 * math.max(1, math.abs(want)) then
        return false, string.format("z[%d] = %.9g, x + y = %.9g", i, z[i], want)
      end
    end
    return true
  end,
  cost = function(s) return { flops = s.N, bytes = 12 * s.N } end,
}
