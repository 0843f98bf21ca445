-- Sluice's Redis script, part 2 of 9: the call's arguments (script_protocol.h), parsed before
-- anything else so that the algorithm files after this one define only what the call uses.
-- TIME before writes needs effects replication: the only mode from Redis 7.0 (the first to set
-- REDIS_VERSION_NUM), a mode earlier versions must be asked for.
if redis.REDIS_VERSION_NUM == nil and redis.replicate_commands then redis.replicate_commands() end

local ARGS_PER_SPEC = 6  -- algorithm, count, period_us, burst, unit_weight, drain_per_us
local ARGS_PER_CHECK_RUN = 3 -- how many checks, their spec (its index among the specs), cost
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
  local value = tonumber(ARGV[index] or '')
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

-- A batch is several requests' decides in one call: after the specs, R, then R runs of requests,
-- each a pair (how many consecutive requests, how many checks each of them has). `requests`
-- lists each request's last check index. (Runs, because a busy node's batch is mostly requests
-- of one check: two numbers to parse instead of one per request.)
local requests = nil
if operation == 'batch' then
  local runs = argument(next_arg, 'request runs', 1)
  requests = {}
  local last, count = 0, 0
  for run = 1, runs do
    local at = next_arg + 2 * run - 1
    local requests_in_run = argument(at, 'requests in a run', 1)
    local size = argument(at + 1, 'checks of a request', 1)
    if last + requests_in_run * size > #KEYS then
      last = MAX_EXACT -- more checks than keys: reported below
      break
    end
    for _ = 1, requests_in_run do
      count = count + 1
      last = last + size
      requests[count] = last
    end
  end
  if last ~= #KEYS then
    error('sluice: the batch\'s requests do not have one check for each of the ' .. #KEYS ..
          ' keys')
  end
  next_arg = next_arg + 1 + 2 * runs
end
if #ARGV < next_arg - 1 or (#ARGV - next_arg + 1) % ARGS_PER_CHECK_RUN ~= 0 then
  error('sluice: the checks take ' .. ARGS_PER_CHECK_RUN .. ' arguments per run after the ' ..
        (next_arg - 1) .. ' before them, got ' .. #ARGV .. ' arguments')
end

-- Per check, in two arrays rather than a table each (a table costs an allocation or two, per
-- check and call): its spec and its cost. Its key is KEYS[i]. The checks come as runs of
-- consecutive checks with the same spec and cost: a call carries many keys under one or two
-- limits, nearly all at cost 1, so a run saves parsing two numbers per check.
local check_spec, check_cost = {}, {}
local checks = 0
for at = next_arg, #ARGV, ARGS_PER_CHECK_RUN do
  local checks_in_run = argument(at, 'checks in a run', 1)
  local spec = specs[tonumber(ARGV[at + 1])]
  if spec == nil then error('sluice: no spec ' .. tostring(ARGV[at + 1]) .. ' for a run') end
  local cost = argument(at + 2, 'cost', 0)
  if checks + checks_in_run > #KEYS then
    checks = MAX_EXACT -- more checks than keys: reported below
    break
  end
  for i = checks + 1, checks + checks_in_run do
    check_spec[i] = spec
    check_cost[i] = cost
  end
  checks = checks + checks_in_run
end
if checks ~= #KEYS then
  error('sluice: the runs of checks do not have one check for each of the ' .. #KEYS .. ' keys')
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
