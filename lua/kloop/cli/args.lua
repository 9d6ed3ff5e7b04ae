-- kloop.cli.args: option parsing for subcommands, from a declarative table.
local M = {}

-- spec: { ["--json"] = "flag", ["--candidate"] = "value", ... }; returns opts, positionals
-- or nil, message (the caller prints usage and exits 2).
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
      opts[name:gsub("^%-+", ""):gsub("%-", "_")] = true
    elseif kind == "value" or kind == "number" then
      local v = inline or args[i + 1]
      if v == nil then return nil, name .. " needs a value" end
      if not inline then i = i + 1 end
      if kind == "number" then
        local n = tonumber(v)
        if not n then return nil, name .. " needs a number, got '" .. v .. "'" end
        v = n
      end
      opts[name:gsub("^%-+", ""):gsub("%-", "_")] = v
    elseif a:sub(1, 1) == "-" and #a > 1 then
      return nil, "unknown option " .. a
    else
      pos[#pos + 1] = a
    end
    i = i + 1
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
