#!/usr/bin/env bash
# SIGTERM lets a request in flight finish: a throttled request waiting for its slot still gets
# its 200, and `sluice serve` exits 0. Bounded: every wait has a limit.
# Usage: graceful_shutdown_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
sluice_pid=""
cleanup() {
  if [ -n "$sluice_pid" ]; then { kill -TERM "$sluice_pid" && wait "$sluice_pid"; } 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$work/sluice.yaml" <<'YAML'
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
limits:
  - { name: slow, key: ip, algorithm: gcra, rate: 1/s, burst: 1, action: throttle, max_delay: 3s }
YAML
"$sluice_bin" serve --config "$work/sluice.yaml" > "$work/out.log" 2> "$work/err.log" &
sluice_pid=$!
for _ in $(seq 1 100); do grep -q "listening" "$work/out.log" && break; sleep 0.05; done
port=$(sed -n 's/.*api=127.0.0.1:\([0-9]*\).*/\1/p' "$work/out.log")
[ -n "$port" ] || fail "sluice did not start: $(cat "$work/err.log")"

url="http://127.0.0.1:$port/v1/auth"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url")" = 200 ] || fail "first request"
# The second request waits about a second for its slot; stop the server while it waits.
curl -s -D "$work/headers" -o /dev/null -w '%{http_code}' --max-time 10 "$url" > "$work/status" &
curl_pid=$!
sleep 0.3
kill -TERM "$sluice_pid"
wait "$curl_pid" || fail "the waiting request failed"
[ "$(cat "$work/status")" = 200 ] || fail "the waiting request got $(cat "$work/status")"
grep -qi "^X-RateLimit-Delayed-Ms:" "$work/headers" || fail "no delay header"
for _ in $(seq 1 100); do kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$sluice_pid" 2>/dev/null; then fail "sluice still running 5 s after SIGTERM"; fi
wait "$sluice_pid" && code=0 || code=$?
sluice_pid=""
[ "$code" = 0 ] || fail "sluice exited with $code"
echo "graceful shutdown: the request in flight finished; exit 0"
echo "1 passed, 0 failed"
