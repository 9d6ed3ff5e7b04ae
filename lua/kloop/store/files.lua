-- kloop.store.files: the Lua files a run's strategy loaded from outside kloop's own
-- library (migration 6; docs/SCRIPTING.md, "Sharing strategies"). Methods of a store
-- opened by kloop.store.db.
local json = require("kloop.store.json")
local secrets = require("kloop.store.secrets")

local M = {}
local DB = {}
M.methods = DB

local ROLES = { entry = true, module = true }

-- Records one file a run's strategy loaded: f = {module, path, hash, text, role ('entry'
-- or 'module')}. hash is of the text that ran; the text is kept with secrets scrubbed.
-- Returns true, or nil, msg (a module recorded twice for a run is refused).
function DB:add_run_file(run_id, f)
  if type(f) ~= "table" or type(f.module) ~= "string" or type(f.path) ~= "string" or type(f.hash) ~= "string"
      or type(f.text) ~= "string" or not ROLES[f.role] then
    error("add_run_file: give {module, path, hash, text, role = 'entry'|'module'}", 2)
  end
  local ok, err = self:write("INSERT INTO run_files (run_id, module, path, hash, text, role) VALUES (?, ?, ?, ?, ?, ?)",
    run_id, f.module, f.path, f.hash, secrets.scrub_text(f.text), f.role)
  if not ok then return nil, err end
  return true
end

-- The files of a run, the entry first, then the modules in the order they were recorded:
-- rows {module, path, hash, role, text}. A store from before migration 6 has none.
function DB:run_files(run_id)
  self:check_open()
  if (self.version or 6) < 6 then return json.array({}) end
  local rows = assert(self:query([[SELECT module, path, hash, role, text FROM run_files WHERE run_id = ?
    ORDER BY role = 'module', rowid]], run_id))
  return json.array(rows)
end

-- Records a resume that went ahead (--force) although files had changed: appended to the
-- run's options as forced_resumes = [{at, changed = [{module, path, was, now}]}], which
-- `kloop show RUN` prints. Returns true, or nil, msg.
function DB:note_forced_resume(run_id, changed, at)
  local rows, err = self:query("SELECT options_json FROM runs WHERE id = ?", run_id)
  if not rows then return nil, err end
  if not rows[1] then return nil, "no run " .. tostring(run_id) end
  local o = rows[1].options_json and json.from_json(rows[1].options_json) or {}
  if type(o) ~= "table" then o = {} end
  local list = type(o.forced_resumes) == "table" and o.forced_resumes or {}
  list[#list + 1] = { at = at or os.date("!%Y-%m-%dT%H:%M:%SZ"), changed = json.array(changed) }
  o.forced_resumes = json.array(list)
  local ok, werr = self:write("UPDATE runs SET options_json = ? WHERE id = ?", json.to_json(o), run_id)
  if not ok then return nil, werr end
  return true
end

return M
