-- Sluice's Redis script, part 8 of 9: GCRA (mirrors src/algorithm/gcra.cc).
-- State: a = tat_us, b = tat_fraction: the theoretical arrival time is a + b / drain_per_us µs.
-- The key also keeps t, the latest instant the state was written, for refunds only.
--
-- C++ forms scaled instants (µs * drain_per_us), which pass 2^53 for any current date. Here
-- only differences from now are scaled: TAT - now = ahead_us * drain_per_us + fraction, and it
-- is formed only once a comparison has shown it to be at most the tolerance.
-- Exact while burst * unit_weight + drain_per_us < 2^53 (lua_bounds.cc).
if uses[GCRA] then
  -- The TAT to start from, as (whole µs, fraction); an old TAT means "now", and so does one
  -- 2^53 - 1 µs (MAX_EXACT) or more ahead, which no write of this script leaves (consume keeps
  -- the TAT within the tolerance of now, force below 2^53): another program's value, whose
  -- distance from now no reply number could carry. (The C++ algorithm never reads such state.)
  local function base(state, now_us)
    if state.a < now_us or (state.a == now_us and state.b == 0) or
        state.a - now_us >= MAX_EXACT then
      return now_us, 0
    end
    return state.a, state.b
  end

  -- The TAT (tat_us, fraction) moved by `scaled` units (may be negative), fraction kept in
  -- [0, per_us).
  local function shifted(tat_us, fraction, scaled, per_us)
    local total = fraction + scaled
    local carried_us = floor(total / per_us)
    return tat_us + carried_us, total - carried_us * per_us
  end

  local function consume(state, now_us, spec, cost)
    local limit = spec.burst
    local per_us = spec.drain_per_us
    local interval = spec.unit_weight
    local tolerance = limit * interval
    local tat_us, fraction = base(state, now_us)
    local ahead_us = tat_us - now_us

    local allowed, reason, retry_after_us = 0, REASON_NONE, 0
    local added = 0 -- scaled units this request moves the TAT
    if cost > limit then
      reason = REASON_COST_EXCEEDS_LIMIT
      retry_after_us = NEVER
    else
      local slack = tolerance - cost * interval -- admitted iff TAT - now <= slack
      -- ahead_us * per_us + fraction <= slack, without forming the product.
      local most_ahead_us = floor((slack - fraction) / per_us)
      if ahead_us > most_ahead_us then
        reason = REASON_OVER_LIMIT
        -- ceil((TAT - now - slack) / per_us), split so no product passes 2^53.
        retry_after_us = ahead_us - most_ahead_us
      else
        allowed = 1
        if cost > 0 then
          added = cost * interval
          state.a, state.b = shifted(tat_us, fraction, added, per_us)
          state.t = max(state.t, now_us)
        end
      end
    end
    -- Remaining: whole emission intervals left before TAT reaches now + tolerance.
    local remaining = 0
    if ahead_us <= floor((tolerance - added - fraction) / per_us) then
      local used = ahead_us * per_us + fraction + added
      remaining = floor((tolerance - used) / interval)
    end
    local reset_after_us = ahead_us - floor(-(fraction + added) / per_us)
    return allowed, reason, limit, remaining, reset_after_us, retry_after_us, 0
  end

  local function force(state, now_us, spec, cost)
    if cost == 0 then return end
    local tat_us, fraction = base(state, now_us)
    local per_us = spec.drain_per_us
    local added = min(addProductClamped(0, cost, spec.unit_weight), MAX_EXACT - per_us)
    tat_us, fraction = shifted(tat_us, fraction, added, per_us)
    state.a = min(tat_us, MAX_EXACT)
    state.b = fraction
    state.t = max(state.t, now_us)
  end

  -- Gives back `cost` consumed at now_us. As for the token bucket it equals: the TAT with the
  -- consumption can have advanced less, since then, than the one without by at most
  -- (t - now_us) * drain_per_us, where t is the latest write; only the rest is given back.
  local function refund(state, now_us, spec, cost)
    if state.t < now_us then return end -- the consumption is not in this state
    local per_us = spec.drain_per_us
    local weight = min(cost, spec.burst) * spec.unit_weight
    local elapsed_us = state.t - now_us
    if elapsed_us >= -floor(-weight / per_us) then return end
    state.a, state.b = shifted(state.a, state.b, -(weight - elapsed_us * per_us), per_us)
  end

  local function fullAt(state)
    if state.b > 0 then return state.a + 1 end
    return state.a
  end

  algorithms[GCRA] = { consume = consume, force = force, refund = refund, fullAt = fullAt }
end
