-- kloop.store.promotions: the store's promotion records (migration 5; docs/PROMOTION.md):
-- one row per `kloop promote` attempt and one per step with its evidence. Methods of a
-- store opened by kloop.store.db.
local M = {}
local DB = {}
M.methods = DB

return M
