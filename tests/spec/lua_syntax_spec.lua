-- tests/spec/lua_syntax_spec.lua: every Lua file of the project parses under LuaJIT
-- (catches Lua 5.3-isms such as 1 << 20 before they reach a worker on the GPU).
describe("Lua sources", function()
  local p = io.popen("ls lua/kloop/*.lua lua/kloop/*/*.lua strategies/*.lua kernels/*.lua"
    .. " tests/gpu/*.lua tests/adversarial/*.lua 2>/dev/null")
  local files = {}
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  it("are found", function() assert.is_true(#files >= 10) end)
  for _, f in ipairs(files) do
    it("parses: " .. f, function()
      local fn, err = loadfile(f)
      assert.is_not_nil(fn, err)
    end)
  end
end)
