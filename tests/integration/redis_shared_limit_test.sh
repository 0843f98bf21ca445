#!/usr/bin/env bash
# Two `sluice serve` processes share one Redis: under 64 concurrent clients spread over both,
# a limit of 1,000 admits exactly 1,000, for a fixed window and for GCRA. Then the same workload
# against a 3-master Redis Cluster; and in synced mode (local decisions, 20 ms syncs) the same
# workload stays within the documented bound.
# Usage: redis_shared_limit_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"
trap 'stop_all; stop_cluster; rm -rf "$work"' EXIT

start_redis

# Limits per day, so neither a fixed window's rollover (only at midnight UTC) nor GCRA's refill
# (one per 86 s) can add admissions during a run.
# This test is about exactness while Redis answers, not about deadlines: the longest timeout
# keeps a loaded CI machine (a sanitizer build, two cores) from turning slow answers into
# degraded denials, which the checks below would report as such.
write_config() {  # store_type algorithm extra_store_settings
  local address="address: 127.0.0.1:$redis_port"
  [ "$1" = redis_cluster ] && address="addresses: [127.0.0.1:${cluster_ports[0]}]"
  local on_error="on_error: deny, "
  [ "$1" = synced ] && on_error=""  # a synced node decides alone: on_error is not its
  cat > "$work/sluice.yaml" <<YAML
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0, threads: 1 }
store: { type: $1, $address, timeout: 1s, ${on_error}sluice_nodes: 2$3 }
limits:
  - { name: shared, key: global, algorithm: $2, rate: 1000/day, burst: 1000 }
  - { name: per-ip, key: ip, algorithm: $2, rate: 1000000/day, burst: 1000000 }
YAML
}

run_case() {  # store_type algorithm extra -> prints "ok denied other errors degraded"
  if [ "$1" = redis_cluster ]; then
    for port in "${cluster_ports[@]}"; do redis-cli -p "$port" flushall > /dev/null; done
  else
    redis-cli -p "$redis_port" flushall > /dev/null
  fi
  write_config "$1" "$2" "$3"
  node_pids=(); node_ports=()
  start_node "$sluice_bin" "$work/sluice.yaml"
  start_node "$sluice_bin" "$work/sluice.yaml"
  # Rounds of 2 s until the limit has been pressed hard (over 1000 denials), at most 5: a slow
  # machine (a sanitizer build under load) gets more time, and the counts add up across rounds.
  local total=(0 0 0 0 0) round counts i
  for round in 1 2 3 4 5; do
    read -r -a counts <<< "$(load_nodes 2 32)"
    for i in 0 1 2 3 4; do total[i]=$((total[i] + counts[i])); done
    [ "${total[1]}" -gt 1000 ] && break
  done
  nodes_alive || fail "a node died: $(cat "$work"/node*.err)"
  for pid in "${node_pids[@]}"; do { kill -TERM "$pid" && wait "$pid"; } 2>/dev/null || true; done
  echo "${total[*]}"
}

# measure LABEL STORE ALGORITHM EXTRA: runs the case and sets ok, denied, other, errors, degraded.
measure() {
  read -r ok denied other errors degraded <<< "$(run_case "$2" "$3" "$4")"
  [ -n "$degraded" ] || fail "the $1 run failed (see above)"
  echo "$1: $ok admitted, $denied denied, $other other, $errors socket errors, $degraded degraded"
}

# Exactly 1000 admitted, every decision made by Redis, the limit pressed hard, no odd answers.
expect_exact() {
  [ "$degraded" -eq 0 ] || fail "$degraded decisions were degraded (Redis calls failed or timed out)"
  [ "$ok" -eq 1000 ] || fail "$1 admitted $ok, not exactly 1000"
  [ "$denied" -gt 1000 ] || fail "the load was too light to test anything ($denied denied)"
  [ "$other" -eq 0 ] && [ "$errors" -eq 0 ] || fail "unexpected answers: $other other, $errors errors"
  passed=$((passed + 1))
}

passed=0
for algorithm in fixed_window gcra; do
  measure "redis, $algorithm" redis "$algorithm" ""
  expect_exact "redis $algorithm"
done

# The same against a 3-master cluster, seeded with one node: the limits of the two keys below live
# on whatever slots their tags hash to, and the request's two limits may span two slots
# (consume-then-refund), yet exactly 1000 are admitted.
start_cluster
measure "redis_cluster, gcra" redis_cluster gcra ""
expect_exact redis_cluster

# Synced: overshoot at most (nodes - 1) / nodes x limit = 500 over a burst (rate x interval is
# negligible for 1000/day); and the shares converge to the whole limit. (Degraded here means a
# node went 10 intervals without a completed sync, which a loaded machine can cause; it still
# decides against the last totals it pulled, so the bounds below are what is checked.)
measure "synced, fixed_window" synced fixed_window ", sync_interval: 20ms"
[ "$ok" -le 1500 ] || fail "synced admitted $ok, above the bound 1500"
[ "$ok" -ge 950 ] || fail "synced admitted only $ok of 1000"
[ "$other" -eq 0 ] && [ "$errors" -eq 0 ] || fail "unexpected answers: $other other, $errors errors"
passed=$((passed + 1))
echo "$passed passed, 0 failed"
