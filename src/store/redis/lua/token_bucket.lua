-- Sluice's Redis script, part 6 of 9: the draining bucket behind kTokenBucket,
-- kLeakyBucketMeter and kLeakyBucketShaper (mirrors src/algorithm/draining_bucket.cc).
-- State: a = last_us (last admission), b = level in scaled units (one request weighs
-- spec.unit_weight, spec.drain_per_us leak out per µs).
-- Exact while burst * unit_weight + drain_per_us < 2^53 (lua_bounds.cc).
if uses[TOKEN_BUCKET] or uses[LEAKY_BUCKET_METER] or uses[LEAKY_BUCKET_SHAPER] then
  -- max(0, level - elapsed * drain) without forming the product, which can pass 2^53: when the
  -- bucket is not yet empty, elapsed * drain < level.
  local function drainedLevel(level, elapsed_us, drain_per_us)
    if level <= 0 or elapsed_us >= -floor(-level / drain_per_us) then return 0 end
    return level - elapsed_us * drain_per_us
  end

  local function consume(state, now_us, spec, cost)
    now_us = max(now_us, state.a)
    local limit = spec.burst
    local unit = spec.unit_weight
    local drain_per_us = spec.drain_per_us
    local capacity = limit * unit
    local level = drainedLevel(state.b, now_us - state.a, drain_per_us)
    -- A lowered burst (or a sync) can leave the level above the capacity: then 0, as C++'s
    -- truncating division of a negative difference is clamped to 0 too.
    local remaining = max(0, floor((capacity - level) / unit))
    local reset_after_us = -floor(-level / drain_per_us)

    if cost > limit then
      return 0, REASON_COST_EXCEEDS_LIMIT, limit, remaining, reset_after_us, NEVER, 0
    end
    -- level + weight > capacity, compared without a sum that could pass 2^53.
    local room = capacity - cost * unit
    if level > room then
      return 0, REASON_OVER_LIMIT, limit, remaining, reset_after_us,
             -floor((room - level) / drain_per_us), 0
    end
    local delay_us = 0
    if spec.algorithm == LEAKY_BUCKET_SHAPER and cost > 0 then
      delay_us = reset_after_us -- the water ahead leaks first; a peek takes no slot
    end
    if cost > 0 then
      level = level + cost * unit
      state.a = now_us
      state.b = level
      remaining = max(0, floor((capacity - level) / unit))
      reset_after_us = -floor(-level / drain_per_us)
    end
    return 1, REASON_NONE, limit, remaining, reset_after_us, 0, delay_us
  end

  local function force(state, now_us, spec, cost)
    if cost == 0 then return end
    now_us = max(now_us, state.a)
    local level = drainedLevel(state.b, now_us - state.a, spec.drain_per_us)
    state.a = now_us
    state.b = addProductClamped(level, cost, spec.unit_weight)
  end

  -- Gives back `cost` consumed at now_us. The level is stored as of last_us; since now_us, the
  -- bucket with the consumption can have drained more than the one without by at most
  -- (last_us - now_us) * drain (only while the other was empty), so that much of the weight
  -- may already be gone. Returning only the rest never leaves more room than there would have
  -- been.
  local function refund(state, now_us, spec, cost)
    if state.a < now_us then return end -- the consumption is not in this state
    local weight = min(cost, spec.burst) * spec.unit_weight
    local returned = drainedLevel(weight, state.a - now_us, spec.drain_per_us)
    state.b = max(0, state.b - returned)
  end

  local function fullAt(state, spec)
    return state.a - floor(-state.b / spec.drain_per_us)
  end

  local draining_bucket = { consume = consume, force = force, refund = refund, fullAt = fullAt }
  algorithms[TOKEN_BUCKET] = draining_bucket
  algorithms[LEAKY_BUCKET_METER] = draining_bucket
  algorithms[LEAKY_BUCKET_SHAPER] = draining_bucket
end
