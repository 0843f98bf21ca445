-- Sluice's Redis script, part 9 of 9: the operations, each request all-or-nothing.
-- The contract (arguments, replies, semantics) is src/store/redis/script_protocol.h.
--
-- Storage: a compact algorithm's key is a string of CompactState's two fields a and b as
-- little-endian doubles ('<dd', 16 bytes; GCRA adds t, see gcra.lua: '<ddd', 24 bytes), read
-- with GET and written with SET ... PX; a sliding log's key is a string of entries (see
-- sliding_window_log.lua). Key names must identify the counter as MemoryStore's key hash does
-- (key, algorithm, period, and the count for scaled states): checks with equal key names share
-- state, and two different algorithms must never share a key name.

-- A compact key's stored values: whether it exists, and its fields a, b, t (CompactState's two
-- fields and GCRA's refund instant); an absent key is the zero state. So is a key that holds
-- anything else (another program's value under the same name, bytes written by hand: a list, a
-- string of another length, a number the script never writes), and the next write replaces it. Raising
-- an error instead would fail every request batched with that key, and in synced mode every
-- sync after it.
local function readValues(key)
  local value = redis.pcall('GET', key)
  local a, b, t = 0, 0, 0
  if type(value) == 'table' then
    -- WRONGTYPE: a hash of decimal fields a, b, t, as earlier script versions wrote.
    local fields = redis.pcall('HMGET', key, 'a', 'b', 't')
    if fields.err then return false, 0, 0, 0 end
    a, b, t = tonumber(fields[1]) or 0, tonumber(fields[2]) or 0, tonumber(fields[3]) or 0
  elseif value and #value == 24 then
    a, b, t = unpack('<ddd', value)
  elseif value and #value == 16 then
    a, b = unpack('<dd', value)
  else
    return false, 0, 0, 0
  end
  -- Only whole numbers as the script writes them: a within FIELD_RANGE (GCRA's TAT may be a
  -- burst ahead of now), b and t in [0, 2^53); NaN fails too. A value like 1e300 made SET ... PX
  -- fail, leaving the key in place to fail every later call; a fraction, or a number past what
  -- the script writes, made every reply for the key unreadable (degraded) while it grew.
  if not (a >= -FIELD_RANGE and a <= FIELD_RANGE and b >= 0 and b <= MAX_EXACT and t >= 0 and
          t <= MAX_EXACT and a % 1 == 0 and b % 1 == 0 and t % 1 == 0) then
    return false, 0, 0, 0
  end
  return true, a, b, t
end

-- A compact key's state { a, b, t } as the algorithms read and change it, with the values as
-- read (stored_a, stored_b, stored_t) to tell whether the call changed it. latest: the index
-- of the latest check of the key so far in the request (false before the first).
local function readState(key)
  local exists, a, b, t = readValues(key)
  return { exists = exists, a = a, b = b, t = t, stored_a = a, stored_b = b, stored_t = t,
           latest = false }
end

-- Writes a compact state, to expire when it is back to full.
local function writeState(key, state, spec, now_us)
  local value
  if spec.algorithm == GCRA then
    value = pack('<ddd', state.a, state.b, state.t)
  else
    value = pack('<dd', state.a, state.b)
  end
  store(key, value, algorithms[spec.algorithm].fullAt(state, spec), now_us)
end

-- The same, only if the call changed it.
local function writeStateIfChanged(key, state, spec, now_us)
  if state.a ~= state.stored_a or state.b ~= state.stored_b then
    writeState(key, state, spec, now_us)
  end
end

-- The state a request of one check decides on: one table for the whole call, since such a
-- request reads its key, decides and writes it back before the next request starts.
local alone = { a = 0, b = 0, t = 0, stored_a = 0, stored_b = 0 }

