-- Sluice's Redis script, part 2 of 9: the call's arguments (script_protocol.h), parsed before
-- anything else so that the algorithm files after this one define only what the call uses.
-- TIME before writes needs effects replication: the only mode from Redis 7.0 (the first to set
-- REDIS_VERSION_NUM), a mode earlier versions must be asked for.
if redis.REDIS_VERSION_NUM == nil and redis.replicate_commands then redis.replicate_commands() end

local ARGS_PER_SPEC = 6  -- algorithm, count, period_us, burst, unit_weight, drain_per_us
local ARGS_PER_CHECK = 2 -- spec (its index among the specs), cost
-- static_cast<int>(sluice::Algorithm)
local FIXED_WINDOW = 0
local SLIDING_WINDOW_LOG = 1
local SLIDING_WINDOW_COUNTER = 2
local TOKEN_BUCKET = 3
local INTERVAL_TOKEN_BUCKET = 4
local LEAKY_BUCKET_METER = 5
local LEAKY_BUCKET_SHAPER = 6
local GCRA = 7

local operation = ARGV[1]
if operation ~= 'decide' and operation ~= 'batch' and operation ~= 'refund' and
    operation ~= 'sync' then
  error('sluice: unknown operation ' .. tostring(operation))
end

-- ARGV[index] as an integer in [least, 2^53), or an error naming it. (x % 1 is the VM's own
-- operator; math.floor would be a C call, and calls are what a call's time goes to.)
local function argument(index, what, least)
  local value = tonumber(ARGV[index])
  if value == nil or value < least or value > MAX_EXACT or value % 1 ~= 0 then
    error('sluice: ' .. what .. ' must be an integer in [' .. least .. ', 2^53): ' ..
          tostring(ARGV[index]))
  end
  return value
end

-- The specs: ARGV[3] says how many, then each spec's ARGS_PER_SPEC fields. A call sends each
-- distinct spec once and its checks name it by index, so a spec's fields are parsed once per
-- call, not once per check (most calls are many keys under one or two limits). One table per
-- spec, its fields named as the algorithms read them. Only the fields the spec's algorithm uses
-- are read: strtod is slow, and the C++ side sends them all anyway. Spec fields must be
-- positive: the algorithms divide by them.
local spec_count = argument(3, 'spec count', 1)
local specs = {}
local uses = {} -- algorithm -> true when some spec uses it
for s = 1, spec_count do
  local base = 3 + (s - 1) * ARGS_PER_SPEC
  local algorithm = argument(base + 1, 'algorithm', 0)
  if algorithm > GCRA then error('sluice: unknown algorithm ' .. ARGV[base + 1]) end
  -- The windows and the interval bucket read count and period; the draining buckets and GCRA
  -- read unit_weight and drain_per_us; all buckets and GCRA read burst.
  local windowed = algorithm <= SLIDING_WINDOW_COUNTER or algorithm == INTERVAL_TOKEN_BUCKET
  local scaled = algorithm >= TOKEN_BUCKET and algorithm ~= INTERVAL_TOKEN_BUCKET
  specs[s] = {
    algorithm = algorithm,
    count = windowed and argument(base + 2, 'count', 1) or nil,
    period_us = windowed and argument(base + 3, 'period_us', 1) or nil,
    burst = algorithm >= TOKEN_BUCKET and argument(base + 4, 'burst', 1) or nil,
    unit_weight = scaled and argument(base + 5, 'unit_weight', 1) or nil,
    drain_per_us = scaled and argument(base + 6, 'drain_per_us', 1) or nil,
  }
  uses[algorithm] = true
end
local next_arg = 4 + spec_count * ARGS_PER_SPEC -- the first argument after the specs

-- A batch is several requests' decides in one call: after the specs, the number of requests,
-- then how many checks each has. `requests` lists each request's last check index.
local requests = nil
if operation == 'batch' then
  local count = argument(next_arg, 'request count', 1)
  requests = {}
  local last = 0
  for r = 1, count do
    last = last + argument(next_arg + r, 'checks of a request', 1)
    requests[r] = last
  end
  if last ~= #KEYS then
    error('sluice: the batch\'s requests have ' .. last .. ' checks for ' .. #KEYS .. ' keys')
  end
  next_arg = next_arg + 1 + count
end
if (#ARGV - next_arg + 1) ~= #KEYS * ARGS_PER_CHECK then
  error('sluice: expected ' .. (next_arg - 1) .. ' + ' .. ARGS_PER_CHECK ..
        ' arguments per key, got ' .. #ARGV .. ' for ' .. #KEYS .. ' keys')
end

-- One table per check: its key, its spec, its cost, and room for what main.lua notes.
local checks = {}
for i = 1, #KEYS do
  local base = next_arg + (i - 1) * ARGS_PER_CHECK
  local index = tonumber(ARGV[base])
  local spec = specs[index]
  if spec == nil then error('sluice: no spec ' .. tostring(ARGV[base]) .. ' for key ' .. i) end
  checks[i] = {
    key = KEYS[i],
    spec = spec,
    algorithm = spec.algorithm,
    cost = argument(base + 1, 'cost', 0),
    total_cost = 0, -- decide: this check's cost plus earlier ones' of the same key
    pending = 0,    -- decide, sliding log: units earlier checks of the key admitted
  }
end

-- now_us: "" reads Redis TIME, so every node sees one clock; a number replays an instant.
-- (Lua converts TIME's two decimal strings itself for the arithmetic.)
local now_us
if ARGV[2] == '' then
  local time = redis.call('TIME')
  now_us = time[1] * 1000000 + time[2]
else
  now_us = argument(2, 'now_us', 0)
end

-- The compact algorithms' functions, by algorithm, for the algorithms the call uses:
--   consume(state, now_us, spec, cost) -> the check's seven decide reply fields: allowed (1|0),
--       reason, limit, remaining, reset_after_us, retry_after_us (NEVER), delay_us; updates
--       state only when it admits cost > 0
--   force(state, now_us, spec, cost)    consumes cost whether or not it fits (sync)
--   refund(state, now_us, spec, cost)   gives back cost consumed at now_us
--   fullAt(state, spec) -> the instant the state is back to full (equal to an absent key)
-- where state is { a, b, t }: CompactState's two fields and GCRA's refund instant (main.lua).
local algorithms = {}
