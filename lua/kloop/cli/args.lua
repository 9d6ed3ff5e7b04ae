-- kloop.cli.args: option parsing for subcommands, from a declarative table.
-- (A strategy's options are declared with the strategy and parsed by kloop.search.driver.)
local util = require("kloop.util")

local M = {}

-- A number from the command line: finite ("nan" and "inf" are no numbers here).
local function finite(v)
  local n = tonumber(v)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil end
  return n
end

-- Kinds of option: "flag" (no value), "value" (a string), "number" (a finite number),
-- "uint" (a whole number >= 0). A value follows as the next word, which may start with
-- "-" (`--device -1`), or inline (`--db=PATH`).
local KINDS = {
  value = function(v) return v end,
  number = function(v, name)
    local n = finite(v)
    if not n then return nil, name .. " needs a number, got '" .. v .. "'" end
    return n
  end,
  uint = function(v, name)
    local n = finite(v)
    if not n or n < 0 or n ~= math.floor(n) then return nil, name .. " needs a whole number >= 0, got '" .. v .. "'" end
    return n
  end,
}

-- The key of an option in opts: "--no-cache" -> "no_cache", "-U" -> "U".
local function key(name) return (name:gsub("^%-+", ""):gsub("%-", "_")) end

-- spec: { ["--json"] = "flag", ["--candidate"] = "value", ... }; returns opts, positionals
-- or nil, message (the caller prints usage and exits 2). Everything after "--" is positional.
function M.parse(args, spec)
  local opts, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    local name, inline = a:match("^(%-%-[%w%-]+)=(.*)$")
    name = name or a
    local kind = spec[name]
    if a == "--" then
      for k = i + 1, #args do pos[#pos + 1] = args[k] end
      break
    elseif kind == "flag" then
      if inline then return nil, name .. " takes no value" end
      opts[key(name)] = true
    elseif KINDS[kind] then
      local v = inline or args[i + 1]
      if v == nil then return nil, name .. " needs a value" end
      if not inline then i = i + 1 end
      local x, err = KINDS[kind](v, name)
      if x == nil then return nil, err end
      opts[key(name)] = x
    elseif kind ~= nil then
      error("kloop.cli.args: option " .. name .. " has an unknown kind '" .. tostring(kind) .. "'", 2)
    elseif a:sub(1, 1) == "-" and #a > 1 then
      return nil, "unknown option " .. a
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

-- Bad usage of command cmd: the message and the usage text on stderr; returns exit code 2.
function M.usage_error(cmd, msg, usage)
  util.eprintf("kloop %s: %s\n%s", cmd, msg, usage)
  return 2
end

-- The front of every command: parses argv against spec (plus -h/--help) and handles help
-- (usage on stdout) and bad usage. usage: the whole usage text, ending in "\n". Returns
-- opts, positionals; or nil, the exit code (0 after help, 2 after bad usage).
function M.command(cmd, argv, spec, usage)
  local full = { ["-h"] = "flag", ["--help"] = "flag" }
  for k, v in pairs(spec) do full[k] = v end
  local opts, pos = M.parse(argv, full)
  if not opts then return nil, M.usage_error(cmd, pos, usage) end
  if opts.h or opts.help then
    io.stdout:write(usage)
    return nil, 0
  end
  return opts, pos
end

-- "BM=64,BN=32" -> {BM="64", BN="32"}
function M.defines(s)
  local out = {}
  if not s then return out end
  for pair in s:gmatch("[^,]+") do
    local k, v = pair:match("^%s*([%a_][%w_]*)%s*=%s*([%w_%.%-]+)%s*$")
    if not k then return nil, "bad parameter '" .. pair .. "' (use NAME=VALUE,...)" end
    out[k] = v
  end
  return out
end

return M
