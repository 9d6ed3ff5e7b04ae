-- kloop.search.loader: loads a strategy as a package (docs/SCRIPTING.md, "Sharing
-- strategies"): its folder is its module path, its modules are its own (never shared with
-- another strategy, never shadowing kloop's), every file it loads from outside kloop's
-- library is recorded (path, hash, text) for the run store, and `requires` is checked
-- against kloop.api_version before a hook runs.
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local M = {}

-- Modules that are kloop's own whatever a strategy's folder holds: the kloop library, the
-- standard and LuaJIT libraries, and what the binary preloads (cjson).
local STANDARD = { _G = true, string = true, table = true, math = true, io = true, os = true, debug = true,
  coroutine = true, package = true, bit = true, jit = true, ffi = true, cjson = true }

function M.is_own(name)
  return name == "kloop" or name:sub(1, 6) == "kloop." or STANDARD[name] or name:sub(1, 4) == "jit."
    or package.preload[name] ~= nil
end

function M.is_dir(path) return io.open(path .. "/.", "r") ~= nil end

local function is_file(path)
  if M.is_dir(path) then return false end
  return util.file_exists(path)
end
M.is_file = is_file

-- The name a strategy is known by: its file's name, or its folder's for NAME/init.lua.
function M.strategy_name(path)
  path = tostring(path)
  local base = util.basename(path)
  if base == "init.lua" and path:find("/") then return util.basename(util.dirname(path)) end
  return (base:gsub("%.lua$", ""))
end

-- How listings show a run's strategy: its file name, or for a package (NAME/init.lua)
-- its folder name with a slash.
function M.display_name(path)
  local base = util.basename(tostring(path))
  if base == "init.lua" and tostring(path):find("/") then return util.basename(util.dirname(path)) .. "/" end
  return base
end

-- The file of module name inside folder root (NAME.lua, then NAME/init.lua, dots as
-- folders, like package.path): path, path relative to root; or nil.
function M.find_in(root, name)
  local rel = name:gsub("%.", "/")
  for _, r in ipairs({ rel .. ".lua", rel .. "/init.lua" }) do
    local p = root == "." and r or root .. "/" .. r
    if is_file(p) then return p, r end
  end
end

-- A file's facts as a run_files row: {module, path, hash, text, role}.
local function file_row(module, path, text, role)
  return { module = module, path = path, hash = sys.content_hash(text), text = text, role = role }
end

local Pkg = {}
Pkg.__index = Pkg

-- Where module name would be loaded from for this package now: path (or nil), and
-- whether it is a sibling (in the package's folder) rather than on package.path.
function Pkg:locate(name)
  local p = M.find_in(self.root, name)
  if p then return p, true end
  p = package.searchpath(name, package.path)
  return p, false
end

-- The hash of the file module name (or the entry, role 'entry') would be now: hash,
-- path; or nil, path when there is no such file any more.
function Pkg:current(module, role)
  if role == "entry" then return self.entry_row.hash, self.entry_row.path end
  local loaded = self.by_module[module]
  if loaded then return loaded.hash, loaded.path end
  local p = self:locate(module)
  local text = p and util.read_file(p)
  if not text then return nil, p end
  return sys.content_hash(text), p
end

-- Adds a file to what this package loaded and tells the listeners (the run store).
function Pkg:note(row)
  if self.by_module[row.module] then return end
  self.by_module[row.module] = row
  self.files[#self.files + 1] = row
  for _, fn in ipairs(self.listeners) do fn(row) end
end

-- Calls fn(row) for every file loaded from now on; returns a function that stops it.
function Pkg:listen(fn)
  self.listeners[#self.listeners + 1] = fn
  return function()
    for i, f in ipairs(self.listeners) do if f == fn then table.remove(self.listeners, i) return end end
  end
end

local LOADING = {} -- package.loaded's sentinel while a module's chunk runs

-- The strategy's require: kloop's own modules as always (a file of the same name in the
-- strategy's folder is not loaded, and said once); then the package's own modules
-- (cached per package); then package.path, recorded.
function Pkg:require(name)
  if type(name) ~= "string" then return require(name) end
  if self.outside[name] then return require(name) end
  if M.is_own(name) then
    -- (looked at once per name: require is called in hooks too)
    local shadow = M.find_in(self.root, name)
    self.outside[name] = true
    if shadow then
      util.eprintf("kloop: %s: not loading %s for require(%q): '%s' is kloop's own module (rename the file)\n",
        self.name, shadow, name, name)
    end
    return require(name)
  end
  local have = self.loaded[name]
  if have == LOADING then error(string.format("loop in require: module '%s' requires itself", name), 2) end
  if have ~= nil then return have end
  local path, sibling = self:locate(name)
  if not sibling then
    local text = path and util.read_file(path)
    if text then self:note(file_row(name, path, text, "module")) end
    local ok, res = pcall(require, name)
    if not ok then
      -- where Lua's own message does not look: the strategy's folder
      local rel = name:gsub("%.", "/")
      error(string.format("%s\n\tno file '%s/%s.lua' nor '%s/%s/init.lua' (beside the strategy)", tostring(res),
        self.root, rel, self.root, rel), 2)
    end
    self.outside[name] = true
    return res
  end
  local text, rerr = util.read_file(path)
  if not text then error(string.format("module '%s': cannot read %s (%s)", name, path, tostring(rerr)), 2) end
  local fn, lerr = loadstring(text, "@" .. path)
  if not fn then error(lerr, 2) end
  setfenv(fn, self.env)
  self:note(file_row(name, path, text, "module"))
  self.loaded[name] = LOADING
  local ok, res = pcall(fn, name)
  if not ok then
    self.loaded[name] = nil
    error(res, 0)
  end
  if res == nil then res = true end
  self.loaded[name] = res
  return res
end

-- A package for the strategy whose entry file is path ("-": text read from stdin, its
-- folder the working directory). Returns the entry chunk (its environment the package's,
-- where require is the package's and globals are _G's) and the package; or nil, message.
function M.load(path, text)
  local err
  if not text then
    if path == "-" then text = io.stdin:read("*a") else text, err = util.read_file(path) end
    if not text then return nil, string.format("cannot open %s: %s", path, tostring(err)) end
  end
  local fn, lerr = loadstring(text, path == "-" and "=stdin" or "@" .. path)
  if not fn then return nil, lerr end
  local root = path == "-" and "." or util.dirname(path)
  local entry = path == "-" and "(stdin)" or util.basename(path)
  local pkg = setmetatable({ root = root, path = path, name = path == "-" and "stdin" or M.strategy_name(path),
    files = {}, by_module = {}, loaded = {}, listeners = {}, outside = {} }, Pkg)
  pkg.env = setmetatable({ require = function(name) return pkg:require(name) end }, { __index = _G, __newindex = _G })
  setfenv(fn, pkg.env)
  pkg.entry_row = file_row(entry, path, text, "entry")
  pkg:note(pkg.entry_row)
  return fn, pkg
end

-- Strategy tables and the packages they came from (kloop.store.run records the files).
local adopted = setmetatable({}, { __mode = "k" })
function M.adopt(strategy, pkg) if type(strategy) == "table" and pkg then adopted[strategy] = pkg end end
function M.package_of(strategy) return type(strategy) == "table" and adopted[strategy] or nil end

---------------------------------------------------------------------------
-- requires = { api = 1 } (exactly 1), { api = ">=1,<3" } (comma-separated bounds),
-- { api = { min = 1, max = 2 } } (inclusive). kloop knows no other key.

local OPS = {
  [">="] = function(a, b) return a >= b end, [">"] = function(a, b) return a > b end,
  ["<="] = function(a, b) return a <= b end, ["<"] = function(a, b) return a < b end,
  ["=="] = function(a, b) return a == b end, ["="] = function(a, b) return a == b end,
  [""] = function(a, b) return a == b end,
}

-- A requirement as a list of {op, n} and its text; or nil, why it is malformed.
function M.parse_api(want)
  local t = type(want)
  if t == "number" then
    if want ~= math.floor(want) then return nil, "give a whole number" end
    return { { "==", want } }, tostring(want)
  elseif t == "string" then
    local out = {}
    for part in (want .. ","):gmatch("([^,]*),") do
      local op, n = part:match("^%s*([<>=]*)%s*(%d+)%s*$")
      if not op or not OPS[op] then return nil, string.format("'%s' is no version bound (give e.g. >=1,<3)", part) end
      out[#out + 1] = { op == "" and "==" or op, tonumber(n) }
    end
    return out, want
  elseif t == "table" then
    local lo, hi = want.min, want.max
    for k in pairs(want) do
      if k ~= "min" and k ~= "max" then return nil, "a range has min and max only, not " .. tostring(k) end
    end
    if (lo ~= nil and type(lo) ~= "number") or (hi ~= nil and type(hi) ~= "number") or (lo == nil and hi == nil) then
      return nil, "give { min = N, max = M } with numbers"
    end
    local out = {}
    if lo then out[#out + 1] = { ">=", lo } end
    if hi then out[#out + 1] = { "<=", hi } end
    return out, string.format("%s..%s", lo and tostring(lo) or "", hi and tostring(hi) or "")
  end
  return nil, "give a number, a range text or { min =, max = }"
end

-- Does a strategy's `requires` fit kloop api version `have`? true; or nil, the message
-- (naming both versions, or what is malformed). who: how to name the strategy.
function M.check_requires(req, have, who)
  if req == nil then return true end
  if type(req) ~= "table" then return nil, string.format("%s: requires must be a table such as { api = 1 }", who) end
  for k in pairs(req) do
    if k ~= "api" then return nil, string.format("%s: requires.%s: this kloop knows only requires.api", who, tostring(k)) end
  end
  if req.api == nil then return true end
  local bounds, text = M.parse_api(req.api)
  if not bounds then return nil, string.format("%s: requires.api: %s", who, text) end
  for _, b in ipairs(bounds) do
    if not OPS[b[1]](have, b[2]) then
      return nil, string.format("%s needs kloop api %s; this kloop has api %d", who, text, have)
    end
  end
  return true
end

-- What `kloop strategies` shows of a strategy file without running it: description (the
-- `description = "..."` field, else the first comment line) and the `requires` literal
-- (a plain literal only, evaluated with nothing in scope). Returns info or nil when
-- the text has no propose hook (a module, not a strategy).
function M.describe(text)
  if not text:find("propose", 1, true) then return nil end
  local info = {}
  info.description = select(2, text:match("%f[%w_]description%s*=%s*(['\"])(.-)%1"))
  if not info.description then
    local first = text:match("^%-%-+%s*([^\n]*)") or text:match("^#![^\n]*\n%-%-+%s*([^\n]*)")
    if first then info.description = first:gsub("^[%w_./%-]+%.lua:%s*", "") end
  end
  local lit = text:match("%f[%w_]requires%s*=%s*(%b{})")
  -- only a literal: names, numbers, braces and plain strings (no call, no method, no
  -- operator), evaluated with nothing in scope
  local bare = lit and lit:gsub('"[^"\\\n]*"', '""'):gsub("'[^'\\\n]*'", "''")
  if bare and not bare:find("[^%w_%s=,{}%.%-\"']") then
    local fn = loadstring("return " .. lit, "=requires")
    if fn then
      setfenv(fn, {})
      local ok, v = pcall(fn)
      if ok and type(v) == "table" then info.requires = v end
    end
  end
  if lit and info.requires == nil then info.api = "(unreadable)" end
  if info.requires and info.requires.api ~= nil then
    local bounds, txt = M.parse_api(info.requires.api)
    info.api = bounds and txt or "(malformed)"
  end
  return info
end

return M
