-- tests/busted.lua: runs busted specs inside the kloop binary, so ffi.C sees the core.
-- usage: kloop tests/busted.lua [busted options] [SPEC_DIR_OR_FILE...]
-- busted and its dependencies come from Debian's lua-busted (Lua 5.1 modules).
package.path = package.path .. ";/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua"
package.cpath = package.cpath .. ";/usr/lib/x86_64-linux-gnu/lua/5.1/?.so"
local ok, runner = pcall(require, "busted.runner")
if not ok then
  io.stderr:write("kloop: busted is not installed (apt-get install lua-busted): ", tostring(runner), "\n")
  os.exit(1)
end
runner({ standalone = false })
