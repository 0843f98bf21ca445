#!/usr/bin/env bash
# The Envoy door out of file descriptors: gRPC 1.51 stops accepting on its port for good after
# one accept fails so, and says it only in a log line. /readyz then answers 503 and says why, so
# that an orchestrator restarts the process (it answered 200 while Envoy could no longer connect).
# The process gets an open-files limit of 128 (hard: it cannot raise it); 200 connections held to
# the door's port run it out. Bounded: every wait has a limit, within ctest's 60 s.
# Usage: rls_fd_exhaustion_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'stop_sluice; rm -rf "$work"' EXIT

mkdir "$work/lyft"
printf 'domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 100 }\n' > "$work/lyft/edge.yaml"
printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0, threads: 2 }\nlimits:\n  - { name: a, key: ip, rate: 100/s }\nenvoy_rls: { listen: "127.0.0.1:0", config_dir: lyft }\n' > "$work/sluice.yaml"
# The subshell becomes sluice (exec), so it is this shell's child, stopped and waited for.
(ulimit -n 128 && exec "$sluice_bin" serve --config "$work/sluice.yaml" > "$work/sluice.out" 2> "$work/sluice.err") &
sluice_pid=$!
started() { grep -q "listening" "$work/sluice.out"; }
eventually 200 started || fail "sluice did not start: $(cat "$work/sluice.err")"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
rls_port=$(sed -n 's/.*rls=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
[ -n "$admin_port" ] && [ -n "$rls_port" ] || fail "no admin or rls port in: $(cat "$work/sluice.out")"
readyz() { curl -s -w ' %{http_code}' --max-time 1 "http://127.0.0.1:$admin_port/readyz" || true; }
answer=$(readyz)
[ "${answer##* }" = 200 ] || fail "not ready at start: $answer"

cat > "$work/hold.py" <<'PY'
import socket, sys, time
held = []
for _ in range(200):
    held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
time.sleep(1)  # while gRPC accepts them, until it runs out
PY
timeout 20 /usr/bin/python3 "$work/hold.py" "$rls_port" || fail "could not hold the connections"
# The connections are gone: the admin listener serves again, the Envoy door does not.
unready() { answer=$(readyz); [ "${answer##* }" = 503 ]; }
eventually 20 unready || fail "/readyz answers '$answer' with the Envoy door's listener gone: $(cat "$work/sluice.err")"
[[ "$answer" == *"the Envoy door stopped accepting connections"* ]] || fail "/readyz does not say why: $answer"
echo "the Envoy door out of descriptors: /readyz answers 503 and says why"
echo "1 passed, 0 failed"