-- Decides check i, a request of its own on a compact algorithm, writing its seven reply fields
-- at reply[7 * i - 5 ..]. What decideRequest below does for one check, without the bookkeeping
-- that only several checks need: most requests have a single limit.
local function decideAlone(i, reply)
  local key, spec = KEYS[i], check_spec[i]
  local _, a, b, t = readValues(key)
  alone.a, alone.b, alone.t, alone.stored_a, alone.stored_b = a, b, t, a, b
  local j = 7 * i - 5
  local allowed
  allowed, reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5], reply[j + 6] =
    algorithms[spec.algorithm].consume(alone, now_us, spec, check_cost[i])
  reply[j] = allowed
  if allowed == 1 then writeStateIfChanged(key, alone, spec, now_us) end
end

-- Decides checks first..last as one request, all-or-nothing, writing each check i's seven reply
-- fields at reply[7 * i - 5 ..]: the call's checks for 'decide', one request's for 'batch'.
local function decideRequest(first, last, reply)
  -- Each check decides against its key's running state, as MemoryStore::decide does: a later
  -- check of a key sees what earlier checks of the same request admitted; a denied check of a
  -- key named more than once reports when all the key's checks would pass together (below, as
  -- MemoryStore::judgeRepeatedKeysWhole does). keys: name -> its state, loaded once per request
  -- (a later request of a batch reads what an earlier one wrote); state.latest is the latest
  -- check of that key so far (or false), whose spec the key is written with (as MemoryStore
  -- does), state.named how many checks name it. total_cost[i]: check i's cost plus earlier
  -- ones' of the same key; pending[i], sliding log: the units earlier checks of the key
  -- admitted, i's included.
  local keys = {}
  local total_cost, pending = {}, {}
  local all_allowed = true
  for i = first, last do
    local key, spec, cost = KEYS[i], check_spec[i], check_cost[i]
    local is_log = spec.algorithm == SLIDING_WINDOW_LOG
    local state = keys[key]
    if state == nil then
      if is_log then
        state = sliding_window_log.load(key)
      else
        state = readState(key)
      end
      keys[key] = state
    end
    local earlier = state.latest
    local j = 7 * i - 5
    total_cost[i] = cost + (earlier and total_cost[earlier] or 0)
    if is_log then
      pending[i] = earlier and pending[earlier] or 0
      reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
        reply[j + 6] = sliding_window_log.evaluate(state, now_us, spec, cost, pending[i])
      if reply[j] == 1 then pending[i] = pending[i] + cost end
    else
      reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
        reply[j + 6] = algorithms[spec.algorithm].consume(state, now_us, spec, cost)
    end
    state.latest = i
    state.named = (state.named or 0) + 1
    if reply[j] == 0 then all_allowed = false end
  end

  if all_allowed then
    for i = first, last do
      if check_spec[i].algorithm == SLIDING_WINDOW_LOG then
        sliding_window_log.record(keys[KEYS[i]], now_us, check_cost[i])
      end
    end
  else
    -- A denied check of a key named more than once: the request passes when each check of the
    -- key fits, at its own spec, the key's units up to and including it; the wait is the longest
    -- of those, or never, judged from the key's stored state (MemoryStore::
    -- judgeRepeatedKeysWhole). When all fit now, the check's own answer stands. All in a first
    -- pass, before the next reads trim any log.
    local whole = {}
    for i = first, last do
      local j = 7 * i - 5
      local key = KEYS[i]
      local state = keys[key]
      if reply[j] == 0 and state.named > 1 then
        local longest
        for k = first, last do
          if KEYS[k] == key then
            local spec = check_spec[k]
            local r
            if spec.algorithm == SLIDING_WINDOW_LOG then
              r = { sliding_window_log.evaluate(state, now_us, spec, total_cost[k], 0) }
            else
              local original = { a = state.stored_a, b = state.stored_b, t = state.stored_t }
              r = { algorithms[spec.algorithm].consume(original, now_us, spec, total_cost[k]) }
            end
            -- r[6]: retry_after_us, NEVER (-1) when it never fits
            if r[1] == 0 and (longest == nil or longest[6] ~= NEVER and
                                (r[6] == NEVER or r[6] > longest[6])) then
              longest = r
            end
          end
        end
        whole[i] = longest
      end
    end
    -- Nothing is consumed; the limits that would have allowed report their state as it is.
    for i = first, last do
      local j = 7 * i - 5
      if whole[i] then
        reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
          reply[j + 6] = values(whole[i])
      elseif reply[j] == 1 then
        local state, spec = keys[KEYS[i]], check_spec[i]
        if spec.algorithm == SLIDING_WINDOW_LOG then
          reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
            reply[j + 6] = sliding_window_log.evaluate(state, now_us, spec, 0, 0)
        else
          local original = { a = state.stored_a, b = state.stored_b, t = state.stored_t }
          reply[j], reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5],
            reply[j + 6] = algorithms[spec.algorithm].consume(original, now_us, spec, 0)
        end
      end
    end
  end
  -- Each key is written once, at its last check: logs always (evaluating trims them), compact
  -- states only when admitted.
  for i = first, last do
    local key, spec = KEYS[i], check_spec[i]
    local state = keys[key]
    if state.latest == i then
      if spec.algorithm == SLIDING_WINDOW_LOG then
        sliding_window_log.persist(state, now_us, spec)
      elseif all_allowed then
        writeStateIfChanged(key, state, spec, now_us)
      end
    end
  end
