-- Sluice's Redis script, part 9 of 9: the operations, each request all-or-nothing.
-- The contract (arguments, replies, semantics) is src/store/redis/script_protocol.h.
--
-- Storage: a compact algorithm's key is a string of CompactState's two fields a and b as
-- little-endian doubles ('<dd', 16 bytes; GCRA adds t, see gcra.lua: '<ddd', 24 bytes), read
-- with GET and written with SET ... PX; a sliding log's key is a string of entries (see
-- sliding_window_log.lua). Key names must identify the counter as MemoryStore's key hash does
-- (key, algorithm, period, and the count for scaled states): checks with equal key names share
-- state, and two different algorithms must never share a key name.

-- A compact key's state { a, b, t }, with the values as read (stored_a, stored_b, stored_t) to
-- tell whether the call changed it; an absent key is the zero state (exists = false).
local function readState(key)
  local value = redis.pcall('GET', key)
  local a, b, t = 0, 0, 0
  if type(value) == 'table' then
    -- WRONGTYPE: a hash of decimal fields a, b, t, as earlier script versions wrote; the next
    -- write replaces it.
    local fields = redis.call('HMGET', key, 'a', 'b', 't')
    a, b, t = tonumber(fields[1]) or 0, tonumber(fields[2]) or 0, tonumber(fields[3]) or 0
  elseif value then
    if #value == 24 then
      a, b, t = unpack('<ddd', value)
    else
      a, b = unpack('<dd', value)
    end
  end
  return { exists = value ~= false, a = a, b = b, t = t, stored_a = a, stored_b = b,
           stored_t = t, latest = false }
end

-- Writes a compact state back if the call changed it, to expire when it is back to full.
local function writeState(key, state, spec, now_us)
  if state.a == state.stored_a and state.b == state.stored_b then return end
  local value
  if spec.algorithm == GCRA then
    value = pack('<ddd', state.a, state.b, state.t)
  else
    value = pack('<dd', state.a, state.b)
  end
  store(key, value, algorithms[spec.algorithm].fullAt(state, spec), now_us)
end

-- Decides checks first..last as one request, all-or-nothing, writing each check i's seven reply
-- fields at reply[7 * i - 5 ..]: the call's checks for 'decide', one request's for 'batch'.
local function decideRequest(first, last, reply)
  -- Each check decides against its key's running state, as MemoryStore::decide does: a later
  -- check of a key sees what earlier checks of the same request admitted, and when it denies,
  -- it reports when the key's combined cost would pass. keys: name -> its state, loaded once
  -- per request (a later request of a batch reads what an earlier one wrote); state.latest is
  -- the latest check of that key so far (or false), whose spec the key is written with (as
  -- MemoryStore does).
  local keys = {}
  local all_allowed = true
  for i = first, last do
    local check = checks[i]
    local is_log = check.algorithm == SLIDING_WINDOW_LOG
    local state = keys[check.key]
    if state == nil then
      if is_log then
        state = sliding_window_log.load(check.key)
      else
        state = readState(check.key)
      end
      keys[check.key] = state
    end
    local earlier = state.latest
    local j = 7 * i - 5
    check.total_cost = check.cost + (earlier and earlier.total_cost or 0)
    if is_log then
      check.pending = earlier and earlier.pending or 0
      reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
        reply[j + 6] =
          sliding_window_log.evaluate(state, now_us, check.spec, check.cost, check.pending)
      if reply[j] == 1 then
        check.pending = check.pending + check.cost
      elseif earlier then
        reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
          reply[j + 6] = sliding_window_log.evaluate(state, now_us, check.spec, check.total_cost, 0)
      end
    else
      local algorithm = algorithms[check.algorithm]
      reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
        reply[j + 6] = algorithm.consume(state, now_us, check.spec, check.cost)
      if reply[j] == 0 and earlier then
        local original = { a = state.stored_a, b = state.stored_b, t = state.stored_t }
        reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
          reply[j + 6] = algorithm.consume(original, now_us, check.spec, check.total_cost)
        reply[j] = 0 -- even if the combined cost fits, this request did not
        if reply[j + 1] == REASON_NONE then reply[j + 1] = REASON_OVER_LIMIT end
      end
    end
    state.latest = check
    if reply[j] == 0 then all_allowed = false end
  end

  if all_allowed then
    for i = first, last do
      local check = checks[i]
      if check.algorithm == SLIDING_WINDOW_LOG then
        sliding_window_log.record(keys[check.key], now_us, check.cost)
      end
    end
  else
    -- Nothing is consumed; the limits that would have allowed report their state as it is.
    for i = first, last do
      local check = checks[i]
      local j = 7 * i - 5
      if reply[j] == 1 then
        local state = keys[check.key]
        if check.algorithm == SLIDING_WINDOW_LOG then
          reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
            reply[j + 6] = sliding_window_log.evaluate(state, now_us, check.spec, 0, 0)
        else
          local original = { a = state.stored_a, b = state.stored_b, t = state.stored_t }
          reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
            reply[j + 6] = algorithms[check.algorithm].consume(original, now_us, check.spec, 0)
        end
      end
    end
  end
  -- Each key is written once, at its last check: logs always (evaluating trims them), compact
  -- states only when admitted.
  for i = first, last do
    local check = checks[i]
    local state = keys[check.key]
    if state.latest == check then
      if check.algorithm == SLIDING_WINDOW_LOG then
        sliding_window_log.persist(state, now_us, check.spec)
      elseif all_allowed then
        writeState(check.key, state, check.spec, now_us)
      end
    end
  end
end

-- The reply of 'decide' and 'batch': now_us, then each check's seven fields, which consume()
-- returns in this order. Until the end they are also where the decide keeps each check's
-- outcome.
if operation == 'decide' then
  local reply = { now_us } -- check i's fields start at 7 * i - 5
  if #checks == 1 then reply = { now_us, 0, 0, 0, 0, 0, 0, 0 } end -- sized at once, usually
  decideRequest(1, #checks, reply)
  return reply
end

if operation == 'batch' then
  local reply = { now_us }
  local first = 1
  for r = 1, #requests do
    decideRequest(first, requests[r], reply)
    first = requests[r] + 1
  end
  return reply
end

if operation == 'refund' then
  for i = 1, #checks do
    local check = checks[i]
    if check.algorithm == SLIDING_WINDOW_LOG then
      sliding_window_log.refund(check.key, now_us, check.spec, check.cost)
    else
      local state = readState(check.key)
      if state.exists then
        algorithms[check.algorithm].refund(state, now_us, check.spec, check.cost)
        writeState(check.key, state, check.spec, now_us)
      end
    end
  end
  return { now_us }
end

-- sync
for i = 1, #checks do
  if checks[i].algorithm == SLIDING_WINDOW_LOG then
    error('sluice: sync does not apply to the sliding window log')
  end
end
local keys = {}
local reply = { now_us }
for i = 1, #checks do
  local check = checks[i]
  local state = keys[check.key]
  if state == nil then
    state = readState(check.key)
    keys[check.key] = state
  end
  algorithms[check.algorithm].force(state, now_us, check.spec, check.cost)
  state.latest = check
  reply[2 * i] = state.a
  reply[2 * i + 1] = state.b
end
for i = 1, #checks do
  local check = checks[i]
  local state = keys[check.key]
  if state.latest == check then writeState(check.key, state, check.spec, now_us) end
end
return reply
