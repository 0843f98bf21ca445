#!/usr/bin/env bash
# The gateway against nginx as a rate-limiting reverse proxy (limit_req), in front of the same
# backend, same run, same wrk settings; then the latency each adds at one connection.
#   backend: nginx `return 200 "ok\n"` (1 worker), keep-alive from both proxies
#   nginx:   proxy_pass with limit_req (per-address zone), upstream keepalive, 2 workers
#   sluice:  sluice_gateway_server (the gateway alone; `sluice serve` runs the same code),
#            a per-client token bucket, 2 threads
# The limits are generous enough that every request is allowed: this measures the cost of
# deciding and forwarding, not of refusing. wrk, the proxies and the backend share the cores.
# This VM's speed drifts by tens of percent within minutes, so the runs are repeated in rounds,
# each round comparing runs seconds apart, and the medians are what to compare with targets.
# Usage: bench/gateway_bench.sh [seconds] [connections] [rounds]   (after building build/ in
# Release; defaults 10 s, 64 connections, 3 rounds)
#   GATEWAY_BIN=path   the gateway program (default build/tests/gateway/sluice_gateway_server)
#   BASELINE_BIN=path  a second gateway build, measured in the same run (before/after a change)
#   PROBE_BIN=path     the interleaved latency probe (default build/bench/sluice_latency_probe)
# The one-connection latencies are measured twice: by wrk, one path after the other (what the
# target reads), and by the probe, all paths interleaved in shuffled order (latency_probe.cc),
# where this VM's stalls hit every path alike: the fair head-to-head of the two proxies.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
connections="${2:-64}"
rounds="${3:-3}"
gateway_bin="${GATEWAY_BIN:-build/tests/gateway/sluice_gateway_server}"
baseline_bin="${BASELINE_BIN:-}"
probe_bin="${PROBE_BIN:-build/bench/sluice_latency_probe}"

source bench/bench_lib.sh

backend_port=$(free_port); nginx_port=$(free_port); sluice_port=$(free_port)
api_port=$(free_port); admin_port=$(free_port); baseline_port=$(free_port)
mkdir -p "$work/backend/tmp" "$work/proxy/tmp"
cat > "$work/backend/nginx.conf" <<CONF
worker_processes 1;
error_log stderr error;
pid nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$backend_port; location / { return 200 "ok\n"; } }
}
CONF
cat > "$work/proxy/nginx.conf" <<CONF
worker_processes 2;
error_log stderr error;
pid nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp;
  proxy_temp_path tmp;
  keepalive_requests 1000000;
  limit_req_zone \$binary_remote_addr zone=perclient:10m rate=1000000r/s;
  upstream backend { server 127.0.0.1:$backend_port; keepalive 64; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      limit_req zone=perclient burst=1000000 nodelay;
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    }
  }
}
CONF
cat > "$work/sluice.yaml" <<CONF
server: { listen: 127.0.0.1:$api_port, admin: 127.0.0.1:$admin_port, threads: 2 }
limits:
  - { name: per-client, key: client, algorithm: token_bucket, rate: 1000000/s, burst: 1000000 }
gateway:
  listen: 127.0.0.1:$sluice_port
  upstreams: { backend: 127.0.0.1:$backend_port }
  routes: [ { path_prefix: /, upstream: backend } ]
CONF

nginx -p "$work/backend" -c "$work/backend/nginx.conf" -g 'daemon off;' > "$work/backend.log" 2>&1 & pids+=($!)
nginx -p "$work/proxy" -c "$work/proxy/nginx.conf" -g 'daemon off;' > "$work/proxy.log" 2>&1 & pids+=($!)
"$gateway_bin" "$work/sluice.yaml" > "$work/sluice.log" 2>&1 & pids+=($!)
wait_for_port "$backend_port"; wait_for_port "$nginx_port"; wait_for_port "$sluice_port"
curl -sf "http://127.0.0.1:$sluice_port/" > /dev/null || fail "the gateway does not forward"
if [ -n "$baseline_bin" ]; then
  sed "s/127.0.0.1:$sluice_port/127.0.0.1:$baseline_port/" "$work/sluice.yaml" > "$work/baseline.yaml"
  "$baseline_bin" "$work/baseline.yaml" > "$work/baseline.log" 2>&1 & pids+=($!)
  wait_for_port "$baseline_port"
  curl -sf "http://127.0.0.1:$baseline_port/" > /dev/null || fail "the baseline does not forward"
fi
curl -sf "http://127.0.0.1:$nginx_port/" > /dev/null || fail "nginx does not forward"

run() {  # name port threads connections → "requests/s p50 p99"
  wrk -t"$3" -c"$4" -d"${seconds}s" --latency "http://127.0.0.1:$2/api/items?id=42" > "$work/$1.txt"
  local rps p50 p99
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/$1.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$work/$1.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/$1.txt")
  echo "$rps $p50 $p99"
}
# wrk prints latencies as 812.00us / 1.23ms / 2.00s; in microseconds:
micros() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else print n * 1000000 }'; }

