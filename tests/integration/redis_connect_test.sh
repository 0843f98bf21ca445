#!/usr/bin/env bash
# How `sluice serve` reaches Redis. Against a Redis that requires a password, in each shared-store
# mode: with the password from the environment (store.password_env) decisions are made in Redis,
# not degraded; with a wrong one, or none, they follow on_error, the log says why, and nothing
# crashes. A password for a Redis that has none is refused without flapping. And a Unix socket
# (address: unix:/path) works as a host:port does.
# Usage: redis_connect_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_lib.sh"
trap 'stop_all; rm -rf "$work"' EXIT

start_redis
redis-cli -p "$redis_port" config set requirepass s3cret > /dev/null
export SLUICE_TEST_REDIS_PASSWORD=s3cret SLUICE_TEST_WRONG_PASSWORD=wrong

check() {  # node → "status degraded-header"
  curl -s -D "$work/h" -o /dev/null --max-time 5 -X POST "http://127.0.0.1:${node_ports[$1]}/v1/check" \
    -d '{"limit":"per-client","key":"alice"}' -w '%{http_code}'
  printf ' %s\n' "$(tr -d '\r' < "$work/h" | sed -n 's/^X-RateLimit-Degraded: //Ip')"
}

node=0
for type in redis synced; do
  for variable in SLUICE_TEST_REDIS_PASSWORD SLUICE_TEST_WRONG_PASSWORD none; do
    auth=""
    [ "$variable" != none ] && auth="password_env: $variable, "
    [ "$type" = redis ] && auth="${auth}on_error: deny, "  # a synced node decides alone
    cat > "$work/sluice$node.yaml" <<YAML
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
store: { type: $type, address: 127.0.0.1:$redis_port, ${auth}timeout: 200ms }
limits:
  - { name: per-client, key: client, rate: 100/min }
YAML
    start_node "$sluice_bin" "$work/sluice$node.yaml"
    # The store connects in the background: poll (bounded) for a decision made in Redis with the
    # password, and for the store to report its failure without (a synced node first decides
    # alone, and says it is degraded once a sync has failed).
    answer=""
    for _ in $(seq 1 60); do
      answer=$(check "$node")
      if [ "$variable" = SLUICE_TEST_REDIS_PASSWORD ]; then [ "$answer" = "200 " ] && break
      else [ "$answer" != "200 " ] && break; fi
      sleep 0.05
    done
    if [ "$variable" = SLUICE_TEST_REDIS_PASSWORD ]; then
      [ "$answer" = "200 " ] || fail "$type with the password: '$answer', not a decision made in Redis"
    else
      [ "$answer" != "200 " ] || fail "$type with $variable decided in Redis"
      if [ "$variable" = none ]; then expected="it wants a password: set store.password"
      else expected="unreachable (AUTH refused: WRONGPASS"; fi
      # The log line may follow the first answers by a reconnect: poll, bounded.
      for _ in $(seq 1 60); do grep -q "$expected" "$work/node$node.err" && break; sleep 0.05; done
      grep -q "$expected" "$work/node$node.err" \
        || fail "$type with $variable: '$expected' not logged: $(cat "$work/node$node.err")"
      nodes_alive || fail "a node died"
    fi
    node=$((node + 1))
  done
done
# The password rotated on the server: the connections are dropped (CLIENT KILL), then their AUTH
# is refused. The log tells the refusal too, not only that the connections went.
redis-cli -p "$redis_port" -a s3cret --no-auth-warning config set requirepass rotated > /dev/null
redis-cli -p "$redis_port" -a rotated --no-auth-warning client kill type normal > /dev/null
for _ in $(seq 1 60); do grep -q "unreachable (AUTH refused: WRONGPASS" "$work/node0.err" && break; sleep 0.05; done
grep -q "unreachable (AUTH refused: WRONGPASS" "$work/node0.err" ||
  fail "after the rotation the refused AUTH was not logged: $(grep "redis 127" "$work/node0.err")"
redis-cli -p "$redis_port" -a rotated --no-auth-warning config set requirepass s3cret > /dev/null

