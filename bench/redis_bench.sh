#!/usr/bin/env bash
# Shared-store throughput, same machine, same run, same Redis:
#  1. redis-benchmark running EVALSHA of a minimal GCRA script (64 clients, 10,000 keys): what
#     Redis itself does per second with one script call per decision;
#  2. Sluice in redis mode: HTTP POST /v1/check decisions per second (wrk -t2 -c64, 10,000 keys);
#  3. Sluice in memory mode and in synced mode, the same wrk load.
# Optionally at several concurrencies (the third argument: a list of connection counts, default
# "64"): redis-benchmark's clients and wrk's connections are then the same number in each run.
# Sluice batches the decisions that wait while a call is out, so its Redis mode gains with
# concurrency, while one EVALSHA per decision does not; the sweep shows both curves, and each
# round also compares the two at their best ("peak"), whatever concurrency that took.
# Redis, Sluice and the load generators share the 2 cores. This VM's speed drifts by tens of
# percent within minutes, so the four runs are repeated in rounds, each round's ratios taken
# from runs seconds apart, and the median ratio is what to compare with the targets.
# Usage: bench/redis_bench.sh [seconds] [rounds] ["connections ..."]   (after scripts/build.sh
# release), e.g. bench/redis_bench.sh 5 3 "64 128 256 512"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
rounds="${2:-3}"
read -r -a concurrencies <<< "${3:-64}"
for c in "${concurrencies[@]}"; do
  [[ "$c" =~ ^[1-9][0-9]*$ ]] || { echo "redis_bench.sh: a connection count must be a positive integer: $c" >&2; exit 2; }
done
sluice_bin="${SLUICE_BIN:-build/src/sluice}"
source bench/bench_lib.sh

start_redis

# The peer: the least a GCRA decision in Redis can be, one key read and one write per call.
cat > "$work/gcra.lua" <<'LUA'
local emission, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
if tat + emission - now > tolerance then return 0 end
redis.call('SET', KEYS[1], tat + emission, 'PX', math.ceil((tat + emission - now) / 1000) + 1)
return 1
LUA
sha=$(redis-cli -p "$redis_port" script load "$(cat "$work/gcra.lua")")
peer_rps() {  # clients → requests/s
  redis-benchmark -p "$redis_port" -c "$1" -n $((seconds * 60000)) -r 10000 -q \
    EVALSHA "$sha" 1 "gcra:__rand_int__" 10000 1000000 > "$work/peer.txt" 2>&1
  tr '\r' '\n' < "$work/peer.txt" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

cat > "$work/check.lua" <<'LUA'
counter = 0
request = function()
  counter = counter + 1
  local body = '{"limit":"per-client","key":"client-' .. (counter % 10000) .. '"}'
  return wrk.format("POST", "/v1/check", {["Content-Type"] = "application/json"}, body)
end
LUA

sluice_rps() {  # store settings, connections → "requests/s p99 degraded"
  local port admin
  port=$(free_port); admin=$(free_port)
  cat > "$work/sluice.yaml" <<CONF
server: { listen: 127.0.0.1:$port, admin: 127.0.0.1:$admin, threads: 2 }
store: $1
limits:
  - { name: per-client, key: client, algorithm: gcra, rate: 100/s, burst: 100 }
CONF
  "$sluice_bin" serve --config "$work/sluice.yaml" > "$work/sluice.log" 2>&1 &
  local pid=$!
  wait_for_port "$port"
  wrk -t2 -c"$2" -d"${seconds}s" --latency -s "$work/check.lua" "http://127.0.0.1:$port" > "$work/wrk.txt"
  # Decisions that fell back to on_error (Redis too slow) would flatter the figure: count them.
  local degraded
  degraded=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '$1 == "sluice_degraded_decisions_total" {print $2}')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt") $(awk '$1 == "99%" {print $2}' "$work/wrk.txt") $degraded"
}
echo "| round | connections | redis-benchmark | redis mode | memory | synced | redis / benchmark | synced / memory | p99 redis / memory / synced | degraded redis / synced |"
echo "|---|---|---|---|---|---|---|---|---|---|"
: > "$work/ratios.txt"; : > "$work/peaks.txt"
for round in $(seq "$rounds"); do
  best_peer=0; best_redis=0
  for connections in "${concurrencies[@]}"; do
    peer=$(peer_rps "$connections")
    read -r memory_rps memory_p99 _ <<< "$(sluice_rps "{ type: memory }" "$connections")"
    read -r redis_rps redis_p99 redis_degraded <<< \
      "$(sluice_rps "{ type: redis, address: 127.0.0.1:$redis_port }" "$connections")"
    read -r synced_rps synced_p99 synced_degraded <<< \
      "$(sluice_rps "{ type: synced, address: 127.0.0.1:$redis_port }" "$connections")"
    redis_ratio=$(percent "$redis_rps" "$peer")
    synced_ratio=$(percent "$synced_rps" "$memory_rps")
    echo "$connections $redis_ratio $synced_ratio" >> "$work/ratios.txt"
    best_peer=$(awk -v a="$best_peer" -v b="$peer" 'BEGIN { print (b > a) ? b : a }')
    best_redis=$(awk -v a="$best_redis" -v b="$redis_rps" 'BEGIN { print (b > a) ? b : a }')
    printf '| %s | %s | %.0f | %.0f | %.0f | %.0f | %s%% | %s%% | %s / %s / %s | %s / %s |\n' "$round" \
      "$connections" "$peer" "$redis_rps" "$memory_rps" "$synced_rps" "$redis_ratio" "$synced_ratio" \
      "$redis_p99" "$memory_p99" "$synced_p99" "$redis_degraded" "$synced_degraded"
  done
  percent "$best_redis" "$best_peer" >> "$work/peaks.txt"; echo >> "$work/peaks.txt"
done
echo
echo "redis-benchmark: EVALSHA of a minimal GCRA script, 10,000 keys, -c <connections>; Sluice: POST /v1/check, wrk -t2 -c<connections>, 10,000 keys"
echo "degraded: decisions made by on_error, not Redis (they would flatter the figure)"
for connections in "${concurrencies[@]}"; do
  at() { awk -v c="$connections" -v f="$1" '$1 == c { print $f }' "$work/ratios.txt" | median; }
  echo "median over $rounds rounds at $connections connections: redis mode / redis-benchmark $(at 2)% (target 80%); synced / memory $(at 3)% (target 90%)"
done
if [ "${#concurrencies[@]}" -gt 1 ]; then
  echo "peak against peak (each side's best requests/s over the connection counts, per round): median $(median < "$work/peaks.txt")%"
fi
