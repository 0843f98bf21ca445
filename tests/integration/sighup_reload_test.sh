#!/usr/bin/env bash
# SIGHUP re-reads the configuration: a good file takes effect, a broken one is refused with its
# errors logged and the old policy keeps serving. Bounded: every wait has a limit.
# Usage: sighup_reload_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'stop_sluice; rm -rf "$work"' EXIT

write_config() {  # rate
  printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: %s }\n' "$1" > "$work/sluice.yaml"
}
write_config 2/min
start_sluice "$sluice_bin" "$work/sluice.yaml"
limit() { curl -s -D - -o /dev/null --max-time 5 "http://127.0.0.1:$sluice_port/v1/auth" | tr -d '\r' | sed -n 's/^X-RateLimit-Limit: //p'; }

[ "$(limit)" = 2 ] || fail "the initial limit is not 2"
write_config 7/min
kill -HUP "$sluice_pid"
seen=""
for _ in $(seq 1 100); do seen=$(limit); [ "$seen" = 7 ] && break; sleep 0.05; done
[ "$seen" = 7 ] || fail "after SIGHUP the limit is '$seen', not 7"

write_config 7/fortnight
kill -HUP "$sluice_pid"
for _ in $(seq 1 100); do grep -q "reload refused" "$work/sluice.err" && break; sleep 0.05; done
grep -q "reload refused.*fortnight" "$work/sluice.err" || fail "the broken reload was not reported: $(cat "$work/sluice.err")"
grep -q "sluice.yaml:3:" "$work/sluice.err" || fail "the error has no file:line: $(cat "$work/sluice.err")"
[ "$(limit)" = 7 ] || fail "the old policy did not keep serving"
echo "SIGHUP reload: good config applied, broken config refused with file:line"
echo "1 passed, 0 failed"
