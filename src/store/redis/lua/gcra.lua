-- Sluice's Redis script, part 7 of 8: GCRA (mirrors src/algorithm/gcra.cc).
-- State: a = tat_us, b = tat_fraction: the theoretical arrival time is a + b / drain_per_us µs.
-- The hash also keeps t, the latest instant the state was written, for refunds only.
--
-- C++ forms scaled instants (µs * drain_per_us), which pass 2^53 for any current date. Here
-- only differences from now are scaled: TAT - now = ahead_us * drain_per_us + fraction, and it
-- is formed only once a comparison has shown it to be at most the tolerance.
-- Exact while burst * unit_weight + drain_per_us < 2^53 (lua_bounds.cc).
local gcra = {}

-- The TAT to start from, as (whole µs ahead of now, fraction); an old TAT means "now".
local function base(state, now_us)
  if state.a < now_us or (state.a == now_us and state.b == 0) then return now_us, 0 end
  return state.a, state.b
end

-- ahead_us * per_us + fraction <= bound, without forming the product.
local function scaledAtMost(ahead_us, fraction, per_us, bound)
  return ahead_us <= common.floorDiv(bound - fraction, per_us)
end

-- The TAT (tat_us, fraction) moved by `scaled` units (may be negative), fraction kept in
-- [0, per_us).
local function shifted(tat_us, fraction, scaled, per_us)
  local total = fraction + scaled
  local carried_us = common.floorDiv(total, per_us)
  return tat_us + carried_us, total - carried_us * per_us
end

function gcra.consume(state, now_us, spec, cost)
  local per_us = spec.drain_per_us
  local interval = spec.unit_weight
  local tolerance = spec.burst * interval
  local tat_us, fraction = base(state, now_us)
  local ahead_us = tat_us - now_us

  local outcome = common.outcome(spec.burst)
  local added = 0 -- scaled units this request moves the TAT
  if cost > spec.burst then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
  else
    local slack = tolerance - cost * interval -- admitted iff TAT - now <= slack
    if not scaledAtMost(ahead_us, fraction, per_us, slack) then
      outcome.reason = common.REASON_OVER_LIMIT
      -- ceil((TAT - now - slack) / per_us), split so no product passes 2^53.
      outcome.retry_after_us = ahead_us + common.ceilDiv(fraction - slack, per_us)
    else
      outcome.allowed = true
      if cost > 0 then
        added = cost * interval
        state.a, state.b = shifted(tat_us, fraction, added, per_us)
        state.t = common.max(state.t, now_us)
      end
    end
  end
  -- Remaining: whole emission intervals left before TAT reaches now + tolerance.
  if scaledAtMost(ahead_us, fraction, per_us, tolerance - added) then
    local used = ahead_us * per_us + fraction + added
    outcome.remaining = common.floorDiv(tolerance - used, interval)
  end
  outcome.reset_after_us = ahead_us + common.ceilDiv(fraction + added, per_us)
  return outcome
end

function gcra.force(state, now_us, spec, cost)
  if cost == 0 then return end
  local tat_us, fraction = base(state, now_us)
  local per_us = spec.drain_per_us
  local added = common.addProductClamped(0, cost, spec.unit_weight)
  added = common.min(added, common.MAX_EXACT - per_us)
  tat_us, fraction = shifted(tat_us, fraction, added, per_us)
  state.a = common.min(tat_us, common.MAX_EXACT)
  state.b = fraction
  state.t = common.max(state.t, now_us)
end

-- Gives back `cost` consumed at now_us. As for the token bucket it equals: the TAT with the
-- consumption can have advanced less, since then, than the one without by at most
-- (t - now_us) * drain_per_us, where t is the latest write; only the rest is given back.
function gcra.refund(state, now_us, spec, cost)
  if state.t < now_us then return end -- the consumption is not in this state
  local per_us = spec.drain_per_us
  local weight = common.min(cost, spec.burst) * spec.unit_weight
  local elapsed_us = state.t - now_us
  if elapsed_us >= common.ceilDiv(weight, per_us) then return end
  state.a, state.b = shifted(state.a, state.b, -(weight - elapsed_us * per_us), per_us)
end

function gcra.fullAt(state, spec)
  if state.b > 0 then return state.a + 1 end
  return state.a
end
