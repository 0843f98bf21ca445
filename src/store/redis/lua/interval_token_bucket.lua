-- Sluice's Redis script, part 6 of 8: the token bucket with interval refill (mirrors
-- src/algorithm/interval_token_bucket.cc).
-- State: a = refilled_at_us, b = deficit (missing tokens); refills happen at a + k * period.
-- Exact while ceil(burst / count) * period < 2^53 (lua_bounds.cc).
local interval_token_bucket = {}

-- max(0, deficit - intervals * count) without forming the product, which can pass 2^53.
local function deficitAfter(deficit, intervals, count)
  if intervals >= common.ceilDiv(deficit, count) then return 0 end
  return deficit - intervals * count
end

-- Time from a refill until `missing` tokens have been refilled.
local function refillTime(missing, spec)
  return common.ceilDiv(missing, spec.count) * spec.period_us
end

-- Applies the refills due by now_us: the refill instant, the deficit, and the effective now.
local function refill(state, now_us, spec)
  if state.b <= 0 then return now_us, 0, now_us end
  now_us = common.max(now_us, state.a)
  local intervals = common.floorDiv(now_us - state.a, spec.period_us)
  local deficit = deficitAfter(state.b, intervals, spec.count)
  if deficit > 0 then return state.a + intervals * spec.period_us, deficit, now_us end
  return now_us, 0, now_us
end

function interval_token_bucket.consume(state, now_us, spec, cost)
  local capacity = spec.burst
  local refilled_at_us, deficit
  refilled_at_us, deficit, now_us = refill(state, now_us, spec)
  local since_refill_us = now_us - refilled_at_us

  local outcome = common.outcome(capacity)
  outcome.remaining = common.max(0, capacity - deficit)
  outcome.reset_after_us = common.max(0, refillTime(deficit, spec) - since_refill_us)
  if cost > capacity then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
    return outcome
  end
  if deficit + cost > capacity then
    outcome.reason = common.REASON_OVER_LIMIT
    outcome.retry_after_us =
      common.max(0, refillTime(deficit + cost - capacity, spec) - since_refill_us)
    return outcome
  end
  outcome.allowed = true
  if cost == 0 then return outcome end
  deficit = deficit + cost
  outcome.remaining = capacity - deficit
  outcome.reset_after_us = common.max(0, refillTime(deficit, spec) - since_refill_us)
  state.a = refilled_at_us
  state.b = deficit
  return outcome
end

function interval_token_bucket.force(state, now_us, spec, cost)
  if cost == 0 then return end
  local refilled_at_us, deficit = refill(state, now_us, spec)
  -- Keep refillTime(deficit) below 2^53.
  local max_deficit = common.MAX_EXACT
  local max_refills = common.floorDiv(common.MAX_EXACT, spec.period_us)
  if max_refills < common.ceilDiv(common.MAX_EXACT, spec.count) then
    max_deficit = max_refills * spec.count
  end
  state.a = refilled_at_us
  state.b = common.min(max_deficit, common.addProductClamped(deficit, cost, 1))
end

-- Gives back `cost` consumed at now_us. Refills at boundaries after now_us may have been
-- partly wasted on the bucket without the consumption (they stop at full), at most `count`
-- tokens each; only the rest is returned, so the refund never leaves more than there would have
-- been. A bucket that has been full since restarts its refill clock later, and then the
-- boundaries counted cover the whole cost.
function interval_token_bucket.refund(state, now_us, spec, cost)
  if state.b <= 0 then return end
  local boundaries = 0
  if state.a > now_us then boundaries = common.ceilDiv(state.a - now_us, spec.period_us) end
  local returned = deficitAfter(cost, boundaries, spec.count)
  state.b = common.max(0, state.b - returned)
end

function interval_token_bucket.fullAt(state, spec)
  return state.a + refillTime(state.b, spec)
end
