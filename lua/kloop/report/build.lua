-- kloop.report.build: the entry of the process audit: gather a store's runs and write the HTML report.
--
-- write(db_or_path, run_ids, out_path) is what `kloop report` and a running search's
-- `--report FILE` call: it reads the store (a path is opened read-only), renders the
-- page and replaces out_path atomically (a temp file beside it, then rename), so a
-- browser reloading it never sees half a page. Returns true, or nil, msg; it never
-- raises for a store or file problem.
local store = require("kloop.store.db")
local data = require("kloop.report.data")
local html = require("kloop.report.html")
local util = require("kloop.util")

local M = {}

-- Opens a path read-only, or takes an open db as it is. Returns db, close_it.
local function open(db_or_path)
  if type(db_or_path) ~= "string" then return db_or_path, false end
  local db, err = store.open(db_or_path, { create = false, readonly = true })
  if not db then return nil, err end
  return db, true
end

-- The gathered data of run_ids (empty or nil: the latest run), or nil, msg.
function M.gather(db_or_path, run_ids, opts)
  local db, close_or_err = open(db_or_path)
  if not db then return nil, close_or_err end
  local ok, d, err = pcall(data.gather, db, run_ids or {}, opts)
  if close_or_err then db:close() end
  if not ok then return nil, tostring(d) end
  if not d then return nil, err end
  if db.warning then d.warning = db.warning end
  return d
end

-- The page's text, or nil, msg.
function M.render(db_or_path, run_ids, opts)
  local d, err = M.gather(db_or_path, run_ids, opts)
  if not d then return nil, err end
  return html.render(d, { generated = os.date("!%Y-%m-%d %H:%M:%S UTC") }), d
end

-- Writes text to path through a temp file in the same folder and a rename.
M.replace_file = util.replace_file

function M.write(db_or_path, run_ids, out_path)
  local text, err = M.render(db_or_path, run_ids)
  if not text then return nil, err end
  return M.replace_file(out_path, text)
end

return M