end

-- Decides checks first..last as one request: alone when it is one check of a compact algorithm.
local function decide(first, last, reply)
  if first == last and check_spec[first].algorithm ~= SLIDING_WINDOW_LOG then
    decideAlone(first, reply)
  else
    decideRequest(first, last, reply)
  end
end

-- The reply of 'decide' and 'batch': now_us, then each check's seven fields, which consume()
-- returns in this order. Until the end they are also where the decide keeps each check's
-- outcome. It goes out as one string of little-endian doubles, not as an array of integers:
-- the caller then parses one reply object per call instead of one per number (seven per check).
-- (A C function takes at most a few thousand arguments: a long reply is packed in pieces.)
local function packed(reply)
  local n, piece = #reply, 512
  if n <= piece then return pack('<' .. string.rep('d', n), values(reply)) end
  local pieces = {}
  for first = 1, n, piece do
    local last = min(first + piece - 1, n)
    pieces[#pieces + 1] = pack('<' .. string.rep('d', last - first + 1), values(reply, first, last))
  end
  return table.concat(pieces)
end

if operation == 'decide' then
  local reply = { now_us } -- check i's fields start at 7 * i - 5
  if #KEYS == 1 then reply = { now_us, 0, 0, 0, 0, 0, 0, 0 } end -- sized at once, usually
  decide(1, #KEYS, reply)
  return packed(reply)
end

if operation == 'batch' then
  local reply = { now_us }
  local first = 1
  for r = 1, #requests do
    decide(first, requests[r], reply)
    first = requests[r] + 1
  end
  return packed(reply)
end

if operation == 'refund' then
  for i = 1, #KEYS do
    local key, spec, cost = KEYS[i], check_spec[i], check_cost[i]
    if spec.algorithm == SLIDING_WINDOW_LOG then
      sliding_window_log.refund(key, now_us, spec, cost)
    else
      local state = readState(key)
      if state.exists then
        algorithms[spec.algorithm].refund(state, now_us, spec, cost)
        writeStateIfChanged(key, state, spec, now_us)
      end
    end
  end
  return { now_us }
end

-- sync
for i = 1, #KEYS do
  if check_spec[i].algorithm == SLIDING_WINDOW_LOG then
    error('sluice: sync does not apply to the sliding window log')
  end
end
local keys = {}
local reply = { now_us }
for i = 1, #KEYS do
  local key, spec = KEYS[i], check_spec[i]
  local state = keys[key]
  if state == nil then
    state = readState(key)
    keys[key] = state
  end
  algorithms[spec.algorithm].force(state, now_us, spec, check_cost[i])
  state.latest = i
  reply[2 * i] = state.a
  reply[2 * i + 1] = state.b
end
for i = 1, #KEYS do
  local key = KEYS[i]
  local state = keys[key]
  if state.latest == i then writeStateIfChanged(key, state, check_spec[i], now_us) end
end
return reply