added() { awk -v a="$(micros "$1")" -v b="$(micros "$2")" 'BEGIN { printf "%.0f", a - b }'; }
: > "$work/throughput.txt"; : > "$work/latency.txt"; : > "$work/probe.txt"; : > "$work/probe_gap.txt"
for round in $(seq "$rounds"); do
  read -r nginx_rps nginx_p50 nginx_p99 <<< "$(run nginx "$nginx_port" 2 "$connections")"
  read -r sluice_rps sluice_p50 sluice_p99 <<< "$(run sluice "$sluice_port" 2 "$connections")"
  row="| $round | $nginx_rps ($nginx_p50 / $nginx_p99) | $sluice_rps ($sluice_p50 / $sluice_p99) | $(percent "$sluice_rps" "$nginx_rps")% |"
  if [ -n "$baseline_bin" ]; then
    read -r base_rps base_p50 base_p99 <<< "$(run baseline "$baseline_port" 2 "$connections")"
    row="$row $base_rps ($base_p50 / $base_p99) | $(percent "$base_rps" "$nginx_rps")% |"
  fi
  echo "$row" >> "$work/throughput.txt"
  echo "$(percent "$sluice_rps" "$nginx_rps")" >> "$work/ratios.txt"

  read -r _ direct_p50 direct_p99 <<< "$(run direct1 "$backend_port" 1 1)"
  read -r _ via_nginx_p50 via_nginx_p99 <<< "$(run nginx1 "$nginx_port" 1 1)"
  read -r _ via_sluice_p50 via_sluice_p99 <<< "$(run sluice1 "$sluice_port" 1 1)"
  row="| $round | $direct_p50 / $direct_p99 | $via_nginx_p50 / $via_nginx_p99 ($(added "$via_nginx_p99" "$direct_p99") µs) | $via_sluice_p50 / $via_sluice_p99 ($(added "$via_sluice_p99" "$direct_p99") µs) |"
  if [ -n "$baseline_bin" ]; then
    read -r _ via_base_p50 via_base_p99 <<< "$(run baseline1 "$baseline_port" 1 1)"
    row="$row $via_base_p50 / $via_base_p99 ($(added "$via_base_p99" "$direct_p99") µs) |"
  fi
  echo "$row" >> "$work/latency.txt"
  echo "$(added "$via_nginx_p99" "$direct_p99") $(added "$via_sluice_p99" "$direct_p99")" >> "$work/added.txt"

  path="api/items?id=42"
  # With a baseline build, it is interleaved too: the before/after of a change, read side by side.
  base_endpoint=()
  [ -n "$baseline_bin" ] && base_endpoint=("baseline=127.0.0.1:$baseline_port/$path")
  "$probe_bin" "$seconds" "direct=127.0.0.1:$backend_port/$path" "nginx=127.0.0.1:$nginx_port/$path" \
    "sluice=127.0.0.1:$sluice_port/$path" "${base_endpoint[@]}" > "$work/probe_round.txt" ||
    fail "the latency probe failed"
  # name requests p50 p99 p99.9 → "p50 / p99 / p99.9"
  at() { awk -v n="$1" '$1 == n { printf "%s / %s / %s", $3, $4, $5 }' "$work/probe_round.txt"; }
  p99_of() { awk -v n="$1" '$1 == n { print $4 }' "$work/probe_round.txt"; }
  base_cell=""
  [ -n "$baseline_bin" ] && base_cell=" $(at baseline) |"
  echo "| $round | $(at direct) | $(at nginx) | $(at sluice) |$base_cell $(awk '{ n = $2 } END { print n }' "$work/probe_round.txt") |" >> "$work/probe.txt"
  awk -v s="$(p99_of sluice)" -v n="$(p99_of nginx)" -v d="$(p99_of direct)" \
    'BEGIN { printf "%.0f %.0f %.0f\n", s - n, n - d, s - d }' >> "$work/probe_gap.txt"
done

baseline_head=""; baseline_rule=""
[ -n "$baseline_bin" ] && baseline_head=" baseline build | baseline / nginx |" && baseline_rule="---|---|"
echo "| round | nginx proxy_pass + limit_req, requests/s (p50 / p99) | sluice gateway | sluice / nginx |$baseline_head"
echo "|---|---|---|---|$baseline_rule"
cat "$work/throughput.txt"
echo
echo "wrk -t2 -c$connections -d${seconds}s, keep-alive; median sluice / nginx over $rounds rounds: $(median < "$work/ratios.txt")% (target ≥ 100%)"
echo
[ -n "$baseline_bin" ] && baseline_head=" through the baseline |" && baseline_rule="---|"
echo "| round | backend direct, p50 / p99 | through nginx limit_req (added at p99) | through the sluice gateway (added at p99) |$baseline_head"
echo "|---|---|---|---|$baseline_rule"
cat "$work/latency.txt"
echo
echo "one connection (wrk -t1 -c1 -d${seconds}s); median added at p99 over $rounds rounds: nginx $(cut -d' ' -f1 "$work/added.txt" | median) µs, sluice $(cut -d' ' -f2 "$work/added.txt" | median) µs (target ≤ 100 µs)"
echo
[ -n "$baseline_bin" ] && baseline_head=" through the baseline |" && baseline_rule="---|"
echo "| round | interleaved, µs p50 / p99 / p99.9: backend direct | through nginx limit_req | through the sluice gateway |$baseline_head requests each |"
echo "|---|---|---|---|$baseline_rule---|"
cat "$work/probe.txt"
echo
echo "interleaved probe, ${seconds} s a round, shuffled order; median over $rounds rounds of p99 sluice − nginx: $(cut -d' ' -f1 "$work/probe_gap.txt" | median) µs; added over direct at p99: nginx $(cut -d' ' -f2 "$work/probe_gap.txt" | median) µs, sluice $(cut -d' ' -f3 "$work/probe_gap.txt" | median) µs"
