-- kloop: the documented module every strategy and REPL session uses.
local kloop = {}

kloop.api_version = 1

local lazy = {
  core = "kloop.core", util = "kloop.util", doctor = "kloop.doctor",
}

setmetatable(kloop, {
  __index = function(t, k)
    local mod = lazy[k]
    if mod then
      local v = require(mod)
      rawset(t, k, v)
      return v
    end
  end,
})

function kloop.version()
  return require("kloop.core").version()
end

return kloop
