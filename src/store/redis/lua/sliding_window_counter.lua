-- Sluice's Redis script, part 5 of 9: the sliding window counter (mirrors
-- src/algorithm/sliding_window_counter.cc).
-- State: a = window_start_us, b = current + previous * 2^32 (CompactState's packing of the two
-- 32-bit counts). b is exact while previous < 2^21, which lua_bounds.cc guarantees by refusing
-- counts of 2^21 or more and which force() keeps by clamping.
if uses[SLIDING_WINDOW_COUNTER] then
  local TWO_32 = 4294967296
  -- Counts a sync may leave in a window: previous must stay below 2^21 for b to be exact.
  local MAX_SYNCED_COUNT = 2097151

  local exact -- exactArithmetic(), built when a product passes 2^53 (long windows)

  -- floor(a * b / c) and ceil(a * b / c); plain doubles while a * b is exact.
  local function mulDivFloor(a, b, c)
    local product = a * b
    if product <= MAX_EXACT then return floor(product / c) end
    exact = exact or exactArithmetic()
    return exact.mulDivFloor(a, b, c)
  end

  local function mulDivCeil(a, b, c)
    local product = a * b
    if product <= MAX_EXACT then return -floor(-product / c) end
    exact = exact or exactArithmetic()
    return exact.mulDivCeil(a, b, c)
  end

  local function unpackCounts(b)
    local previous = floor(b / TWO_32)
    return b - previous * TWO_32, previous
  end

  -- The window, the effective now and the window's counts; a clock that stepped back stays in
  -- the stored window.
  local function load(state, now_us, window_us)
    local start_us = floor(now_us / window_us) * window_us
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
    return window_us - mulDivFloor(room, window_us, previous)
  end

  local function consume(state, now_us, spec, cost)
    local limit = spec.count
    local window_us = spec.period_us
    local start_us, current, previous
    start_us, now_us, current, previous = load(state, now_us, window_us)
    -- C++ counts in 1/window_us of a request: used = previous * unelapsed + current * window.
    -- Here the previous window's weight is rounded up to whole requests instead, which gives
    -- the same floors and comparisons: floor((L*w - C*w - P*u) / w) = L - C - ceil(P*u / w).
    local weight = 0
    if previous > 0 then
      weight = mulDivCeil(previous, window_us - (now_us - start_us), window_us)
    end
    -- Until the key is back to full: the end of this window, or of the next one while this
    -- window's count is not zero.
    local reset_after_us = start_us + window_us - now_us
    if current > 0 then reset_after_us = reset_after_us + window_us end
    local remaining = max(0, limit - current - weight)

    if cost > limit then
      return 0, REASON_COST_EXCEEDS_LIMIT, limit, remaining, reset_after_us, NEVER, 0
    end
    if current + cost + weight > limit then
      local retry_after_us
      local room_now = limit - current - cost
      if room_now >= 0 then -- fits later in this window, as the previous window's weight fades
        retry_after_us = start_us + offsetWhereWeightFits(previous, room_now, window_us) - now_us
      else -- the next window, where this window's count becomes the weighted one
        retry_after_us =
          start_us + window_us + offsetWhereWeightFits(current, limit - cost, window_us) - now_us
      end
      return 0, REASON_OVER_LIMIT, limit, remaining, reset_after_us, retry_after_us, 0
    end
    if cost > 0 then
      state.a = start_us
      state.b = current + cost + previous * TWO_32
      reset_after_us = start_us + 2 * window_us - now_us
    end
    return 1, REASON_NONE, limit, limit - current - cost - weight, reset_after_us, 0, 0
  end

  local function force(state, now_us, spec, cost)
    if cost == 0 then return end
    local start_us, _, current, previous = load(state, now_us, spec.period_us)
    state.a = start_us
    state.b = min(MAX_SYNCED_COUNT, current + cost) + min(MAX_SYNCED_COUNT, previous) * TWO_32
  end

  -- Gives back `cost` consumed at now_us from whichever stored count holds that window.
  local function refund(state, now_us, spec, cost)
    local window_us = spec.period_us
    local start_us = floor(now_us / window_us) * window_us
    local current, previous = unpackCounts(state.b)
    if state.a == start_us then
      current = max(0, current - cost)
    elseif state.a == start_us + window_us then
      previous = max(0, previous - cost)
    else
      return
    end
    state.b = current + previous * TWO_32
  end

  local function fullAt(state, spec)
    local current, previous = unpackCounts(state.b)
    if current > 0 then return state.a + 2 * spec.period_us end
    if previous > 0 then return state.a + spec.period_us end
    return state.a
  end

  algorithms[SLIDING_WINDOW_COUNTER] = { consume = consume, force = force, refund = refund,
                                         fullAt = fullAt }
end
