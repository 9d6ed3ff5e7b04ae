-- tests/spec/architecture_spec.lua: the Map of docs/ARCHITECTURE.md matches the tree: every
-- folder under lua/kloop/, every top-level folder and every folder of tests/ has its line
-- (build folders and hidden ones aside), and every folder the map names exists.
-- Run from the repository root (as CTest does).

local DOC = "docs/ARCHITECTURE.md"

-- The folders the "## Map" table names: rows of the form | `path/` | text |.
local function map_folders()
  local f = assert(io.open(DOC, "r"))
  local text = f:read("*a")
  f:close()
  local section = text:match("\n## Map\n(.-)\n## ") or text:match("\n## Map\n(.*)$")
  assert(section, DOC .. " has no '## Map' section")
  local out = {}
  for line in section:gmatch("[^\n]+") do
    local path = line:match("^|%s*`([^`]+)`%s*|")
    if path then out[#out + 1] = (path:gsub("/+$", "")) end
  end
  return out
end

-- Folders found by `find ARGS -type d`, without the hidden ones and the build folders.
local function find_dirs(args)
  local out = {}
  local p = assert(io.popen("find " .. args .. " -type d 2>/dev/null | sort"))
  for path in p:lines() do
    path = path:gsub("^%./", "")
    local hidden = ("/" .. path):match("/%.") ~= nil
    -- (build/ and var/, a session's bench variants: both git-ignored, not the tree)
    local build = path:match("^build") ~= nil or path == "var" or path:match("^var/") ~= nil
    if not hidden and not build then out[#out + 1] = path end
  end
  p:close()
  return out
end

-- The folders the map must cover.
local function tree_folders()
  local out = {}
  for _, args in ipairs({ ". -mindepth 1 -maxdepth 1", "tests -mindepth 1 -maxdepth 1", "lua/kloop" }) do
    for _, d in ipairs(find_dirs(args)) do out[#out + 1] = d end
  end
  return out
end

local function is_dir(path)
  local p = io.popen("test -d '" .. path:gsub("'", "'\\''") .. "' && echo yes")
  local r = p:read("*l")
  p:close()
  return r == "yes"
end

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

describe("the architecture map", function()
  local named = map_folders()

  it("names the layers", function()
    assert.is_true(#named >= 20, "the map names only " .. #named .. " folders")
    local s = set_of(named)
    for _, d in ipairs({ "src", "lua/kloop", "lua/kloop/cli", "lua/kloop/core", "tests", "docs" }) do
      assert.is_true(s[d] == true, "the map does not name " .. d .. "/")
    end
  end)

  it("names each folder once", function()
    local seen, twice = {}, {}
    for _, d in ipairs(named) do
      if seen[d] then twice[#twice + 1] = d .. "/" end
      seen[d] = true
    end
    assert.are.same({}, twice, "named more than once in " .. DOC .. ": " .. table.concat(twice, ", "))
  end)

  it("names every folder of the tree", function()
    local s, missing = set_of(named), {}
    for _, d in ipairs(tree_folders()) do
      if not s[d] then missing[#missing + 1] = d .. "/" end
    end
    assert.are.same({}, missing,
      "folders with no line in the Map of " .. DOC .. ": " .. table.concat(missing, ", "))
  end)

  it("names only folders that exist", function()
    local gone = {}
    for _, d in ipairs(named) do
      if not is_dir(d) then gone[#gone + 1] = d .. "/" end
    end
    assert.are.same({}, gone, "the Map of " .. DOC .. " names folders that do not exist: " .. table.concat(gone, ", "))
  end)
end)
