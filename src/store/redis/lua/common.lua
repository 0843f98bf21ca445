-- Sluice's Redis script, part 1 of 8: exact integer helpers.
--
-- The files in this folder are concatenated into ONE script at build time, in the order
-- common, fixed_window, sliding_window_log, sliding_window_counter, token_bucket,
-- interval_token_bucket, gcra, main. Each file declares one local table that later files use;
-- Redis forbids scripts to create globals.
--
-- Redis 7.0 runs Lua 5.1: every number is an IEEE double, exact for integers below 2^53 only.
-- The helpers below stay exact as long as their operands (and results) stay below 2^53; the
-- C++ side refuses specs whose arithmetic would leave that range (lua_bounds.h).
local common = {}

common.MAX_EXACT = 9007199254740991 -- 2^53 - 1
common.NEVER = -1                   -- retry_after on the wire when the cost never fits
common.REASON_NONE = 0
common.REASON_OVER_LIMIT = 1
common.REASON_COST_EXCEEDS_LIMIT = 2

local LIMB = 16777216 -- 2^24: limb products stay below 2^48, sums of three below 2^50

-- Floor division; exact for |a| < 2^53 and 0 < b < 2^53. math.fmod is exact (IEEE remainder),
-- and a - r is an exact multiple of b, so the quotient is exact too; a / b rounded is not.
function common.floorDiv(a, b)
  local r = math.fmod(a, b)
  if r < 0 then r = r + b end
  return (a - r) / b
end

-- Ceiling division; same preconditions as floorDiv; a may be negative.
function common.ceilDiv(a, b)
  return -common.floorDiv(-a, b)
end

-- Truncating division, as C++ integer division: toward zero.
function common.truncDiv(a, b)
  if a >= 0 then return common.floorDiv(a, b) end
  return -common.floorDiv(-a, b)
end

function common.max(a, b)
  if a > b then return a end
  return b
end

function common.min(a, b)
  if a < b then return a end
  return b
end

-- The exact product of two integers 0 <= x, y < 2^53 as hi * 2^48 + lo with 0 <= lo < 2^48,
-- exact while the product is below 2^101 (hi below 2^53). Splits both factors into three
-- 24-bit limbs so that no partial product or column sum reaches 2^53.
local function split(x)
  local x2 = math.floor(x / 281474976710656) -- 2^48; dividing by a power of two is exact
  local rest = x - x2 * 281474976710656
  local x1 = math.floor(rest / LIMB)
  return rest - x1 * LIMB, x1, x2
end

function common.mulWide(x, y)
  local x0, x1, x2 = split(x)
  local y0, y1, y2 = split(y)
  local column0 = x0 * y0
  local column1 = x0 * y1 + x1 * y0
  local column2 = x0 * y2 + x1 * y1 + x2 * y0
  local column3 = x1 * y2 + x2 * y1
  local column4 = x2 * y2
  local carry = math.floor(column0 / LIMB)
  local limb0 = column0 - carry * LIMB
  local middle = column1 + carry
  carry = math.floor(middle / LIMB)
  local limb1 = middle - carry * LIMB
  local lo = limb0 + limb1 * LIMB
  local hi = column2 + carry + column3 * LIMB + column4 * 281474976710656
  return hi, lo
end

-- -1, 0 or 1 as a * b is less than, equal to or greater than c * d (all below 2^53).
function common.compareProducts(a, b, c, d)
  local hi1, lo1 = common.mulWide(a, b)
  local hi2, lo2 = common.mulWide(c, d)
  if hi1 ~= hi2 then
    if hi1 < hi2 then return -1 end
    return 1
  end
  if lo1 == lo2 then return 0 end
  if lo1 < lo2 then return -1 end
  return 1
end

-- floor(a * b / c) exactly, for 0 <= a, b < 2^53, 0 < c < 2^53 and a result below 2^53, even
-- when a * b is not representable: the double quotient is off by a few units at most (two
-- roundings of relative size 2^-53), and exact product comparisons correct it.
function common.mulDivFloor(a, b, c)
  local product = a * b
  if product <= common.MAX_EXACT then return common.floorDiv(product, c) end
  local quotient = math.floor(product / c)
  for _ = 1, 8 do
    if common.compareProducts(quotient, c, a, b) <= 0 then break end
    quotient = quotient - 1
  end
  for _ = 1, 8 do
    if common.compareProducts(quotient + 1, c, a, b) > 0 then break end
    quotient = quotient + 1
  end
  return quotient
end

-- ceil(a * b / c), same preconditions as mulDivFloor.
function common.mulDivCeil(a, b, c)
  local quotient = common.mulDivFloor(a, b, c)
  if common.compareProducts(quotient, c, a, b) < 0 then return quotient + 1 end
  return quotient
end

-- a + b * c, or MAX_EXACT when that would not be exact: the sync operation consumes whatever a
-- node admitted, so its sums are not bounded by the limit. 0 <= a, b, c.
function common.addProductClamped(a, b, c)
  if c > 0 and b > common.floorDiv(common.MAX_EXACT - a, c) then return common.MAX_EXACT end
  return a + b * c
end

-- An integer as decimal text. Never tostring(): Lua prints 1.7e+15 for large numbers.
function common.decimal(x)
  return string.format('%.0f', x)
end

-- A non-negative decimal integer argument below 2^53, or an error naming it.
function common.parseCount(text, what)
  local value = tonumber(text)
  if value == nil or value < 0 or value > common.MAX_EXACT or value ~= math.floor(value) then
    error('sluice: ' .. what .. ' must be an integer in [0, 2^53): ' .. tostring(text))
  end
  return value
end

-- now_us: "" reads Redis TIME, so every node sees one clock; a number replays an instant.
function common.readNow(text)
  if text == '' then
    local time = redis.call('TIME')
    return tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return common.parseCount(text, 'now_us')
end

-- A fresh outcome: denied with no reason until an algorithm says otherwise.
function common.outcome(limit)
  return { allowed = false, reason = common.REASON_NONE, limit = limit, remaining = 0,
           reset_after_us = 0, retry_after_us = 0, delay_us = 0 }
end

-- Sets `key` to expire when its state is back to full (a full state equals an unused key), or
-- deletes it when it already is. The TTL is relative to now_us, rounded up to whole ms.
function common.expireAt(key, full_at_us, now_us)
  if full_at_us <= now_us then
    redis.call('DEL', key)
  else
    redis.call('PEXPIRE', key, common.decimal(common.ceilDiv(full_at_us - now_us, 1000)))
  end
end
