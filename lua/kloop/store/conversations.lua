-- kloop.store.conversations: an agent strategy's conversations with a model (migration 7;
-- docs/AGENTS.md): one row per lineage, its messages (tool calls and their results) as
-- JSON, rewritten after each turn, and the candidates it produced pointing at it. Methods
-- of a store opened by kloop.store.db; each write is its own transaction, scrubbed of
-- secrets on the way in like every other (kloop.store.json).
local json = require("kloop.store.json")
local secrets = require("kloop.store.secrets")

local M = {}
local DB = {}
M.methods = DB

local to_json, from_json = json.to_json, json.from_json

local FIELDS = { lineage = true, model = true, messages = true, turns = true, tokens_in = true, tokens_out = true,
  cost = true, cost_usd = true, stop_reason = true }

local function check_fields(what, t)
  if type(t) ~= "table" then error(what .. ": give a table", 3) end
  for k in pairs(t) do
    if not FIELDS[k] then error(string.format("%s: unknown field '%s'", what, tostring(k)), 3) end
  end
end

local function num(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge and x or nil end

-- What a write came to: its value, or nil and why (a row it needed or changed is
-- missing: `missing`, said plainly).
local function inserted(id, err, missing)
  if id then return id end
  if tostring(err):find("FOREIGN KEY", 1, true) then return nil, missing end
  return nil, err
end

local function updated(ok, changes, missing)
  if not ok then return inserted(nil, changes, missing) end
  if changes == 0 then return nil, missing end
  return true
end

-- Starts a conversation of a run: id, or nil, msg (no such run).
function DB:add_conversation(run_id, c)
  self:check_open()
  check_fields("add_conversation", c)
  return inserted(self:write([[INSERT INTO conversations (run_id, lineage, model, messages_json, turns, tokens_in,
      tokens_out, cost_usd, stop_reason, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))]],
    run_id, c.lineage, c.model, to_json(c.messages or json.array()) or "[]", c.turns or 0, num(c.tokens_in),
    num(c.tokens_out), num(c.cost_usd or c.cost), secrets.scrub_text(c.stop_reason)), "no run " .. tostring(run_id))
end

-- Rewrites what a turn changed (messages, turns, tokens, cost, stop_reason; the fields
-- given): true, or nil, msg.
function DB:update_conversation(id, c)
  self:check_open()
  check_fields("update_conversation", c)
  local set, vals = {}, {}
  local given = { messages_json = c.messages and to_json(c.messages), turns = c.turns, tokens_in = num(c.tokens_in),
    tokens_out = num(c.tokens_out), cost_usd = num(c.cost_usd or c.cost), stop_reason = secrets.scrub_text(c.stop_reason) }
  for _, column in ipairs({ "messages_json", "turns", "tokens_in", "tokens_out", "cost_usd", "stop_reason" }) do
    if given[column] ~= nil then set[#set + 1] = column .. " = ?" vals[#vals + 1] = given[column] end
  end
  set[#set + 1] = "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
  vals[#vals + 1] = id
  return updated(self:write("UPDATE conversations SET " .. table.concat(set, ", ") .. " WHERE id = ?", unpack(vals)),
    "no conversation " .. tostring(id))
end

-- Points a candidate at the conversation that produced it (where add_candidate was not
-- given conversation_id): true, or nil, msg.
function DB:set_candidate_conversation(candidate_id, conversation_id)
  self:check_open()
  local ok, changes = self:write("UPDATE candidates SET conversation_id = ? WHERE id = ?", conversation_id, candidate_id)
  if ok and changes == 0 then return nil, "no candidate " .. tostring(candidate_id) end
  return updated(ok, changes, "no conversation " .. tostring(conversation_id))
end

-- Conversations (messages decoded), each with the ids of the candidates it produced.
local function select_rows(self, where, value)
  local rows = assert(self:query("SELECT * FROM conversations WHERE " .. where .. " = ? ORDER BY id", value))
  for _, r in ipairs(rows) do
    r.messages, r.messages_json = from_json(r.messages_json), nil
    r.candidates = json.array()
    for _, c in ipairs(assert(self:query("SELECT id FROM candidates WHERE conversation_id = ? ORDER BY id", r.id))) do
      r.candidates[#r.candidates + 1] = c.id
    end
  end
  return rows
end

-- One conversation, or nil, msg.
function DB:conversation(id)
  self:check_open()
  local row = select_rows(self, "id", id)[1]
  if not row then return nil, "no conversation " .. tostring(id) end
  return row
end

-- A run's conversations in order: list (maybe empty).
function DB:conversations(run_id)
  self:check_open()
  return json.array(select_rows(self, "run_id", run_id))
end

return M
