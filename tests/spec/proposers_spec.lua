-- tests/spec/proposers_spec.lua: which proposer the built-in strategies get: a load error
-- in the LLM proposer is a bug and shows, never a silent fall back to tune.
local proposers = require("kloop.search.proposers")
local taskmod = require("kloop.eval.task")

describe("kloop.search.proposers.choose", function()
  local NAME = "kloop.search.proposer_llm"
  local saved_loaded, saved_preload

  before_each(function()
    saved_loaded, saved_preload = package.loaded[NAME], package.preload[NAME]
    package.loaded[NAME] = nil
  end)
  after_each(function()
    package.loaded[NAME], package.preload[NAME] = saved_loaded, saved_preload
  end)

  local function ctx_for(opts)
    return { task = assert(taskmod.load("kernels/gemm_tiled.lua")), opts = opts }
  end

  it("lets a load error of the LLM proposer surface when a model is configured", function()
    package.preload[NAME] = function() error("proposer_llm.lua:12: attempt to call a nil value (a bug)") end
    local ok, err = pcall(proposers.choose, ctx_for({ proposer = "auto", model = "gpt-4o" }))
    assert.is_false(ok, "fell back to " .. tostring(type(err) == "table" and err.name or err))
    assert.matches("attempt to call a nil value (a bug)", tostring(err), 1, true)
  end)

  it("falls back to tune when no model is configured (llm.new says so)", function()
    package.preload[NAME] = function() return { new = function() return nil, "no model configured" end } end
    local p = proposers.choose(ctx_for({ proposer = "auto", model = "" }))
    assert.are.equal("tune", p.name)
    local ok, err = pcall(proposers.choose, ctx_for({ proposer = "llm", model = "" }))
    assert.is_false(ok)
    assert.matches("no model configured", tostring(err), 1, true)
  end)
end)
