-- Sluice's Redis script, part 7 of 9: the token bucket with interval refill (mirrors
-- src/algorithm/interval_token_bucket.cc).
-- State: a = refilled_at_us, b = deficit (missing tokens); refills happen at a + k * period.
-- Exact while ceil(burst / count) * period < 2^53 (lua_bounds.cc).
if uses[INTERVAL_TOKEN_BUCKET] then
  -- max(0, deficit - intervals * count) without forming the product, which can pass 2^53.
  local function deficitAfter(deficit, intervals, count)
    if intervals >= -floor(-deficit / count) then return 0 end
    return deficit - intervals * count
  end

  -- Time from a refill until `missing` tokens have been refilled.
  local function refillTime(missing, spec)
    return -floor(-missing / spec.count) * spec.period_us
  end

  -- Applies the refills due by now_us: the refill instant, the deficit, and the effective now.
  local function refill(state, now_us, spec)
    if state.b <= 0 then return now_us, 0, now_us end
    now_us = max(now_us, state.a)
    local intervals = floor((now_us - state.a) / spec.period_us)
    local deficit = deficitAfter(state.b, intervals, spec.count)
    if deficit > 0 then return state.a + intervals * spec.period_us, deficit, now_us end
    return now_us, 0, now_us
  end

  local function consume(state, now_us, spec, cost)
    local limit = spec.burst
    local refilled_at_us, deficit
    refilled_at_us, deficit, now_us = refill(state, now_us, spec)
    local since_refill_us = now_us - refilled_at_us
    local remaining = max(0, limit - deficit)
    local reset_after_us = max(0, refillTime(deficit, spec) - since_refill_us)

    if cost > limit then
      return 0, REASON_COST_EXCEEDS_LIMIT, limit, remaining, reset_after_us, NEVER, 0
    end
    if deficit + cost > limit then
      return 0, REASON_OVER_LIMIT, limit, remaining, reset_after_us,
             max(0, refillTime(deficit + cost - limit, spec) - since_refill_us), 0
    end
    if cost > 0 then
      deficit = deficit + cost
      state.a = refilled_at_us
      state.b = deficit
      remaining = limit - deficit
      reset_after_us = max(0, refillTime(deficit, spec) - since_refill_us)
    end
    return 1, REASON_NONE, limit, remaining, reset_after_us, 0, 0
  end

  local function force(state, now_us, spec, cost)
    if cost == 0 then return end
    local refilled_at_us, deficit = refill(state, now_us, spec)
    -- Keep refillTime(deficit) below 2^53.
    local max_deficit = MAX_EXACT
    local max_refills = floor(MAX_EXACT / spec.period_us)
    if max_refills < -floor(-MAX_EXACT / spec.count) then
      max_deficit = max_refills * spec.count
    end
    state.a = refilled_at_us
    state.b = min(max_deficit, addProductClamped(deficit, cost, 1))
  end

  -- Gives back `cost` consumed at now_us. Refills at boundaries after now_us may have been
  -- partly wasted on the bucket without the consumption (they stop at full), at most `count`
  -- tokens each; only the rest is returned, so the refund never leaves more than there would
  -- have been. A bucket that has been full since restarts its refill clock later, and then the
  -- boundaries counted cover the whole cost.
  local function refund(state, now_us, spec, cost)
    if state.b <= 0 then return end
    local boundaries = 0
    if state.a > now_us then boundaries = -floor((now_us - state.a) / spec.period_us) end
    local returned = deficitAfter(cost, boundaries, spec.count)
    state.b = max(0, state.b - returned)
  end

  local function fullAt(state, spec)
    return state.a + refillTime(state.b, spec)
  end

  algorithms[INTERVAL_TOKEN_BUCKET] = { consume = consume, force = force, refund = refund,
                                        fullAt = fullAt }
end
