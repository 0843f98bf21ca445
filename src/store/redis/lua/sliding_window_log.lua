-- Sluice's Redis script, part 4 of 9: the sliding window log (mirrors
-- src/algorithm/sliding_window_log.cc).
-- State: a string of 16-byte entries, each the instant at_us and the units admitted at that
-- instant as two little-endian doubles ('<dd'), oldest first. Units admitted at one instant
-- share one entry, so the log never holds more entries than the limit. Entries that have slid
-- out of the window are trimmed whenever the log is evaluated, as SlidingWindowLog::evaluate
-- forgets them. One GET reads the log and one SET ... PX writes it back; entries that did not
-- change are copied as bytes, not packed again.
local sliding_window_log -- the functions below, when the call uses the log

if uses[SLIDING_WINDOW_LOG] then
  local ENTRY = 16 -- bytes per entry

  -- The log at `key`, in memory. Entries first..last are live; those up to stored_count are
  -- the ones in `text`, later ones were recorded by this call.
  local function load(key)
    local text = redis.pcall('GET', key)
    if type(text) == 'table' then
      -- WRONGTYPE: a list of "<at_us>:<units>" texts, as earlier script versions wrote.
      -- Read as if packed; the next write replaces it. Entries of another form are skipped,
      -- and a key of another type reads as an empty log, as in readValues (main.lua).
      local packed = {}
      local entries = redis.pcall('LRANGE', key, 0, -1)
      if entries.err then entries = {} end
      for _, entry in ipairs(entries) do
        local at_text, units_text = match(entry, '^(%d+):(%d+)$')
        if at_text then
          packed[#packed + 1] = pack('<dd', tonumber(at_text), tonumber(units_text))
        end
      end
      text = table.concat(packed)
    end
    -- A string that is not whole entries was not written by this script: an empty log.
    if not text or #text % ENTRY ~= 0 then text = '' end
    local at, units = {}, {}
    local last, total, foreign = 0, 0, false
    for position = 1, #text - ENTRY + 1, ENTRY do
      last = last + 1
      local at_us, admitted = unpack('<dd', text, position)
      at[last], units[last] = at_us, admitted
      total = total + admitted
      -- Entries this script writes: whole instants and whole units it computes exactly (NaN
      -- fails). Units past that made every later answer unreadable.
      if not (at_us >= 0 and at_us <= MAX_EXACT and at_us % 1 == 0 and admitted >= 0 and
              admitted <= MAX_EXACT and admitted % 1 == 0) then
        foreign = true
      end
    end
    -- A log with a foreign entry reads as an empty log too.
    if foreign then
      text, at, units, last, total = '', {}, {}, 0, 0
    end
    return { key = key, text = text, at = at, units = units, first = 1, last = last,
             stored_count = last, total = total, newest_changed = false, latest = false }
  end

  -- Decides without recording, with consume()'s seven results (arguments.lua); `pending`
  -- units admitted earlier in the same request count as if recorded at now_us.
  local function evaluate(log, now_us, spec, cost, pending)
    local limit = spec.count
    local window_us = spec.period_us
    local at, units = log.at, log.units
    if log.last >= log.first then now_us = max(now_us, at[log.last]) end
    -- Forget entries at or before now - window: an entry at t counts while t > now - window.
    local cutoff_us = now_us - window_us
    while log.first <= log.last and at[log.first] <= cutoff_us do
      log.total = log.total - units[log.first]
      log.first = log.first + 1
    end
    local live = log.last >= log.first
    local used = log.total + pending
    local remaining = max(0, limit - used)
    local reset_after_us = 0
    if live then
      reset_after_us = at[log.last] + window_us - now_us
    elseif pending > 0 then
      reset_after_us = window_us
    end

    if cost > limit then
      return 0, REASON_COST_EXCEEDS_LIMIT, limit, remaining, reset_after_us, NEVER, 0
    end
    if used + cost > limit then
      -- Wait until enough of the oldest units slide out for this cost to fit.
      local must_expire = used + cost - limit
      local expired = 0
      local fits_at_us = now_us + window_us -- pending units expire a window after now
      for i = log.first, log.last do
        expired = expired + units[i]
        if expired >= must_expire then
          fits_at_us = at[i] + window_us
          break
        end
      end
      return 0, REASON_OVER_LIMIT, limit, remaining, reset_after_us, fits_at_us - now_us, 0
    end
    if cost > 0 then reset_after_us = window_us end
    return 1, REASON_NONE, limit, limit - used - cost, reset_after_us, 0, 0
  end

  -- Records `cost` units admitted at now_us (after evaluate admitted them).
  local function record(log, now_us, cost)
    if cost == 0 then return end
    if log.last >= log.first then
      local newest_us = log.at[log.last]
      now_us = max(now_us, newest_us)
      if newest_us == now_us then -- same instant: one entry, so memory stays bounded
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

  -- Writes the log back if this call trimmed, grew or added entries; the key expires when its
  -- newest entry slides out.
  local function persist(log, now_us, spec)
    if log.first == 1 and log.last == log.stored_count and not log.newest_changed then return end
    if log.last < log.first then
      redis.call('DEL', log.key)
      return
    end
    local verbatim_last = log.stored_count -- the last stored entry still as stored
    if log.newest_changed then verbatim_last = verbatim_last - 1 end
    local text = ''
    if log.first <= verbatim_last then
      text = sub(log.text, (log.first - 1) * ENTRY + 1, verbatim_last * ENTRY)
    end
    for i = max(log.first, verbatim_last + 1), log.last do
      text = text .. pack('<dd', log.at[i], log.units[i])
    end
    store(log.key, text, log.at[log.last] + spec.period_us, now_us)
  end

  -- Gives back `cost` units recorded at exactly now_us; an entry left empty is removed.
  local function refund(key, now_us, spec, cost)
    local log = load(key)
    local at, units = log.at, log.units
    for i = log.last, 1, -1 do
      if at[i] == now_us then
        local left = units[i] - min(cost, units[i])
        local entry = ''
        if left > 0 then entry = pack('<dd', now_us, left) end
        local text = sub(log.text, 1, (i - 1) * ENTRY) .. entry .. sub(log.text, i * ENTRY + 1)
        if text == '' then
          redis.call('DEL', key)
          return
        end
        local newest_us = at[log.last]
        if i == log.last and left == 0 then newest_us = at[i - 1] end
        store(key, text, newest_us + spec.period_us, now_us)
        return
      end
      if at[i] < now_us then return end
    end
  end

  sliding_window_log = { load = load, evaluate = evaluate, record = record, persist = persist,
                         refund = refund }
end
