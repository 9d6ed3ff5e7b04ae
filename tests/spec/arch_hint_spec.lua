-- tests/spec/arch_hint_spec.lua: NVML's arch hint (kloop.core.gpu arch_hint) is a hint:
-- where NVML is missing (this build machine, a container without the driver) or names
-- no GPU it is nil, never an error, and the driver's prespawn then starts no compiles;
-- where it names one it is an sm_NN arch (tests/gpu/probe.lua checks it against the probe).
local gpu = require("kloop.core.gpu")

describe("NVML's arch hint", function()
  it("is nil or an arch, and never raises", function()
    local ok, hint = pcall(gpu.arch_hint, 0)
    assert.is_true(ok, tostring(hint))
    assert.is_true(hint == nil or (type(hint) == "string" and hint:match("^sm_%d+$") ~= nil), tostring(hint))
    local ok2, far = pcall(gpu.arch_hint, 63)
    assert.is_true(ok2, tostring(far))
    if hint == nil then assert.is_nil(far) end
  end)
end)
