#!/usr/bin/env bash
# How long a reload of big configuration files holds the listeners: the slowest /healthz answer
# while `sluice serve` (one I/O thread, so every connection shares its loop) reloads
#   watcher: the Envoy door's lyft directory, edited (its watcher looks every second);
#   sighup:  a SIGHUP with a big identity.keys_file.
# /healthz is asked every 20 ms for a few seconds around each reload, by curl.
# Usage: bench/reload_stall.sh [entries]   (after building build/ in Release; default 60000
# entries, a lyft file of about 5 MB and a keys file of about 3 MB)
#   SLUICE_BIN=path     the program (default build/src/sluice)
#   BASELINE_BIN=path   a second build, measured in the same run (before/after a change)
set -euo pipefail
cd "$(dirname "$0")/.."
entries="${1:-60000}"
sluice_bin="$(realpath "${SLUICE_BIN:-build/src/sluice}")"
baseline_bin="${BASELINE_BIN:+$(realpath "$BASELINE_BIN")}"

source bench/bench_lib.sh

mkdir -p "$work/lyft"
python3 - "$work" "$entries" <<'EOF'
import sys
work, entries = sys.argv[1], int(sys.argv[2])
with open(f"{work}/lyft/big.yaml", "w") as lyft:
    lyft.write("domain: big\ndescriptors:\n")
    for i in range(entries):
        lyft.write(f"  - key: k{i}\n    value: v{i}\n"
                   f"    rate_limit: {{unit: second, requests_per_unit: {i + 1}}}\n")
with open(f"{work}/keys.yaml", "w") as keys:
    keys.write("keys:\n")
    for i in range(entries):
        keys.write(f"  - {{key: key-{i:08d}-abcdefghijklmnop, tier: free}}\n")
EOF

# Probes /healthz every 20 ms, `count` times; prints the slowest answer in ms.
slowest_health() {
  local port="$1" count="$2" worst=0 took
  for _ in $(seq "$count"); do
    took=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "http://127.0.0.1:$port/healthz")
    worst=$(awk -v a="$worst" -v b="$took" 'BEGIN { print (b > a) ? b : a }')
    sleep 0.02
  done
  awk -v s="$worst" 'BEGIN { printf "%.1f", 1000 * s }'
}

# One program's two figures: "watcher_ms sighup_ms".
measure() {
  local bin="$1" port admin rls pid watcher sighup
  port=$(free_port); admin=$(free_port); rls=$(free_port)
  cat > "$work/sluice.yaml" <<EOF
server: { listen: 127.0.0.1:$port, admin: 127.0.0.1:$admin, threads: 1 }
store: { type: memory }
identity: { keys_file: keys.yaml }
tiers:
  anonymous: { rate: 10/s }
  free: { rate: 10/s }
limits:
  - { name: per-client, key: client, from_tier: true }
envoy_rls:
  listen: 127.0.0.1:$rls
  config_dir: lyft
EOF
  (cd "$work" && exec "$bin" serve --config sluice.yaml > "$work/serve.log" 2>&1) & pid=$!
  pids+=("$pid")
  wait_for_port "$port" 60  # loading the big files first takes seconds
  sleep 1.5
  echo "# edited $(date +%s%N)" >> "$work/lyft/big.yaml"
  watcher=$(slowest_health "$port" 200)
  kill -HUP "$pid"
  sighup=$(slowest_health "$port" 150)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "reloaded" "$work/serve.log" || fail "the lyft watcher did not reload: $(tail -3 "$work/serve.log")"
  echo "$watcher $sighup"
}

echo "slowest /healthz during a reload of $entries entries, ms (one I/O thread)"
read -r watcher sighup <<< "$(measure "$sluice_bin")"
echo "  $sluice_bin: lyft watcher $watcher, SIGHUP $sighup"
if [[ -n "$baseline_bin" ]]; then
  read -r base_watcher base_sighup <<< "$(measure "$baseline_bin")"
  echo "  $baseline_bin: lyft watcher $base_watcher, SIGHUP $base_sighup"
fi
