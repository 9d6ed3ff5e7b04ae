-- kloop.search.rng: a seeded random generator per run (xorshift64*), so one run seed drives
-- every random choice of a strategy and a rerun with the same seed repeats them.
local ffi = require("ffi")
local sys = require("kloop.core.sys")

local M = {}
local R = {}
R.__index = R

function M.new(seed)
  local s = ffi.new("uint64_t[1]", seed ~= 0 and seed or 0x9E3779B97F4A7C15ULL)
  return setmetatable({ s = s }, R)
end

-- Seeds are integers in [1, M.MAX_SEED]: a Lua number holds them exactly, the store
-- keeps them as INTEGER, and they print with %d. 0 means "draw one".
M.MAX_SEED = 2^53 - 1

-- A fresh seed from the OS, in [1, 2^46]: below 10^14, so it prints exactly even
-- where a number goes through %.14g (tostring, JSON), and copying it repeats the run.
function M.fresh_seed()
  local b = ffi.new("uint64_t[1]")
  ffi.copy(b, sys.random_bytes(8) or string.rep("\0", 8), 8)
  return tonumber(b[0] % 0x400000000000ULL) + 1
end

-- A seed as text, exactly (never 1e+15 style).
function M.format(seed) return string.format("%d", seed) end

-- A seed from an option or a stored value: the integer, or nil, why.
function M.check(v)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < 0 or n > M.MAX_SEED then
    return nil, string.format("give a whole number from 1 to %d (0: draw one), not %s", M.MAX_SEED, tostring(v))
  end
  return n
end

local function next64(self)
  local x = self.s[0]
  x = bit.bxor(x, bit.rshift(x, 12))
  x = bit.bxor(x, bit.lshift(x, 25))
  x = bit.bxor(x, bit.rshift(x, 27))
  self.s[0] = x
  return x * 0x2545F4914F6CDD1DULL
end

-- An independent generator in the same state: its draws are the ones this one will
-- make next, and drawing from it leaves this one as it is.
function R:clone()
  local s = ffi.new("uint64_t[1]", self.s[0])
  return setmetatable({ s = s }, R)
end

-- A generator of its own, seeded from this one's state and a salt, drawing nothing
-- from this one.
function R:derive(salt)
  local x = bit.bxor(self.s[0], salt * 0x9E3779B97F4A7C15ULL)
  return M.new(x ~= 0ULL and x or 0x9E3779B97F4A7C15ULL)
end

-- Uniform float in [0, 1).
function R:float() return tonumber(bit.rshift(next64(self), 11)) / 2^53 end
-- Integer in [a, b].
function R:int(a, b) return a + math.floor(self:float() * (b - a + 1)) end
function R:pick(list) return list[self:int(1, #list)] end
function R:shuffle(list)
  for i = #list, 2, -1 do
    local j = self:int(1, i)
    list[i], list[j] = list[j], list[i]
  end
  return list
end

return M
