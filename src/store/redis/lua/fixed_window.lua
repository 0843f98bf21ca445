-- Sluice's Redis script, part 3 of 9: the fixed window (mirrors src/algorithm/fixed_window.cc).
-- State: a = window_start_us, b = count in that window.
if uses[FIXED_WINDOW] then
  -- The window a request at now_us counts in, and the effective now; a clock that stepped back
  -- stays in the stored window.
  local function currentWindow(state, now_us, window_us)
    local start_us = floor(now_us / window_us) * window_us
    if start_us < state.a then return state.a, state.a end
    return start_us, now_us
  end

  local function consume(state, now_us, spec, cost)
    local limit = spec.count
    local window_us = spec.period_us
    local start_us
    start_us, now_us = currentWindow(state, now_us, window_us)
    local used = 0
    if start_us == state.a then used = state.b end
    local remaining = max(0, limit - used) -- a lowered limit can be overrun
    local reset_after_us = start_us + window_us - now_us

    if cost > limit then
      return 0, REASON_COST_EXCEEDS_LIMIT, limit, remaining, reset_after_us, NEVER, 0
    end
    if used + cost > limit then
      return 0, REASON_OVER_LIMIT, limit, remaining, reset_after_us, reset_after_us, 0
    end
    if cost > 0 then
      state.a = start_us
      state.b = used + cost
    end
    return 1, REASON_NONE, limit, limit - used - cost, reset_after_us, 0, 0
  end

  local function force(state, now_us, spec, cost)
    if cost == 0 then return end
    local start_us = currentWindow(state, now_us, spec.period_us)
    local used = 0
    if start_us == state.a then used = state.b end
    state.a = start_us
    state.b = addProductClamped(used, cost, 1)
  end

  -- Gives back `cost` consumed at now_us, if that window is still the stored one.
  local function refund(state, now_us, spec, cost)
    if state.a == floor(now_us / spec.period_us) * spec.period_us then
      state.b = max(0, state.b - cost)
    end
  end

  local function fullAt(state, spec)
    if state.b == 0 then return state.a end
    return state.a + spec.period_us
  end

  algorithms[FIXED_WINDOW] = { consume = consume, force = force, refund = refund, fullAt = fullAt }
end
