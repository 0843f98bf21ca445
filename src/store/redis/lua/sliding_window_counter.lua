-- Sluice's Redis script, part 4 of 8: the sliding window counter (mirrors
-- src/algorithm/sliding_window_counter.cc).
-- State: a = window_start_us, b = current + previous * 2^32 (CompactState's packing of the two
-- 32-bit counts). b is exact while previous < 2^21, which lua_bounds.cc guarantees by refusing
-- counts of 2^21 or more and which force() keeps by clamping.
local sliding_window_counter = {}

local TWO_32 = 4294967296
-- Counts a sync may leave in a window: previous must stay below 2^21 for b to be exact.
local MAX_SYNCED_COUNT = 2097151

local function unpackCounts(b)
  local previous = math.floor(b / TWO_32)
  return b - previous * TWO_32, previous
end

local function packCounts(current, previous)
  return current + previous * TWO_32
end

-- The window, its counts, and the effective now; a clock that stepped back stays in the stored
-- window.
local function load(state, now_us, window_us)
  local start_us = common.floorDiv(now_us, window_us) * window_us
  if start_us < state.a then
    start_us = state.a
    now_us = start_us
  end
  local stored_current, stored_previous = unpackCounts(state.b)
  if start_us == state.a then return start_us, now_us, stored_current, stored_previous end
  if start_us == state.a + window_us then return start_us, now_us, 0, stored_current end
  return start_us, now_us, 0, 0
end

-- The earliest offset into a window at which previous * (window - offset) <= room * window.
-- Requires room >= 0 and previous > 0.
local function offsetWhereWeightFits(previous, room, window_us)
  if room >= previous then return 0 end
  return window_us - common.mulDivFloor(room, window_us, previous)
end

function sliding_window_counter.consume(state, now_us, spec, cost)
  local limit = spec.count
  local window_us = spec.period_us
  local start_us, current, previous
  start_us, now_us, current, previous = load(state, now_us, window_us)
  -- C++ counts in 1/window_us of a request: used = previous * unelapsed + current * window.
  -- Here the previous window's weight is rounded up to whole requests instead, which gives the
  -- same floors and comparisons: floor((L*w - C*w - P*u) / w) = L - C - ceil(P*u / w).
  local weight = 0
  if previous > 0 then
    weight = common.mulDivCeil(previous, window_us - (now_us - start_us), window_us)
  end
  local function resetAfter(current_after)
    if current_after > 0 then return start_us + 2 * window_us - now_us end
    return start_us + window_us - now_us
  end

  local outcome = common.outcome(limit)
  outcome.remaining = common.max(0, limit - current - weight)
  outcome.reset_after_us = resetAfter(current)
  if cost > limit then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
    return outcome
  end
  if current + cost + weight > limit then
    outcome.reason = common.REASON_OVER_LIMIT
    local room_now = limit - current - cost
    if room_now >= 0 then -- fits later in this window, as the previous window's weight fades
      outcome.retry_after_us =
        start_us + offsetWhereWeightFits(previous, room_now, window_us) - now_us
    else -- the next window, where this window's count becomes the weighted one
      outcome.retry_after_us =
        start_us + window_us + offsetWhereWeightFits(current, limit - cost, window_us) - now_us
    end
    return outcome
  end
  outcome.allowed = true
  outcome.remaining = limit - current - cost - weight
  outcome.reset_after_us = resetAfter(current + cost)
  if cost > 0 then
    state.a = start_us
    state.b = packCounts(current + cost, previous)
  end
  return outcome
end

function sliding_window_counter.force(state, now_us, spec, cost)
  if cost == 0 then return end
  local start_us, _, current, previous = load(state, now_us, spec.period_us)
  state.a = start_us
  state.b = packCounts(common.min(MAX_SYNCED_COUNT, current + cost),
                       common.min(MAX_SYNCED_COUNT, previous))
end

-- Gives back `cost` consumed at now_us from whichever stored count holds that window.
function sliding_window_counter.refund(state, now_us, spec, cost)
  local window_us = spec.period_us
  local start_us = common.floorDiv(now_us, window_us) * window_us
  local current, previous = unpackCounts(state.b)
  if state.a == start_us then
    current = common.max(0, current - cost)
  elseif state.a == start_us + window_us then
    previous = common.max(0, previous - cost)
  else
    return
  end
  state.b = packCounts(current, previous)
end

function sliding_window_counter.fullAt(state, spec)
  local current, previous = unpackCounts(state.b)
  if current > 0 then return state.a + 2 * spec.period_us end
  if previous > 0 then return state.a + spec.period_us end
  return state.a
end
