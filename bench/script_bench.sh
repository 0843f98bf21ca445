#!/usr/bin/env bash
# What Sluice's Lua script costs Redis per check, measured inside Redis (INFO commandstats:
# microseconds spent in EVALSHA), so the load generator's share of the 2 cores does not count.
# Each call is a "batch" of single-check requests on random keys out of 10,000, as a busy
# `sluice serve` sends them; every check is admitted (limits of 100/s with a burst of 100), so
# each reads its key and writes it back. The floor is a script that only does the GET and the
# SET ... PX of every key, which no decision can avoid.
# Usage: bench/script_bench.sh [checks per call] [calls]   (defaults 13 and 40,000; needs
# redis-server, redis-cli and redis-benchmark on the PATH, as scripts/install-deps.sh installs)
set -euo pipefail
cd "$(dirname "$0")/.."
checks="${1:-13}"
calls="${2:-40000}"
source bench/bench_lib.sh

start_redis

# The script as the build embeds it: the parts in CMakeLists.txt's order, each after a comment.
lua_dir=src/store/redis/lua
for part in $(sed -n '/^set(SLUICE_LUA_PARTS/,/)/p' "$lua_dir/CMakeLists.txt" | grep -o '[a-z_]*\.lua'); do
  printf -- '-- %s\n' "$part"; cat "$lua_dir/$part"; printf '\n'
done > "$work/sluice.lua"

cat > "$work/floor.lua" <<'LUA'
redis.call('TIME')
for i = 1, #KEYS do
  redis.call('GET', KEYS[i])
  redis.call('SET', KEYS[i], '012345678901234567890123', 'PX', '100000')
end
return 1
LUA

# usec_per_call of EVALSHA since the last reset, divided by the checks per call; fails when a
# call failed (a script error would read as cheap).
per_check() {
  local stats
  stats=$(redis-cli -p "$redis_port" info commandstats | grep '^cmdstat_evalsha:')
  case "$stats" in *failed_calls=0*) ;; *) fail "script calls failed: $stats" ;; esac
  sed -n 's/.*usec_per_call=\([0-9.]*\).*/\1/p' <<< "$stats" | awk -v n="$checks" '{ printf "%.2f", $1 / n }'
}

# run SCRIPT SPEC_FIELDS... : the script over `calls` calls of `checks` random keys each.
run() {
  local script=$1 sha
  shift
  sha=$(redis-cli -p "$redis_port" script load "$(cat "$script")")
  local args=(EVALSHA "$sha" "$checks")
  for _ in $(seq "$checks"); do args+=("bench:{__rand_int__}"); done
  # One run of `checks` requests of one check each, and one run of `checks` checks of spec 1 at
  # cost 1 (script_protocol.h), as a busy node sends them.
  args+=(batch "" 1 "$@" 1 "$checks" 1 "$checks" 1 1)
  redis-cli -p "$redis_port" flushall > /dev/null
  redis-cli -p "$redis_port" config resetstat > /dev/null
  redis-benchmark -p "$redis_port" -c 4 -n "$calls" -r 10000 -q "${args[@]}" > /dev/null 2>&1
  per_check
}

# The fields of a limit of 100/s with a burst of 100 (script_protocol.h): algorithm, count,
# period_us, burst, unit_weight (1 s / 100), drain_per_us.
echo "| script | µs per check in Redis ($checks checks per call) |"
echo "|---|---|"
echo "| floor: GET and SET ... PX only | $(run "$work/floor.lua" 7 100 1000000 100 10000 1) |"
for algorithm in "0 fixed_window" "2 sliding_window_counter" "3 token_bucket" "7 gcra"; do
  set -- $algorithm
  echo "| sluice, $2 | $(run "$work/sluice.lua" "$1" 100 1000000 100 10000 1) |"
done
