#!/usr/bin/env bash
# Real nginx (Debian's nginx-light) in front of a backend, with Sluice as its auth_request
# service, using examples/nginx/ as shipped (the ports changed, and limits of the test's own on
# other paths). At the nginx port: 200s while the limit allows, then 429 with Retry-After and
# the rate-limit headers; a limit's 503; a client header of nearly 24 KiB.
# Usage: nginx_auth_request_test.sh SLUICE_BINARY EXAMPLES_NGINX_DIR
set -euo pipefail
sluice_bin="$1"
example_dir="$2"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

front=$(free_port); backend=$(free_port); sluice_port=$(free_port); admin=$(free_port)
sed -e "s/127.0.0.1:8080/127.0.0.1:$sluice_port/; s/127.0.0.1:9090/127.0.0.1:$admin/" \
  "$example_dir/sluice.yaml" > "$work/sluice.yaml"
# One more limit, on a path of its own, denying with 503; the example's per-ip limit is kept to
# /hello, so that each path is denied by its own limit only. (A limit no request can fit, which
# answered with no Retry-After, is a config error now: a fixed cost must fit the limit.)
sed -i 's|^    rate: 3/min$|    rate: 3/min\n    match: { path: /hello }|' "$work/sluice.yaml"
grep -q 'match: { path: /hello }' "$work/sluice.yaml" || fail "the example's per-ip limit has changed"
cat >> "$work/sluice.yaml" <<'YAML'
  - { name: busy, key: global, rate: 1/min, deny_status: 503, match: { path: /busy } }
YAML
sed -e "s/127.0.0.1:8000/127.0.0.1:$front/; s/127.0.0.1:8081/127.0.0.1:$backend/g; s/127.0.0.1:8080/127.0.0.1:$sluice_port/" \
  "$example_dir/nginx.conf" > "$work/nginx.conf"
mkdir -p "$work/tmp"

"$sluice_bin" serve --config "$work/sluice.yaml" > "$work/sluice.log" 2>&1 &
pids+=($!)
nginx -p "$work" -c "$work/nginx.conf" -g 'daemon off;' > "$work/nginx.log" 2>&1 &
pids+=($!)
wait_for_port "$sluice_port"
wait_for_port "$front"

request() { curl -s -D "$work/headers" -o "$work/body" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$front${1:-/hello}"; }
header() { grep -i "^$1:" "$work/headers" | head -1 | cut -d' ' -f2- | tr -d '\r'; }

# The per-ip limit is a fixed window of a minute, aligned to the clock's minutes: requests on
# both sides of a minute's turn would each see a fresh window (remaining 2, then 2 again). So
# in a minute's last 10 s, wait for the next one (at most 11 s) before the four requests.
second=$(date +%-S)
if [ "$second" -ge 50 ]; then sleep $((61 - second)); fi
for i in 1 2 3; do
  status=$(request)
  [ "$status" = 200 ] || fail "request $i: status $status, body $(cat "$work/body"); nginx: $(cat "$work/nginx.log")"
  grep -q "backend ok" "$work/body" || fail "request $i did not reach the backend"
  [ "$(header X-RateLimit-Limit)" = 3 ] || fail "request $i: X-RateLimit-Limit '$(header X-RateLimit-Limit)'"
  [ "$(header X-RateLimit-Remaining)" = $((3 - i)) ] || fail "request $i: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)'"
  header RateLimit-Policy | grep -q '"per-ip";q=3;w=60' || fail "request $i: RateLimit-Policy '$(header RateLimit-Policy)'"
done
status=$(request)
[ "$status" = 429 ] || fail "4th request: status $status, expected 429"
retry_after=$(header Retry-After)
[[ "$retry_after" =~ ^[0-9]+$ ]] && [ "$retry_after" -ge 1 ] && [ "$retry_after" -le 60 ] ||
  fail "4th request: Retry-After '$retry_after'"
[ "$(header X-RateLimit-Remaining)" = 0 ] || fail "4th request: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)'"
header RateLimit | grep -q '"per-ip";r=0' || fail "4th request: RateLimit '$(header RateLimit)'"
grep -q rate_limited "$work/body" || fail "4th request: body $(cat "$work/body")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/body" || fail "4th request: body not JSON: $(cat "$work/body")"

# A limit's own deny status reaches the client (it came as nginx's 403 page).
[ "$(request /busy)" = 200 ] || fail "/busy: the first request was not allowed"
status=$(request /busy)
[ "$status" = 503 ] || fail "/busy: status $status, expected the limit's 503"
grep -q unavailable "$work/body" || fail "/busy: body $(cat "$work/body")"
# A client header of nearly 24 KiB (large cookies), which nginx takes and passes on whole: it
# reached Sluice's 16 KiB bound, and nginx turned the 431 into 500.
big=$(head -c 7000 /dev/zero | tr '\0' 'c')
status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Cookie: a=$big" -H "X-A: $big" \
  -H "X-B: $big" "http://127.0.0.1:$front/busy")
[ "$status" = 503 ] || fail "a 21 KB header: status $status, expected /busy's 503 (not nginx's 500)"
echo "nginx auth_request: 3 allowed, then 429 with Retry-After $retry_after; a 503 limit's 503; a big client header passed"
echo "1 passed, 0 failed"
