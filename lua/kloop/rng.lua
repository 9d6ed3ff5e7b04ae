-- kloop.rng: a seeded random generator per run (xorshift64*), so one run seed drives
-- every random choice of a strategy and a rerun with the same seed repeats them.
local ffi = require("ffi")
local core = require("kloop.core")

local M = {}
local R = {}
R.__index = R

function M.new(seed)
  local s = ffi.new("uint64_t[1]", seed ~= 0 and seed or 0x9E3779B97F4A7C15ULL)
  return setmetatable({ s = s }, R)
end

-- A fresh seed from the OS, below 2^52 so it prints and stores exactly.
function M.fresh_seed()
  local b = ffi.new("uint64_t[1]")
  core.C.kl_random_bytes(b, 8)
  return tonumber(b[0] % 0x10000000000000ULL) + 1
end

local function next64(self)
  local x = self.s[0]
  x = bit.bxor(x, bit.rshift(x, 12))
  x = bit.bxor(x, bit.lshift(x, 25))
  x = bit.bxor(x, bit.rshift(x, 27))
  self.s[0] = x
  return x * 0x2545F4914F6CDD1DULL
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
