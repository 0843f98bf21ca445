#!/usr/bin/env bash
# Out of file descriptors, a listener pauses accepting and says why, instead of retrying accept()
# at once forever (a silent busy loop on its event loop); once connections close it serves again.
# The process gets a small open-files limit and 16 threads (3 descriptors each), so the
# connections held below run it out although each listener's cap (limit - 64) is not reached.
# Bounded: every wait has a limit.
# Usage: fd_exhaustion_test.sh SLUICE_BINARY
set -euo pipefail
sluice_bin="$1"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'stop_sluice; rm -rf "$work"' EXIT

printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0, threads: 16 }\nlimits:\n  - { name: per-ip, key: ip, rate: 100/s }\n' > "$work/sluice.yaml"
ulimit -S -n 100  # the soft limit: the Python holder below raises its own back
start_sluice "$sluice_bin" "$work/sluice.yaml"
admin_port=$(sed -n 's/.*admin=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
[ -n "$admin_port" ] || fail "no admin port in: $(cat "$work/sluice.out")"

# Holds 45 connections to each listener until its standard input (the fifo) closes.
cat > "$work/holder.py" <<'PY'
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
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
