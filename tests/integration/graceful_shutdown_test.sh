#!/usr/bin/env bash
# SIGTERM lets a request in flight finish: a throttled request waiting for its slot still gets
# its 200, and `sluice serve` exits 0, also when its hold is longer than the drain's own 10 s. Meanwhile the admin listener still answers, /readyz with
# 503, so a load balancer stops sending before the process goes. Bounded: every wait has a limit.
# Usage: graceful_shutdown_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'stop_sluice; rm -rf "$work"' EXIT

cat > "$work/sluice.yaml" <<'YAML'
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
limits:
  - { name: slow, key: ip, algorithm: gcra, rate: 1/s, burst: 1, action: throttle, max_delay: 3s }
YAML
start_sluice "$sluice_bin" "$work/sluice.yaml"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$admin_port/readyz" || true; }
[ "$(readyz)" = 200 ] || fail "/readyz before SIGTERM: $(readyz)"
url="http://127.0.0.1:$sluice_port/v1/auth"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url")" = 200 ] || fail "first request"
# The second request waits about a second for its slot; stop the server while it waits.
curl -s -D "$work/headers" -o /dev/null -w '%{http_code}' --max-time 10 "$url" > "$work/status" &
curl_pid=$!
sleep 0.3
kill -TERM "$sluice_pid"
not_ready() { [ "$(readyz)" = 503 ]; }
eventually 40 not_ready || fail "/readyz during the drain answered $(readyz), not 503"
wait "$curl_pid" || fail "the waiting request failed"
[ "$(cat "$work/status")" = 200 ] || fail "the waiting request got $(cat "$work/status")"
grep -qi "^X-RateLimit-Delayed-Ms:" "$work/headers" || fail "no delay header"
for _ in $(seq 1 100); do kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$sluice_pid" 2>/dev/null; then fail "sluice still running 5 s after SIGTERM"; fi
wait "$sluice_pid" && code=0 || code=$?
sluice_pid=""
[ "$code" = 0 ] || fail "sluice exited with $code"
echo "graceful shutdown: the request in flight finished; exit 0"

# A hold longer than the drain's own 10 s: the drain waits for it too, and the held request gets
# its 200 (it was cut off, unanswered, at 10 s).
cat > "$work/long.yaml" <<'YAML'
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
limits:
  - { name: slower, key: ip, algorithm: gcra, rate: 1/12s, burst: 1, action: throttle, max_delay: 15s }
YAML
start_sluice "$sluice_bin" "$work/long.yaml"
url="http://127.0.0.1:$sluice_port/v1/auth"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url")" = 200 ] || fail "first request (long hold)"
curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$url" > "$work/long_status" &
curl_pid=$!
sleep 0.3
kill -TERM "$sluice_pid"
wait "$curl_pid" || true
[ "$(cat "$work/long_status")" = 200 ] || fail "the request held 12 s got '$(cat "$work/long_status")', not 200"
wait "$sluice_pid" && code=0 || code=$?
sluice_pid=""
[ "$code" = 0 ] || fail "sluice exited with $code after the long hold"
echo "graceful shutdown: a request held past 10 s was answered before the exit"
echo "2 passed, 0 failed"
