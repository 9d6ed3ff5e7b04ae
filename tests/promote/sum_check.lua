-- tests/promote/sum_check.lua: a host task with a check function and no reference: s[0]
-- is the float sum of x, checked in Lua against a float64 sum (docs/TASKS.md "Check
-- functions"; tests/spec/check_fn_spec.lua).
return kloop.task {
  name = "sum_check", entry = "sum",
  args = {
    { "N", "int" },
    { "x", "const float*", size = "N", init = "uniform(0,1)" },
    { "s", "float*", size = 1, output = true },
  },
  sizes = { bench = { N = 65536 }, check = { { N = 1000 }, { N = 1 } }, promote = { N = { max = 1048576 } } },
  check = function(c)
    local x, s = c.input("x"), c.output("s")
    local want = 0
    for i = 0, #x - 1 do want = want + x[i] end
    local err = math.abs(s[0] - want)
    if err > 1e-4 * math.max(1, math.abs(want)) then
      return false, string.format("s = %.9g, the float64 sum is %.9g", s[0], want)
    end
    return true
  end,
  cost = function(s) return { flops = s.N, bytes = 4 * s.N } end,
}
