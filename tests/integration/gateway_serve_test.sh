#!/usr/bin/env bash
# `sluice serve` with a gateway: section is a reverse proxy in front of a real upstream (Python's
# http.server on loopback): allowed requests reach the upstream with rate-limit headers added,
# the fourth gets 429 with the JSON body, and SIGTERM stops it cleanly. Its connection caps fit the
# open-files limit.
# Usage: gateway_serve_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
upstream_pid=""
trap 'stop_sluice; [ -n "$upstream_pid" ] && { kill "$upstream_pid" && wait "$upstream_pid"; } 2>/dev/null || true; rm -rf "$work"' EXIT

upstream_port=$(free_port)
mkdir -p "$work/site" && echo "hello from upstream" > "$work/site/index.html"
/usr/bin/python3 -m http.server "$upstream_port" --bind 127.0.0.1 --directory "$work/site" \
  > "$work/upstream.log" 2>&1 &
upstream_pid=$!
wait_for_port "$upstream_port"
cat > "$work/sluice.yaml" <<YAML
server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }
gateway:
  listen: 127.0.0.1:0
  upstreams: { app: 127.0.0.1:$upstream_port }
  routes: [ { path_prefix: /, upstream: app } ]
limits:
  # A token bucket, not a fixed window: a window aligned to the minute could turn over between
  # two requests and give the third a fresh count (it did, once in a clean run).
  - { name: per-ip, key: ip, algorithm: token_bucket, rate: 3/min, burst: 3 }
YAML
# 320 open files (hard too: the process would raise a soft limit): the gateway (two per
# connection) and the API share 192, the rest kept for the admin listener's 64 and a reserve.
ulimit -n 320
start_sluice "$sluice_bin" "$work/sluice.yaml"
for door in gateway server; do
  grep -q "$door.max_connections 10000 lowered to 64 to fit the open-files limit" "$work/sluice.err" ||
    fail "$door.max_connections was not fitted to 256 open files: $(cat "$work/sluice.err")"
done
gateway_port=$(sed -n 's/.*gateway=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
[ -n "$gateway_port" ] || fail "no gateway in the listening line: $(cat "$work/sluice.out")"

for i in 1 2 3; do
  curl -s -D "$work/h$i" -o "$work/b$i" --max-time 5 "http://127.0.0.1:$gateway_port/index.html"
  grep -q "^HTTP/1.1 200" "$work/h$i" || fail "request $i was not forwarded: $(cat "$work/h$i")"
  grep -q "hello from upstream" "$work/b$i" || fail "request $i lost the upstream's body"
  grep -qi "^X-RateLimit-Remaining: $((3 - i))" "$work/h$i" || fail "request $i lacks the headers"
done
curl -s -D "$work/h4" -o "$work/b4" --max-time 5 "http://127.0.0.1:$gateway_port/index.html"
grep -q "^HTTP/1.1 429" "$work/h4" || fail "the fourth request was not denied: $(cat "$work/h4")"
grep -q '"per-ip"' "$work/b4" || fail "the denial has no JSON body naming the limit"
[ "$(grep -c "GET /index.html" "$work/upstream.log")" -eq 3 ] || fail "the upstream saw a denied request"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
metrics=$(curl -s --max-time 5 "http://127.0.0.1:$admin_port/metrics")
grep -q 'sluice_gateway_requests_total{result="forwarded"} 3' <<< "$metrics" || fail "forwarded not in /metrics"
grep -q 'sluice_gateway_requests_total{result="denied"} 1' <<< "$metrics" || fail "denied not in /metrics"
# A reload takes in the limits, but an edit to the gateway's own settings waits for a restart,
# and the reload says so (the answer's warnings, and the log).
sed -i 's|routes: \[ { path_prefix: /, upstream: app } \]|routes: [ { path_prefix: /api, upstream: app } ]|' "$work/sluice.yaml"
reload=$(curl -s --max-time 5 -X POST "http://127.0.0.1:$admin_port/admin/reload")
grep -q '"reloaded":true' <<< "$reload" || fail "the reload was refused: $reload"
grep -q 'gateway: settings changed; they take effect at restart' <<< "$reload" || fail "no warning for the gateway edit: $reload"
grep -q 'reload: gateway: settings changed' "$work/sluice.err" || fail "the warning was not logged: $(cat "$work/sluice.err")"
kill -TERM "$sluice_pid"
for _ in $(seq 1 100); do kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$sluice_pid" 2>/dev/null && fail "sluice did not stop on SIGTERM"
sluice_pid=""
echo "gateway through sluice serve: 3 forwarded with headers, 1 denied with 429, a reload warns of a gateway edit, clean stop"
echo "1 passed, 0 failed"
