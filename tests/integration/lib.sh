# Shared by the integration tests and bench/http_bench.sh: loopback ports, waiting for a
# listener, and a `sluice serve` in the background. Every wait is bounded.
# The caller sets `work` (a temporary directory) and `set -euo pipefail`.

sluice_pid=""

fail() { echo "FAIL: $*" >&2; exit 1; }

# A port nobody listens on (a small race with other processes is acceptable for a test). Below
# Linux's ephemeral range (32768 up): a port there may be the local end of some client's
# connection, which a connect probe cannot see but which keeps a server from binding it.
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  fail "no free port"
}

# eventually TRIES COMMAND...: runs COMMAND until it succeeds, at most TRIES times 50 ms apart.
eventually() {
  local tries=$1 _
  shift
  for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.05; done
  return 1
}

wait_for_port() {  # port [seconds, default 5]
  for _ in $(seq 1 $((${2:-5} * 20))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return; fi
    sleep 0.05
  done
  fail "nothing listens on port $1"
}

# Starts `$1 serve --config $2` and sets sluice_pid and sluice_port (read from its
# "listening api=..." line, so the config may use port 0).
start_sluice() {
  "$1" serve --config "$2" > "$work/sluice.out" 2> "$work/sluice.err" &
  sluice_pid=$!
  for _ in $(seq 1 200); do grep -q "listening" "$work/sluice.out" && break; sleep 0.05; done
  sluice_port=$(sed -n 's/.*api=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
  [ -n "$sluice_port" ] || fail "sluice did not start: $(cat "$work/sluice.err")"
}

# SIGTERM, so sluice finishes what it is doing; never fails the caller.
stop_sluice() {
  if [ -n "$sluice_pid" ]; then { kill -TERM "$sluice_pid" && wait "$sluice_pid"; } 2>/dev/null || true; fi
  sluice_pid=""
}
