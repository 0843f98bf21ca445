-- Sluice's Redis script, part 3 of 8: the sliding window log (mirrors
-- src/algorithm/sliding_window_log.cc).
-- State: a Redis list, oldest entry first, each entry "<at_us>:<units>": the units admitted at
-- that instant. Units admitted at one instant share one entry, so the list never holds more
-- entries than the limit. Entries that have slid out of the window are trimmed whenever the
-- log is evaluated, as SlidingWindowLog::evaluate forgets them.
local sliding_window_log = {}

local function decodeEntry(text)
  local separator = string.find(text, ':', 1, true)
  if separator == nil then error('sluice: malformed sliding log entry: ' .. text) end
  return tonumber(string.sub(text, 1, separator - 1)), tonumber(string.sub(text, separator + 1))
end

local function encodeEntry(at_us, units)
  return common.decimal(at_us) .. ':' .. common.decimal(units)
end

-- The log at `key`, in memory. Entries first..last are live; those up to stored_count are in
-- Redis, later ones were recorded by this call and are not yet.
function sliding_window_log.load(key)
  local log = { key = key, at = {}, units = {}, first = 1, last = 0, total = 0,
                newest_changed = false }
  for _, text in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local at_us, units = decodeEntry(text)
    log.last = log.last + 1
    log.at[log.last] = at_us
    log.units[log.last] = units
    log.total = log.total + units
  end
  log.stored_count = log.last
  return log
end

local function size(log)
  return log.last - log.first + 1
end

-- Forgets entries at or before cutoff_us: an entry at t counts while t > now - window.
local function forgetBefore(log, cutoff_us)
  while size(log) > 0 and log.at[log.first] <= cutoff_us do
    log.total = log.total - log.units[log.first]
    log.first = log.first + 1
  end
end

-- Decides without recording; `pending` units admitted earlier in the same request count as if
-- recorded at now_us.
function sliding_window_log.evaluate(log, now_us, spec, cost, pending)
  local limit = spec.count
  local window_us = spec.period_us
  if size(log) > 0 then now_us = common.max(now_us, log.at[log.last]) end
  forgetBefore(log, now_us - window_us)
  local used = log.total + pending

  local outcome = common.outcome(limit)
  outcome.remaining = common.max(0, limit - used)
  local newest_us = now_us
  if size(log) > 0 then newest_us = log.at[log.last] end
  if size(log) > 0 or pending > 0 then outcome.reset_after_us = newest_us + window_us - now_us end
  if cost > limit then
    outcome.reason = common.REASON_COST_EXCEEDS_LIMIT
    outcome.retry_after_us = common.NEVER
    return outcome
  end
  if used + cost > limit then
    outcome.reason = common.REASON_OVER_LIMIT
    -- Wait until enough of the oldest units slide out for this cost to fit.
    local must_expire = used + cost - limit
    local expired = 0
    local fits_at_us = now_us + window_us -- pending units expire a window after now
    for i = log.first, log.last do
      expired = expired + log.units[i]
      if expired >= must_expire then
        fits_at_us = log.at[i] + window_us
        break
      end
    end
    outcome.retry_after_us = fits_at_us - now_us
    return outcome
  end
  outcome.allowed = true
  outcome.remaining = limit - used - cost
  if cost > 0 then outcome.reset_after_us = window_us end
  return outcome
end

-- Records `cost` units admitted at now_us (after evaluate admitted them).
function sliding_window_log.record(log, now_us, cost)
  if cost == 0 then return end
  if size(log) > 0 then
    now_us = common.max(now_us, log.at[log.last])
    if log.at[log.last] == now_us then -- same instant: one entry, so memory stays bounded
      log.units[log.last] = log.units[log.last] + cost
      log.total = log.total + cost
      if log.last <= log.stored_count then log.newest_changed = true end
      return
    end
  end
  log.last = log.last + 1
  log.at[log.last] = now_us
  log.units[log.last] = cost
  log.total = log.total + cost
end

-- Writes back what load() read and this call changed: trimmed entries, the newest stored
-- entry if it grew, new entries; the key expires when its newest entry slides out.
function sliding_window_log.persist(log, now_us, spec)
  local key = log.key
  local trimmed = common.min(log.first - 1, log.stored_count)
  if trimmed == log.stored_count and trimmed > 0 then
    redis.call('DEL', key)
  elseif trimmed > 0 then
    redis.call('LTRIM', key, trimmed, -1)
  end
  if log.newest_changed and log.stored_count >= log.first then
    redis.call('LSET', key, -1, encodeEntry(log.at[log.stored_count], log.units[log.stored_count]))
  end
  local first_new = common.max(log.first, log.stored_count + 1)
  for i = first_new, log.last do
    redis.call('RPUSH', key, encodeEntry(log.at[i], log.units[i]))
  end
  if first_new <= log.last or log.newest_changed then
    common.expireAt(key, sliding_window_log.fullAt(log, spec), now_us)
  end
end

-- Gives back `cost` units recorded at exactly now_us; entries left empty are removed.
function sliding_window_log.refund(key, now_us, spec, cost)
  local log = sliding_window_log.load(key)
  for i = log.last, log.first, -1 do
    if log.at[i] == now_us then
      local left = log.units[i] - common.min(cost, log.units[i])
      if left > 0 then
        redis.call('LSET', key, i - 1, encodeEntry(now_us, left))
        return
      end
      -- A placeholder no entry can equal marks the one entry to remove.
      redis.call('LSET', key, i - 1, '-')
      redis.call('LREM', key, 1, '-')
      if i == log.last and i > log.first then
        common.expireAt(key, log.at[i - 1] + spec.period_us, now_us)
      end
      return
    end
    if log.at[i] < now_us then return end
  end
end

function sliding_window_log.fullAt(log, spec)
  if size(log) == 0 then return 0 end
  return log.at[log.last] + spec.period_us
end
