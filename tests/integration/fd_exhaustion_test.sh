#!/usr/bin/env bash
# Out of file descriptors, a listener pauses accepting and says why, instead of retrying accept()
# at once forever (a silent busy loop on its event loop); once connections close it serves again.
# The process gets a small open-files limit and 16 threads (3 descriptors each), so the
# connections held below run it out, the limit being too small to fit the caps to.
# Bounded: every wait has a limit.
# Usage: fd_exhaustion_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'stop_sluice; rm -rf "$work"' EXIT

printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0, threads: 16 }\nlimits:\n  - { name: per-ip, key: ip, rate: 100/s }\n' > "$work/sluice.yaml"

# A soft open-files limit below the hard one is raised at start (the Envoy door's gRPC stops
# accepting for good on running out, and the default soft 1024 leaves a door few connections).
hard=$(ulimit -H -n)
if [ "$hard" != unlimited ] && [ "$hard" -gt 256 ]; then
  (ulimit -S -n 256 && start_sluice "$sluice_bin" "$work/sluice.yaml" &&
    soft=$(awk '/^Max open files/ {print $4}' "/proc/$sluice_pid/limits") &&
    stop_sluice && { [ "$soft" = "$hard" ] || fail "the soft limit stayed $soft (hard $hard)"; }) ||
    fail "the soft open-files limit was not raised: $(cat "$work/sluice.err")"
  grep -q "open-files limit raised from 256 to $hard" "$work/sluice.out" "$work/sluice.err" ||
    fail "the raise was not logged: $(cat "$work/sluice.out" "$work/sluice.err")"
fi

# The admin listener has a cap of its own, 64, out of the files kept aside: connections to it
# past that are answered 503 (it shared the API's cap, thousands, outside the fitted budget).
start_sluice "$sluice_bin" "$work/sluice.yaml"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
cat > "$work/admin_cap.py" <<'PY'
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(64)]
time.sleep(0.5)  # accepted, each counted
extra = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
print(extra.recv(200).split(b"\r\n")[0].decode())
PY
over_cap=$(timeout 20 /usr/bin/python3 "$work/admin_cap.py" "$admin_port")
[ "$over_cap" = "HTTP/1.1 503 Service Unavailable" ] ||
  fail "the admin listener's 65th connection got '$over_cap', not 503"
stop_sluice

ulimit -n 100  # soft and hard: the process cannot raise it, so it runs out below
start_sluice "$sluice_bin" "$work/sluice.yaml"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
[ -n "$admin_port" ] || fail "no admin port in: $(cat "$work/sluice.out")"

# Holds 45 connections to each listener until its standard input (the fifo) closes.
cat > "$work/holder.py" <<'PY'
import socket, sys
held = []
for port in sys.argv[1:]:
    for _ in range(45):
        s = socket.socket()
        s.settimeout(5)
        s.connect(("127.0.0.1", int(port)))  # completes in the backlog even when not accepted
        held.append(s)
print("holding", len(held), flush=True)
sys.stdin.read()
PY
mkfifo "$work/hold"
/usr/bin/python3 "$work/holder.py" "$sluice_port" "$admin_port" < "$work/hold" > "$work/holder.out" 2>&1 &
holder=$!
exec 3> "$work/hold"
paused() { grep -q "accept failed" "$work/sluice.err"; }
eventually 200 paused || fail "no 'accept failed' warning with the descriptors exhausted: $(cat "$work/sluice.err"); holder: $(cat "$work/holder.out")"
grep -q "Too many open files" "$work/sluice.err" || fail "the warning does not say why: $(cat "$work/sluice.err")"
exec 3>&-  # the holder exits and its connections close
wait "$holder" || fail "the holder failed: $(cat "$work/holder.out")"

healthy() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$admin_port/healthz")" = 200 ]; }
eventually 100 healthy || fail "the admin listener does not serve after the connections closed"
status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$sluice_port/v1/auth")
[ "$status" = 200 ] || fail "the API answers $status after the connections closed"
echo "out of descriptors: accepting paused with a warning, then served again"
echo "1 passed, 0 failed"
