-- tests/spec/layering_spec.lua: the layers of the Lua library (docs/ARCHITECTURE.md): the
-- core's kl_* functions are called only by their wrappers (lua/kloop/core/*.lua) and by
-- the backends of their own area (lua/kloop/worker/backend_*.lua).
local core = require("kloop.core.ffi")
local native = require("kloop.native")

-- Every function kloop.h declares.
local function declared()
  local names = {}
  for name in core.cdef_text():gmatch("[%s%*](kl_[%w_]+)%s*%(") do names[name] = true end
  return names
end

local function allowed(rel)
  return rel:match("^core/[^/]+%.lua$") or rel:match("^worker/backend_[^/]+%.lua$")
end

-- "file:line: text" for each use of a declared kl_ function through any name (C.kl_,
-- core.C.kl_, core_C.kl_, an alias of ffi.C) outside the allowed files.
local function offenders(root, names)
  local out = {}
  local p = assert(io.popen("cd '" .. root .. "' && find . -name '*.lua' | sort"))
  for path in p:lines() do
    local rel = path:gsub("^%./", "")
    if not allowed(rel) then
      local n = 0
      for line in io.lines(root .. "/" .. rel) do
        n = n + 1
        if not line:match("^%s*%-%-") then
          for fn in line:gmatch("[%w_%]%)]%.(kl_[%w_]+)") do
            if names[fn] then
              out[#out + 1] = string.format("lua/kloop/%s:%d: %s", rel, n, line:gsub("^%s+", ""))
              break
            end
          end
        end
      end
    end
  end
  p:close()
  return out
end

describe("layering", function()
  local root = native.source_dir .. "/lua/kloop"

  it("finds a kl_ call through an alias (the check can fail)", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p '" .. dir .. "/eval' '" .. dir .. "/core'")
    local f = assert(io.open(dir .. "/eval/x.lua", "w"))
    f:write('local cC = require("kloop.core.ffi").C\nlocal t = cC.kl_now()\n-- C.kl_now() in a comment\n')
    f:close()
    f = assert(io.open(dir .. "/core/y.lua", "w"))
    f:write("local t = C.kl_now()\n")
    f:close()
    local found = offenders(dir, declared())
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.same({ "lua/kloop/eval/x.lua:2: local t = cC.kl_now()" }, found)
  end)

  it("calls the core's kl_ functions only from lua/kloop/core/ and the backends", function()
    local f = io.open(root .. "/init.lua")
    if not f then pending("no source tree next to this binary") return end
    f:close()
    local found = offenders(root, declared())
    assert.are.equal(0, #found, #found .. " kl_ calls outside the wrappers:\n" .. table.concat(found, "\n"))
  end)
end)
