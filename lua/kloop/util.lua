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

function M.write_file(path, data)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(data)
  f:close()
  return true
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

-- Hex of a 64-bit FFI hash (uint64_t cdata) or a number.
function M.hex64(h)
  return string.format("%016x", h):gsub("ULL$", "")
end

function M.mkdir_p(path)
  return os.execute("mkdir -p " .. M.shell_quote(path)) == 0
end

function M.escape_pattern(s) return (s:gsub("%p", "%%%0")) end

return M
