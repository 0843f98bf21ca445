-- Sluice's Redis script, part 2 of 8: the fixed window (mirrors src/algorithm/fixed_window.cc).
-- State: a = window_start_us, b = count in that window.
local fixed_window = {}

local function windowStart(now_us, window_us)
  return common.floorDiv(now_us, window_us) * window_us
end

-- The window a request at now_us counts in; a clock that stepped back stays in the stored one.
local function currentWindow(state, now_us, window_us)
  local start_us = windowStart(now_us, window_us)
  if start_us < state.a then return state.a, state.a end
  return start_us, now_us
end

function fixed_window.consume(state, now_us, spec, cost)
  local limit = spec.count
  local window_us = spec.period_us
  local start_us
  start_us, now_us = currentWindow(state, now_us, window_us)
  local used = 0
  if start_us == state.a then used = state.b end

  local outcome = common.outcome(limit)
  outcome.remaining = common.max(0, limit - used) -- a lowered limit can be overrun
  outcome.reset_after_us = start_us + window_us - now_us
  if cost > limit then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
    return outcome
  end
  if used + cost > limit then
    outcome.reason = common.REASON_OVER_LIMIT
    outcome.retry_after_us = outcome.reset_after_us
    return outcome
  end
  outcome.allowed = true
  outcome.remaining = limit - used - cost
  if cost > 0 then
    state.a = start_us
    state.b = used + cost
  end
  return outcome
end

-- Consumes `cost` whether or not it fits (sync).
function fixed_window.force(state, now_us, spec, cost)
  if cost == 0 then return end
  local start_us = currentWindow(state, now_us, spec.period_us)
  local used = 0
  if start_us == state.a then used = state.b end
  state.a = start_us
  state.b = common.addProductClamped(used, cost, 1)
end

-- Gives back `cost` consumed at now_us, if that window is still the stored one.
function fixed_window.refund(state, now_us, spec, cost)
  if state.a == windowStart(now_us, spec.period_us) then
    state.b = common.max(0, state.b - cost)
  end
end

function fixed_window.fullAt(state, spec)
  if state.b == 0 then return state.a end
  return state.a + spec.period_us
end
