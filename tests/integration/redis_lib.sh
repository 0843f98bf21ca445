# For the tests that share limits through Redis: a real redis-server on a loopback port, several
# `sluice serve` processes, and a wrk load that counts answers by status. Every wait is bounded.
# Source after lib.sh; the caller sets `work` and cleans up with stop_all.

redis_pid=""
redis_port=""
node_pids=()
node_ports=()

# Whether the Redis answering on port $1 is process $2: a port found free can be taken by another
# test's Redis before ours binds it; ours then exits, and the other answers meanwhile.
served_by() {
  redis-cli -p "$1" info server 2>/dev/null | grep -q "^process_id:$2[^0-9]"
}

start_redis() {  # [port]: a fresh, non-persistent server; reuses the port when given
  local attempt
  for attempt in 1 2 3 4 5; do
    redis_port="${1:-$(free_port)}"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$work" --logfile "$work/redis.log" &
    redis_pid=$!
    for _ in $(seq 1 100); do
      served_by "$redis_port" "$redis_pid" && return
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill_redis
    [ -n "${1:-}" ] && break  # the port asked for is taken: no other will do
  done
  fail "redis-server did not start on $redis_port"
}

kill_redis() {  # SIGKILL: the server vanishes as in a crash
  if [ -n "$redis_pid" ]; then kill -KILL "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  redis_pid=""
}

start_node() {  # binary config: appends to node_pids and node_ports
  local index=${#node_pids[@]}
  # Made here first: the background job opens them itself, and a read before it had (sed on a
  # missing file, under set -e) ended the test.
  : > "$work/node$index.out"
  : > "$work/node$index.err"
  "$1" serve --config "$2" > "$work/node$index.out" 2> "$work/node$index.err" &
  node_pids+=($!)
  local port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*api=127.0.0.1:\([0-9]*\).*/\1/p' "$work/node$index.out")
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || fail "sluice node $index did not start: $(cat "$work/node$index.err")"
  node_ports+=("$port")
}

nodes_alive() {
  for pid in "${node_pids[@]}"; do kill -0 "$pid" 2>/dev/null || return 1; done
}

stop_all() {
  for pid in "${node_pids[@]}"; do { kill -TERM "$pid" && wait "$pid"; } 2>/dev/null || true; done
  node_pids=()
  kill_redis
}

# wrk against every node at once for $1 seconds with $2 connections per node, each request an
# auth subrequest with the headers in the wrk script. Prints the total of 200s, 429s, other
# statuses, socket errors, and answers marked degraded (X-RateLimit-Degraded) over all nodes:
# "ok denied other errors degraded".
load_nodes() {
  local seconds=$1 connections=$2 i
  cat > "$work/count.lua" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; denied = 0; other = 0; degraded = 0 end
function response(status, headers, body)
  if status == 200 then ok = ok + 1 elseif status == 429 then denied = denied + 1 else other = other + 1 end
  for name, _ in pairs(headers) do
    if string.lower(name) == "x-ratelimit-degraded" then degraded = degraded + 1 end
  end
end
function done(summary, latency, requests)
  local a, d, o, g = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("ok"); d = d + t:get("denied"); o = o + t:get("other"); g = g + t:get("degraded")
  end
  local e = summary.errors
  io.write(string.format("COUNTS %d %d %d %d %d\n", a, d, o, e.connect + e.read + e.write + e.timeout, g))
end
LUA
  for i in "${!node_ports[@]}"; do
    wrk -t1 -c"$connections" -d"${seconds}s" --timeout 2s -s "$work/count.lua" \
      "http://127.0.0.1:${node_ports[$i]}/v1/auth" > "$work/wrk$i.out" 2>&1 &
  done
  wait_wrk
  awk '/^COUNTS/ { a += $2; d += $3; o += $4; e += $5; g += $6 }
       END { print a + 0, d + 0, o + 0, e + 0, g + 0 }' "$work"/wrk*.out
}

wait_wrk() {  # wrk ends on its own after -d; bounded anyway
  for _ in $(seq 1 400); do pgrep -f "wrk -t1 -c.*$work" > /dev/null || return 0; sleep 0.05; done
  pkill -f "wrk -t1 -c.*$work" || true
}

cluster_pids=()
cluster_ports=()

# A port that is free and not among the ports already taken ($@).
free_port_besides() {
  local port taken
  for _ in $(seq 1 20); do
    port=$(free_port)
    for taken in "$@"; do [ "$port" = "$taken" ] && port=""; done
    [ -n "$port" ] && { echo "$port"; return; }
  done
  fail "no free port besides $*"
}

start_cluster() {  # three masters on loopback, slots spread by redis-cli; waits for cluster_state:ok
  local i port bus attempt pid up taken=()
  for i in 0 1 2; do
    mkdir -p "$work/cluster$i"
    up=""
    # A port found free may be taken before redis-server binds it (by another test, or by the
    # bus port picked just before it): then the server exits, and the node starts on others.
    for attempt in 1 2 3 4 5; do
      port=$(free_port_besides "${taken[@]}")
      bus=$(free_port_besides "${taken[@]}" "$port")
      redis-server --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --save '' \
        --appendonly no --cluster-enabled yes --cluster-config-file "$work/cluster$i/nodes.conf" \
        --dir "$work/cluster$i" --logfile "$work/cluster$i/redis.log" &
      pid=$!
      for _ in $(seq 1 100); do
        served_by "$port" "$pid" && { up=yes; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
      [ -n "$up" ] && break
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      rm -f "$work/cluster$i/nodes.conf"
    done
    [ -n "$up" ] || fail "cluster node $i did not start: $(tail -n 5 "$work/cluster$i/redis.log")"
    cluster_pids+=("$pid")
    cluster_ports+=("$port")
    taken+=("$port" "$bus")
  done
  redis-cli --cluster create "127.0.0.1:${cluster_ports[0]}" "127.0.0.1:${cluster_ports[1]}" \
    "127.0.0.1:${cluster_ports[2]}" --cluster-replicas 0 --cluster-yes > "$work/cluster-create.log" 2>&1 ||
    fail "redis-cli --cluster create failed: $(cat "$work/cluster-create.log")"
  for port in "${cluster_ports[@]}"; do
    local ok=""
    for _ in $(seq 1 200); do
      redis-cli -p "$port" cluster info | grep -q "cluster_state:ok" && { ok=yes; break; }
      sleep 0.05
    done
    [ -n "$ok" ] || fail "the cluster did not become ok"
  done
}

stop_cluster() {
  for pid in "${cluster_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  cluster_pids=()
}
