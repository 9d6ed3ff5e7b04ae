-- kloop.util: small helpers shared by the CLI and the library.
local M = {}

function M.printf(fmt, ...) io.stdout:write(string.format(fmt, ...)) end
function M.eprintf(fmt, ...) io.stderr:write(string.format(fmt, ...)) end

function M.file_exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

-- Writes data to path: true, or nil, msg (a write or the close that flushes it
-- failed, a full disk: the partial file is removed).
function M.write_file(path, data)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  local okw, werr = f:write(data)
  local okc, cerr = f:close()
  if not okw or not okc then
    os.remove(path)
    return nil, tostring(werr or cerr)
  end
  return true
end

-- Writes data to path through a temp file in the same folder and a rename, so a reader
-- never sees half a file: true, or nil, msg (the temp file removed).
function M.replace_file(path, data)
  local tmp = string.format("%s.tmp.%d", path, tonumber(require("kloop.core.sys").getpid()))
  local ok, err = M.write_file(tmp, data)
  if not ok then return nil, "cannot write " .. path .. ": " .. tostring(err) end
  local rok, rerr = os.rename(tmp, path)
  if not rok then
    os.remove(tmp)
    return nil, "cannot replace " .. path .. ": " .. tostring(rerr)
  end
  return true
end

-- JSON with sorted keys, so equal tables give equal texts (hashed as keys: an LLM
-- request's cache key, a candidate's code id). A table is an array only when its keys
-- are exactly 1..#t (a table with holes or other keys too is written by its keys).
function M.canonical_json(v)
  local cjson = require("cjson")
  if type(v) ~= "table" then return cjson.encode(v) end
  if next(v) == nil then return "{}" end
  local n, count = #v, 0
  for _ in pairs(v) do count = count + 1 end
  local parts = {}
  if n > 0 and n == count then
    for i = 1, n do parts[i] = M.canonical_json(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  for _, k in ipairs(M.sorted_keys(v)) do parts[#parts + 1] = cjson.encode(tostring(k)) .. ":" .. M.canonical_json(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

function M.dirname(path)
  local d = path:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end

function M.basename(path) return (path:match("([^/]*)$")) end

-- Runs a shell command, returns its stdout (trimmed) and whether it succeeded.
function M.capture(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local out = p:read("*a")
  local ok = p:close()
  return (out:gsub("%s+$", "")), ok
end

function M.shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function M.split(s, sep)
  local out = {}
  for piece in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do out[#out + 1] = piece end
  return out
end

function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- (in C, not os.execute: system() ignores SIGINT while its child runs, and a Ctrl-C
-- landing in that window was lost)
function M.mkdir_p(path)
  return require("kloop.core.sys").mkdir_p(path)
end

function M.escape_pattern(s) return (s:gsub("%p", "%%%0")) end

-- Numbers and times as the CLI prints them; each gives "-" for a missing value.

-- A time in milliseconds: 4.000 ms, 123.4 ms, 800.00 us.
function M.fmt_ms(ms)
  if type(ms) ~= "number" then return "-" end
  if ms >= 100 then return string.format("%.1f ms", ms) end
  if ms >= 1 then return string.format("%.3f ms", ms) end
  return string.format("%.2f us", ms * 1e3)
end

-- A ratio (a speedup): 5.00x.
function M.fmt_x(x) return type(x) == "number" and string.format("%.2fx", x) or "-" end

-- A byte count in decimal units: 512 B, 1.5 kB, 2.0 MB, 1.23 GB (nan and inf as themselves).
function M.fmt_bytes(b)
  if type(b) ~= "number" then return "-" end
  if b ~= b or b == math.huge then return tostring(b) end
  if b >= 1e9 then return string.format("%.2f GB", b / 1e9) end
  if b >= 1e6 then return string.format("%.1f MB", b / 1e6) end
  if b >= 1e3 then return string.format("%.1f kB", b / 1e3) end
  return string.format("%d B", b)
end

-- A stored UTC timestamp (2026-01-02T10:00:00.000Z) as 2026-01-02 10:00:00.
function M.fmt_when(ts)
  if not ts then return "-" end
  return (ts:gsub("T", " "):gsub("%.%d+Z$", ""):gsub("Z$", ""))
end

return M
