#!/usr/bin/env bash
# The Envoy door out of file descriptors: gRPC 1.51 stops accepting on its port for good after
# one accept fails so, and says it only in a log line. /readyz then answers 503 and says why, so
# that an orchestrator restarts the process (it answered 200 while Envoy could no longer connect).
# The process gets an open-files limit of 128 (hard: it cannot raise it); 200 connections held to
# the door's port run it out. Bounded: every wait has a limit.
# Usage: rls_fd_exhaustion_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
# The process is not this shell's child (a subshell started it, under the limit): its end is
# waited for by polling, before its log files are removed.
stop_orphan() {
  [ -n "$sluice_pid" ] || return 0
  kill -TERM "$sluice_pid" 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.05; done
}
trap 'stop_orphan; rm -rf "$work"' EXIT

mkdir "$work/lyft"
printf 'domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 100 }\n' > "$work/lyft/edge.yaml"
rls_port=$(free_port)
printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n  - { name: a, key: ip, rate: 100/s }\nenvoy_rls: { listen: "127.0.0.1:%s", config_dir: lyft }\n' "$rls_port" > "$work/sluice.yaml"
(ulimit -n 128 && start_sluice "$sluice_bin" "$work/sluice.yaml" && echo "$sluice_pid" > "$work/pid" &&
  sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out" > "$work/admin_port") ||
  fail "sluice did not start: $(cat "$work/sluice.err")"
sluice_pid=$(cat "$work/pid")
admin_port=$(cat "$work/admin_port")
ready() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$admin_port/readyz"; }
[ "$(ready)" = 200 ] || fail "not ready at start: $(ready)"

cat > "$work/hold.py" <<'PY'
import socket, sys, time
held = []
for _ in range(200):
    held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
time.sleep(1)  # while gRPC accepts them, until it runs out
PY
timeout 30 /usr/bin/python3 "$work/hold.py" "$rls_port" || fail "could not hold the connections"
# The connections are gone: the admin listener serves again, the Envoy door does not.
unready() { [ "$(ready)" = 503 ]; }
eventually 100 unready || fail "/readyz answers $(ready) with the Envoy door's listener gone: $(cat "$work/sluice.err")"
curl -s --max-time 2 "http://127.0.0.1:$admin_port/readyz" | grep -q "the Envoy door stopped accepting connections" ||
  fail "/readyz does not say why: $(curl -s --max-time 2 "http://127.0.0.1:$admin_port/readyz")"
echo "the Envoy door out of descriptors: /readyz answers 503 and says why"
echo "1 passed, 0 failed"
