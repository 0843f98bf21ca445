# What the benchmark scripts share. Sourced from the repository's root, after `set -euo pipefail`:
# it makes a scratch folder ($work) and a list of background processes ($pids), both cleaned up
# when the script exits, and brings the integration tests' helpers (free_port, wait_for_port,
# fail).

work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
source tests/integration/lib.sh

# A throwaway redis-server on a free loopback port, stopped at exit; sets redis_port.
start_redis() {
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/redis.log" & pids+=($!)
  wait_for_port "$redis_port"
}

# a / b as a whole percentage.
percent() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 100 * a / b }'; }

# The median of the numbers on standard input, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
