-- tests/spec/cli_spec.lua: script lookup and argument handling of kloop.cli.
local cli = require("kloop.cli.main")

describe("kloop.cli.resolve_script", function()
  local tmp = os.tmpname()
  os.remove(tmp)
  os.execute("mkdir -p " .. tmp .. "/extra")
  local f = assert(io.open(tmp .. "/extra/mystrat.lua", "w"))
  f:write("print(\"found \" .. arg[0])\n")
  f:close()

  it("finds a path as given", function()
    local p = cli.resolve_script(tmp .. "/extra/mystrat.lua")
    assert.are.equal(tmp .. "/extra/mystrat.lua", p)
  end)

  it("names every place it tried on a miss", function()
    local p, err = cli.resolve_script("surely_not_a_strategy")
    assert.is_nil(p)
    assert.matches("strategies/surely_not_a_strategy.lua", err, 1, true)
    assert.matches("KLOOP_PATH", err, 1, true)
  end)

  it("searches KLOOP_PATH for bare names", function()
    -- os.getenv cannot be changed from Lua: run a child kloop with the variable set.
    local exe = require("kloop.core.sys").exe_path()
    local cmd = string.format("cd %s && KLOOP_PATH=/nonexistent:%s/extra %s mystrat; echo rc=$?",
      tmp, tmp, exe)
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    assert.matches("found " .. tmp .. "/extra/mystrat.lua", out, 1, true)
    assert.matches("rc=0", out, 1, true)
  end)
end)

-- Numeric options, seeds and resume (issue 13): each case failed on the code before.
describe("kloop.driver options", function()
  local driver = require("kloop.search.driver")
  local S = { name = "t", propose = function() end, options = { { "width", 4, "w" }, { "explore_c", 0.5, "c" } } }

  it("refuses counts that are not whole numbers >= 1, negative seconds and bad seeds", function()
    for _, args in ipairs({ { "--budget", "-1" }, { "--budget", "1.5" }, { "--batch", "0" }, { "--time", "-5" },
        { "--timing-budget", "-1" }, { "--seed", "-3" }, { "--seed", "1.5" }, { "--budget", "nan" },
        { "--width", "0" }, { "--explore-c", "-1" }, { "--llm-timeout", "-2" }, { "--llm-max-reply", "lots" } }) do
      local strat = S
      if args[1] == "--batch" then strat = { propose = function() end, options = { { "batch", 4, "b" } } } end
      local opts, err = driver.parse(strat, { args[1], args[2], "x.c" })
      assert.is_nil(opts, args[1] .. " " .. args[2])
      assert.matches("^" .. args[1]:gsub("%-", "%%-") .. " ", err)
    end
    local opts = assert(driver.parse(S, { "--budget", "3", "--seed", "4503599627370495", "--time=0", "x.c" }))
    assert.are.equal(3, opts.budget)
    assert.are.equal(4503599627370495, opts.seed)
  end)

  it("exits 2 with one clear line on a bad value", function()
    local exe = require("kloop.core.sys").exe_path()
    local p = io.popen(exe .. " strategies/tune.lua examples/cpu/sgemm.c --budget 1.5 --no-store 2>&1; echo rc=$?")
    local out = p:read("*a")
    p:close()
    assert.matches("kloop: --budget 1.5: give a whole number >= 1", out, 1, true)
    assert.matches("rc=2", out, 1, true)
  end)

  it("prints a drawn seed exactly, and a run with it repeats the same candidates", function()
    local rng = require("kloop.search.rng")
    for _ = 1, 20 do
      local s = rng.fresh_seed()
      assert.are.equal(s, tonumber(tostring(s)))
      assert.are.equal(s, tonumber(rng.format(s)))
    end
    local exe = require("kloop.core.sys").exe_path()
    local tmp = os.tmpname()
    local function run(seed_arg)
      local cmd = string.format("%s strategies/tune.lua examples/cpu/sgemm_blocked.c"
        .. " --budget 4 --batch 2 --explore 1 --timing-budget 0.02 --db %s %s 2>&1",
        exe, tmp .. ".db", seed_arg)
      local p = io.popen(cmd)
      local out = p:read("*a")
      p:close()
      return out
    end
    local out1 = run("")
    local seed = out1:match("seed (%d+)")
    assert.is_string(seed, out1)
    local out2 = run("--seed " .. seed)
    assert.matches("seed " .. seed .. "\n", out2, 1, true)
    local db = assert(require("kloop.store.db").open(tmp .. ".db"))
    local runs = db:query("SELECT id, seed FROM runs ORDER BY id")
    assert.are.equal(tonumber(seed), runs[1].seed)
    assert.are.equal(tonumber(seed), runs[2].seed)
    local function seq(id)
      local t = {}
      for _, r in ipairs(db:query("SELECT params_json FROM candidates WHERE run_id = ? ORDER BY id", id)) do
        local p = r.params_json and require("cjson").decode(r.params_json) or {}
        local kv = {}
        for _, k in ipairs(require("kloop.util").sorted_keys(p)) do kv[#kv + 1] = k .. "=" .. tostring(p[k]) end
        t[#t + 1] = table.concat(kv, ",")
      end
      return table.concat(t, ";")
    end
    assert.are.equal(seq(runs[1].id), seq(runs[2].id))
    assert.is_true(#seq(runs[1].id) > 4)
    -- the run was made by tune: beam may not continue it unless forced
    local p = io.popen(string.format("%s beam examples/cpu/sgemm_blocked.c --resume %d --db %s --proposer tune 2>&1; echo rc=$?",
      exe, runs[1].id, tmp .. ".db"))
    local out3 = p:read("*a")
    p:close()
    assert.matches("was made by tune, not beam", out3, 1, true)
    assert.matches("rc=1", out3, 1, true)
    db:close()
    os.remove(tmp .. ".db")
  end)
end)