# A password given for a Redis that has none: Redis refuses the AUTH but would run the commands
# behind it. The connection must count as refused, not flap between up and down (it did, at
# about 240 reconnects a second, each logged): one "unreachable" line, no "connected again".
plain_port=$(free_port)
redis-server --port "$plain_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  --logfile "$work/plain-redis.log" --unixsocket "$work/plain.sock" --unixsocketperm 700 &
plain_pid=$!
# Wait for it too: on SIGTERM it removes its socket and writes its log, racing the rm below.
trap '{ kill -CONT "$plain_pid"; kill "$plain_pid" && wait "$plain_pid"; } 2>/dev/null || true; stop_all; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ "$(redis-cli -p "$plain_port" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
cat > "$work/plain.yaml" <<YAML
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
store: { type: redis, address: 127.0.0.1:$plain_port, password_env: SLUICE_TEST_REDIS_PASSWORD, timeout: 200ms }
limits:
  - { name: per-client, key: client, rate: 100/min }
YAML
start_node "$sluice_bin" "$work/plain.yaml"
plain_err="$work/node$node.err"
for _ in $(seq 1 60); do grep -q "unreachable (AUTH refused" "$plain_err" && break; sleep 0.05; done
grep -q "unreachable (AUTH refused: ERR AUTH" "$plain_err" || fail "the refused AUTH was not logged: $(cat "$plain_err")"
before=$(redis-cli -p "$plain_port" info stats | tr -d '\r' | sed -n 's/^total_connections_received://p')
for _ in $(seq 1 20); do check "$node" > /dev/null; sleep 0.05; done  # a second of requests
after=$(redis-cli -p "$plain_port" info stats | tr -d '\r' | sed -n 's/^total_connections_received://p')
[ "$(grep -c "unreachable" "$plain_err")" -eq 1 ] || fail "the refusal flapped: $(grep -c unreachable "$plain_err") unreachable lines"
grep -q "connected again" "$plain_err" && fail "a connection whose AUTH was refused counted as up"
echo "refused AUTH on a Redis without a password: $((after - before)) reconnects in about a second of requests, logged once"

# The same Redis through its Unix socket, no password: decisions made in Redis.
node=$((node + 1))
cat > "$work/socket.yaml" <<YAML
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
store: { type: redis, address: "unix:$work/plain.sock", on_error: deny, timeout: 200ms }
limits:
  - { name: per-client, key: client, rate: 100/min }
YAML
start_node "$sluice_bin" "$work/socket.yaml"
answer=""
for _ in $(seq 1 60); do answer=$(check "$node"); [ "$answer" = "200 " ] && break; sleep 0.05; done
[ "$answer" = "200 " ] || fail "through the Unix socket: '$answer', not a decision made in Redis"
grep -q "store: redis unix:$work/plain.sock" "$work/node$node.out" "$work/node$node.err" ||
  fail "the store line does not name the socket: $(cat "$work/node$node.err")"

# A Redis that stops answering (frozen here) is logged: the calls that time out say so, where
# only the degraded metric showed it.
kill -STOP "$plain_pid"
answer=$(check "$node")
kill -CONT "$plain_pid"
[ "${answer#* }" = "true" ] || fail "with Redis frozen: '$answer', not a degraded decision"
for _ in $(seq 1 60); do grep -q "no answer within 200 ms" "$work/node$node.err" && break; sleep 0.05; done
grep -q "redis unix:$work/plain.sock: no answer within 200 ms" "$work/node$node.err" ||
  fail "a frozen Redis was not logged: $(cat "$work/node$node.err")"

# A Unix socket with nothing there fails at once, with no connection to lose: still logged.
node=$((node + 1))
sed "s|plain.sock|absent.sock|" "$work/socket.yaml" > "$work/absent.yaml"
start_node "$sluice_bin" "$work/absent.yaml"
for _ in $(seq 1 60); do grep -q "unreachable" "$work/node$node.err" && break; sleep 0.05; done
grep -q "redis unix:$work/absent.sock: unreachable (" "$work/node$node.err" ||
  fail "a Unix socket that is not there was not logged: $(cat "$work/node$node.err")"

echo "redis and synced modes AUTH with the password from the environment; a wrong one is logged and follows on_error; a Unix socket works; a frozen Redis and an absent socket are logged"
echo "1 passed, 0 failed"
