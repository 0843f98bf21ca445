-- Sluice's Redis script, part 8 of 8: arguments, the three operations, all-or-nothing.
-- The contract (arguments, replies, semantics) is src/store/redis/script_protocol.h.
--
-- Storage: a compact algorithm's key is a hash with fields a and b, CompactState's two fields
-- as decimal integers (GCRA adds t, see gcra.lua); a sliding log's key is a list (see
-- sliding_window_log.lua). Key names must identify the counter as MemoryStore's key hash does
-- (key, algorithm, period, and the count for scaled states): checks with equal key names share
-- state, and two different algorithms must never share a key name.
if redis.replicate_commands then redis.replicate_commands() end -- TIME before writes (Redis < 7)

local ARGS_PER_CHECK = 7
local LOG = 1 -- Algorithm::kSlidingWindowLog
local GCRA = 7

local algorithms = {
  [0] = fixed_window, [2] = sliding_window_counter, [3] = token_bucket,
  [4] = interval_token_bucket, [5] = token_bucket, [6] = token_bucket, [7] = gcra,
}

local function parseChecks()
  if (#ARGV - 2) ~= #KEYS * ARGS_PER_CHECK then
    error('sluice: expected 2 + ' .. ARGS_PER_CHECK .. ' arguments per key, got ' .. #ARGV ..
          ' for ' .. #KEYS .. ' keys')
  end
  local checks = {}
  for i = 1, #KEYS do
    local base = 2 + (i - 1) * ARGS_PER_CHECK
    local spec = {
      algorithm = common.parseCount(ARGV[base + 1], 'algorithm'),
      count = common.parseCount(ARGV[base + 2], 'count'),
      period_us = common.parseCount(ARGV[base + 3], 'period_us'),
      burst = common.parseCount(ARGV[base + 4], 'burst'),
      unit_weight = common.parseCount(ARGV[base + 5], 'unit_weight'),
      drain_per_us = common.parseCount(ARGV[base + 6], 'drain_per_us'),
    }
    if spec.algorithm ~= LOG and algorithms[spec.algorithm] == nil then
      error('sluice: unknown algorithm ' .. ARGV[base + 1])
    end
    if spec.count == 0 or spec.period_us == 0 or spec.burst == 0 or spec.unit_weight == 0 or
        spec.drain_per_us == 0 then
      error('sluice: count, period, burst, unit weight and drain must be positive')
    end
    checks[i] = { key = KEYS[i], spec = spec, cost = common.parseCount(ARGV[base + 7], 'cost'),
                  is_log = spec.algorithm == LOG }
  end
  return checks
end

local function readCompact(key)
  local fields = redis.call('HMGET', key, 'a', 'b', 't')
  return { a = tonumber(fields[1]) or 0, b = tonumber(fields[2]) or 0,
           t = tonumber(fields[3]) or 0 }
end

local function copyCompact(state)
  return { a = state.a, b = state.b, t = state.t }
end

local function writeCompact(key, state, spec, now_us)
  local full_at_us = algorithms[spec.algorithm].fullAt(state, spec)
  if full_at_us <= now_us then
    redis.call('DEL', key)
    return
  end
  if spec.algorithm == GCRA then
    redis.call('HSET', key, 'a', common.decimal(state.a), 'b', common.decimal(state.b), 't',
               common.decimal(state.t))
  else
    redis.call('HSET', key, 'a', common.decimal(state.a), 'b', common.decimal(state.b))
  end
  common.expireAt(key, full_at_us, now_us)
end

local function changed(state, original)
  return state.a ~= original.a or state.b ~= original.b
end

local function encodeOutcome(reply, outcome)
  local retry = outcome.retry_after_us
  reply[#reply + 1] = outcome.allowed and 1 or 0
  reply[#reply + 1] = outcome.reason
  reply[#reply + 1] = outcome.limit
  reply[#reply + 1] = outcome.remaining
  reply[#reply + 1] = outcome.reset_after_us
  reply[#reply + 1] = retry
  reply[#reply + 1] = outcome.delay_us
end

-- One key's state during a decide: loaded once, shared by every check of that key.
local function keyState(keys, check)
  local entry = keys[check.key]
  if entry ~= nil then return entry end
  if check.is_log then
    entry = { log = sliding_window_log.load(check.key) }
  else
    local original = readCompact(check.key)
    entry = { original = original, after = copyCompact(original) }
  end
  keys[check.key] = entry
  return entry
end

-- Decides one check against its key's running state, as MemoryStore::decide does: a later
-- check of a key sees what earlier checks of the same request admitted, and when it denies,
-- it reports when the key's combined cost would pass.
local function decideCheck(check, entry, earlier, now_us)
  local spec = check.spec
  check.total_cost = check.cost + (earlier and earlier.total_cost or 0)
  if check.is_log then
    check.pending = earlier and earlier.pending or 0
    entry.spec = spec
    local outcome = sliding_window_log.evaluate(entry.log, now_us, spec, check.cost, check.pending)
    if outcome.allowed then
      check.pending = check.pending + check.cost
    elseif earlier ~= nil then
      outcome = sliding_window_log.evaluate(entry.log, now_us, spec, check.total_cost, 0)
    end
    return outcome
  end
  local outcome = algorithms[spec.algorithm].consume(entry.after, now_us, spec, check.cost)
  if not outcome.allowed and earlier ~= nil then
    outcome = algorithms[spec.algorithm].consume(copyCompact(entry.original), now_us, spec,
                                                 check.total_cost)
    outcome.allowed = false -- even if the combined cost fits, this request did not
    if outcome.reason == common.REASON_NONE then outcome.reason = common.REASON_OVER_LIMIT end
  end
  entry.spec = spec -- the state is written with its last check's spec, as MemoryStore does
  return outcome
end

local function commit(checks, keys, now_us)
  for _, check in ipairs(checks) do
    if check.is_log then sliding_window_log.record(keys[check.key].log, now_us, check.cost) end
  end
  for key, entry in pairs(keys) do
    if entry.log == nil and changed(entry.after, entry.original) then
      writeCompact(key, entry.after, entry.spec, now_us)
    end
  end
end

local function decide(checks, now_us)
  local keys = {}
  local latest = {} -- key -> the latest check of that key so far
  local outcomes = {}
  local all_allowed = true
  for i, check in ipairs(checks) do
    local entry = keyState(keys, check)
    outcomes[i] = decideCheck(check, entry, latest[check.key], now_us)
    latest[check.key] = check
    all_allowed = all_allowed and outcomes[i].allowed
  end
  if all_allowed then
    commit(checks, keys, now_us)
  else
    -- Nothing is consumed; the limits that would have allowed report their state as it is.
    for i, check in ipairs(checks) do
      if outcomes[i].allowed then
        local entry = keys[check.key]
        if check.is_log then
          outcomes[i] = sliding_window_log.evaluate(entry.log, now_us, check.spec, 0, 0)
        else
          outcomes[i] = algorithms[check.spec.algorithm].consume(copyCompact(entry.original),
                                                                 now_us, check.spec, 0)
        end
      end
    end
  end
  for _, entry in pairs(keys) do
    if entry.log ~= nil then sliding_window_log.persist(entry.log, now_us, entry.spec) end
  end
  local reply = { now_us }
  for i = 1, #checks do encodeOutcome(reply, outcomes[i]) end
  return reply
end

local function refund(checks, now_us)
  for _, check in ipairs(checks) do
    if check.is_log then
      sliding_window_log.refund(check.key, now_us, check.spec, check.cost)
    elseif redis.call('EXISTS', check.key) == 1 then
      local state = readCompact(check.key)
      local original = copyCompact(state)
      algorithms[check.spec.algorithm].refund(state, now_us, check.spec, check.cost)
      if changed(state, original) then writeCompact(check.key, state, check.spec, now_us) end
    end
  end
  return { now_us }
end

local function sync(checks, now_us)
  for _, check in ipairs(checks) do
    if check.is_log then error('sluice: sync does not apply to the sliding window log') end
  end
  local keys = {}
  local reply = { now_us }
  for _, check in ipairs(checks) do
    local entry = keyState(keys, check)
    algorithms[check.spec.algorithm].force(entry.after, now_us, check.spec, check.cost)
    entry.spec = check.spec
    reply[#reply + 1] = entry.after.a
    reply[#reply + 1] = entry.after.b
  end
  for key, entry in pairs(keys) do
    if changed(entry.after, entry.original) then writeCompact(key, entry.after, entry.spec, now_us) end
  end
  return reply
end

local operations = { decide = decide, refund = refund, sync = sync }
local operation = operations[ARGV[1]]
if operation == nil then error('sluice: unknown operation ' .. tostring(ARGV[1])) end
return operation(parseChecks(), common.readNow(ARGV[2] or ''))
