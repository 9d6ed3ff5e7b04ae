-- tests/spec/cli_spec.lua: script lookup and argument handling of kloop.cli.
local cli = require("kloop.cli")

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
    local exe = require("kloop.core").exe_path()
    local cmd = string.format("cd %s && KLOOP_PATH=/nonexistent:%s/extra %s mystrat; echo rc=$?",
      tmp, tmp, exe)
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    assert.matches("found " .. tmp .. "/extra/mystrat.lua", out, 1, true)
    assert.matches("rc=0", out, 1, true)
  end)
end)
