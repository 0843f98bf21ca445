-- Sluice's Redis script, part 1 of 9: constants and exact integer arithmetic.
--
-- The files in this folder are concatenated into ONE script at build time, in the order of
-- SLUICE_LUA_PARTS in CMakeLists.txt: common, arguments, fixed_window, sliding_window_log,
-- sliding_window_counter, token_bucket, interval_token_bucket, gcra, main. Later files use the
-- locals of earlier ones; Redis forbids scripts to create globals.
--
-- Speed. Redis runs the whole script body on every EVALSHA, so every function and table the
-- body creates is created (and collected) again on every call; with the string conversions,
-- that was most of a small call's cost. So:
--   * arguments.lua parses the call first, and each algorithm file defines its functions only
--     when the call uses that algorithm (`if uses[...] then`);
--   * divisions are written inline with math.floor where that is exact (below), not as helpers;
--   * algorithms return their reply fields as values, not in a table; a request of one check
--     (the usual kind) costs no table at all, and in a request of several, each key costs one;
--   * the checks arrive as runs of equal spec and cost, so the numbers parsed do not grow with
--     the keys (each tonumber of an argument costs about 0.1 µs);
--   * a key is one string of packed doubles, read with one GET and written with one SET ... PX,
--     not HMGET, HSET and PEXPIRE of decimal text (strtod and printf are slow in comparison).
--
-- Redis 7.0 runs Lua 5.1: every number is an IEEE double, exact for integers below 2^53 only.
-- The script stays exact as long as its operands (and results) stay below 2^53; the C++ side
-- refuses specs whose arithmetic would leave that range (lua_bounds.h).
--
-- Division. For integers |a| < 2^53 and 0 < b < 2^53, floor(a / b) is exact although a / b is
-- rounded: the rounding error is below |a / b| * 2^-53 < 1 / b, while a quotient that is not
-- an integer is at least 1 / b away from the next integer, so rounding never reaches it (and an
-- integer quotient is representable). So the script writes floor division as floor(a / b) and
-- ceiling division as -floor(-a / b). What is NOT exact is a product past 2^53: the code never
-- forms one (it compares against a quotient first) or uses exactArithmetic() below.
local floor, max, min = math.floor, math.max, math.min
local format, match, sub = string.format, string.match, string.sub
local values = unpack -- Lua's own: a table's elements as values (struct's takes the name)
local pack, unpack = struct.pack, struct.unpack

local MAX_EXACT = 9007199254740991 -- 2^53 - 1
-- What a stored field may be at most in magnitude: an instant (µs, below 2^53 until the year 2255)
-- plus an offset the exact arithmetic keeps below 2^53 (a GCRA's TAT a whole burst ahead).
local FIELD_RANGE = 18014398509481984 -- 2^54
local NEVER = -1                   -- retry_after on the wire when the cost never fits
local REASON_NONE = 0
local REASON_OVER_LIMIT = 1
local REASON_COST_EXCEEDS_LIMIT = 2

-- floor(a * b / c) and ceil(a * b / c) exactly, for 0 <= a, b < 2^53, 0 < c < 2^53 and a result
-- below 2^53, even when a * b is not representable. Only the sliding window counter needs them,
-- and only for products past 2^53, so they are built on demand: { mulDivFloor, mulDivCeil }.
local function exactArithmetic()
  local LIMB = 16777216 -- 2^24: limb products stay below 2^48, sums of three below 2^50
  local TWO_48 = 281474976710656

  -- The exact product of two integers 0 <= x, y < 2^53 as hi * 2^48 + lo with 0 <= lo < 2^48,
  -- exact while the product is below 2^101 (hi below 2^53). Splits both factors into three
  -- 24-bit limbs so that no partial product or column sum reaches 2^53.
  local function split(x)
    local x2 = floor(x / TWO_48) -- dividing by a power of two is exact
    local rest = x - x2 * TWO_48
    local x1 = floor(rest / LIMB)
    return rest - x1 * LIMB, x1, x2
  end

  local function mulWide(x, y)
    local x0, x1, x2 = split(x)
    local y0, y1, y2 = split(y)
    local column0 = x0 * y0
    local column1 = x0 * y1 + x1 * y0
    local column2 = x0 * y2 + x1 * y1 + x2 * y0
    local column3 = x1 * y2 + x2 * y1
    local column4 = x2 * y2
    local carry = floor(column0 / LIMB)
    local limb0 = column0 - carry * LIMB
    local middle = column1 + carry
    carry = floor(middle / LIMB)
    local limb1 = middle - carry * LIMB
    local lo = limb0 + limb1 * LIMB
    local hi = column2 + carry + column3 * LIMB + column4 * TWO_48
    return hi, lo
  end

  -- -1, 0 or 1 as a * b is less than, equal to or greater than c * d (all below 2^53).
  local function compareProducts(a, b, c, d)
    local hi1, lo1 = mulWide(a, b)
    local hi2, lo2 = mulWide(c, d)
    if hi1 ~= hi2 then
      if hi1 < hi2 then return -1 end
      return 1
    end
    if lo1 == lo2 then return 0 end
    if lo1 < lo2 then return -1 end
    return 1
  end

  -- The double quotient is off by a few units at most (two roundings of relative size 2^-53),
  -- and exact product comparisons correct it.
  local function mulDivFloor(a, b, c)
    local product = a * b
    if product <= MAX_EXACT then return floor(product / c) end
    local quotient = floor(product / c)
    for _ = 1, 8 do
      if compareProducts(quotient, c, a, b) <= 0 then break end
      quotient = quotient - 1
    end
    for _ = 1, 8 do
      if compareProducts(quotient + 1, c, a, b) > 0 then break end
      quotient = quotient + 1
    end
    return quotient
  end

  local function mulDivCeil(a, b, c)
    local quotient = mulDivFloor(a, b, c)
    if compareProducts(quotient, c, a, b) < 0 then return quotient + 1 end
    return quotient
  end

  return { mulDivFloor = mulDivFloor, mulDivCeil = mulDivCeil }
end

-- a + b * c, or MAX_EXACT when that would not be exact: the sync operation consumes whatever a
-- node admitted, so its sums are not bounded by the limit. 0 <= a, b, c.
local function addProductClamped(a, b, c)
  if c > 0 and b > floor((MAX_EXACT - a) / c) then return MAX_EXACT end
  return a + b * c
end

-- Stores `value` at `key` until full_at_us, when the state it encodes is back to full (a full
-- state equals an absent key), or deletes the key when it already is. The TTL is relative to
-- now_us, rounded up to whole ms. '%d' formats any integer below 2^63 exactly (Lua 5.1 casts
-- to long), and faster than Redis formats a number argument.
local function store(key, value, full_at_us, now_us)
  if full_at_us <= now_us then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value, 'PX', format('%d', -floor((now_us - full_at_us) / 1000)))
  end
end
