-- tests/spec/support/store_fixture.lua: what the store specs share: a temporary folder,
-- fresh database paths in it, and raw SQL on a file without the store (for fixtures the
-- store would refuse).
local core = require("kloop.core.ffi")
local util = require("kloop.util")
local ffi, C = core.ffi, core.C

local M = {}

M.dir = os.tmpname()
os.remove(M.dir)
assert(util.mkdir_p(M.dir))

local n = 0
function M.fresh_path(prefix)
  n = n + 1
  return string.format("%s/%s%d.db", M.dir, prefix or "s", n)
end

function M.raw_exec(path, sql)
  local out = ffi.new("kl_db*[1]")
  assert(core.try(C.kl_db_open, path, 0, out))
  local ok, err = core.try(C.kl_db_exec, out[0], sql)
  C.kl_db_close(out[0])
  assert(ok, err)
end

return M
