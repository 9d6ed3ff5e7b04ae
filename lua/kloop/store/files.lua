-- kloop.store.files: the Lua files a run's strategy loaded from outside kloop's own
-- library (migration 6; docs/SCRIPTING.md, "Sharing strategies"). Methods of a store
-- opened by kloop.store.db.
local M = {}
local DB = {}
M.methods = DB

return M
