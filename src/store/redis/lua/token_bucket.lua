-- Sluice's Redis script, part 5 of 8: the draining bucket behind kTokenBucket,
-- kLeakyBucketMeter and kLeakyBucketShaper (mirrors src/algorithm/draining_bucket.cc).
-- State: a = last_us (last admission), b = level in scaled units (one request weighs
-- spec.unit_weight, spec.drain_per_us leak out per µs).
-- Exact while burst * unit_weight + drain_per_us < 2^53 (lua_bounds.cc).
local token_bucket = {}

local SHAPER = 6 -- Algorithm::kLeakyBucketShaper

-- max(0, level - elapsed * drain) without forming the product, which can pass 2^53: when the
-- bucket is not yet empty, elapsed * drain < level.
local function drainedLevel(level, elapsed_us, drain_per_us)
  if level <= 0 or elapsed_us >= common.ceilDiv(level, drain_per_us) then return 0 end
  return level - elapsed_us * drain_per_us
end

function token_bucket.consume(state, now_us, spec, cost)
  now_us = common.max(now_us, state.a)
  local unit = spec.unit_weight
  local drain_per_us = spec.drain_per_us
  local capacity = spec.burst * unit
  local level = drainedLevel(state.b, now_us - state.a, drain_per_us)

  local outcome = common.outcome(spec.burst)
  local level_after = level
  if cost > spec.burst then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
  else
    -- level + weight > capacity, compared without a sum that could pass 2^53.
    local room = capacity - cost * unit
    if level > room then
      outcome.reason = common.REASON_OVER_LIMIT
      outcome.retry_after_us = common.ceilDiv(level - room, drain_per_us)
    else
      outcome.allowed = true
      if spec.algorithm == SHAPER then
        outcome.delay_us = common.ceilDiv(level, drain_per_us) -- the water ahead leaks first
      end
      if cost > 0 then
        level_after = level + cost * unit
        state.a = now_us
        state.b = level_after
      end
    end
  end
  -- A lowered burst (or a sync) can leave the level above the capacity.
  outcome.remaining = common.max(0, common.truncDiv(capacity - level_after, unit))
  outcome.reset_after_us = common.ceilDiv(level_after, drain_per_us)
  return outcome
end

function token_bucket.force(state, now_us, spec, cost)
  if cost == 0 then return end
  now_us = common.max(now_us, state.a)
  local level = drainedLevel(state.b, now_us - state.a, spec.drain_per_us)
  state.a = now_us
  state.b = common.addProductClamped(level, cost, spec.unit_weight)
end

-- Gives back `cost` consumed at now_us. The level is stored as of last_us; since now_us, the
-- bucket with the consumption can have drained more than the one without by at most
-- (last_us - now_us) * drain (only while the other was empty), so that much of the weight may
-- already be gone. Returning only the rest never leaves more room than there would have been.
function token_bucket.refund(state, now_us, spec, cost)
  if state.a < now_us then return end -- the consumption is not in this state
  local weight = common.min(cost, spec.burst) * spec.unit_weight
  local returned = drainedLevel(weight, state.a - now_us, spec.drain_per_us)
  state.b = common.max(0, state.b - returned)
end

function token_bucket.fullAt(state, spec)
  return state.a + common.ceilDiv(state.b, spec.drain_per_us)
end
