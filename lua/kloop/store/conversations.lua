-- kloop.store.conversations: an agent strategy's conversations with a model (migration 7;
-- docs/AGENTS.md). Methods of a store opened by kloop.store.db.
local M = {}
local DB = {}
M.methods = DB

return M
