#!/usr/bin/env bash
# Decision API throughput and latency against nginx serving a fixed `return 200`, same machine,
# same run, same wrk settings (keep-alive, 64 connections, 2 threads; wrk and the server share the
# cores). Usage: bench/http_bench.sh [seconds]   (after scripts/build.sh release)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
sluice_bin=build/src/sluice

source bench/bench_lib.sh

nginx_port=$(free_port); sluice_port=$(free_port); admin_port=$(free_port)
mkdir -p "$work/tmp"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
error_log stderr error;
pid nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp;
  server { listen 127.0.0.1:$nginx_port; location / { return 200 "ok\n"; } }
}
CONF
cat > "$work/sluice.yaml" <<CONF
server: { listen: 127.0.0.1:$sluice_port, admin: 127.0.0.1:$admin_port, threads: 2 }
limits:
  - { name: per-client, key: client, algorithm: token_bucket, rate: 100/s, burst: 100 }
CONF
# 10,000 clients, one decision per request, each a POST with a JSON body.
cat > "$work/check.lua" <<'LUA'
counter = 0
request = function()
  counter = counter + 1
  local body = '{"limit":"per-client","key":"client-' .. (counter % 10000) .. '"}'
  return wrk.format("POST", "/v1/check", {["Content-Type"] = "application/json"}, body)
end
LUA

nginx -p "$work" -c "$work/nginx.conf" -g 'daemon off;' > "$work/nginx.log" 2>&1 & pids+=($!)
"$sluice_bin" serve --config "$work/sluice.yaml" > "$work/sluice.log" 2>&1 & pids+=($!)
wait_for_port "$nginx_port"; wait_for_port "$sluice_port"

run() {  # name port → "requests/s p99"
  wrk -t2 -c64 -d"${seconds}s" --latency -s "$work/check.lua" "http://127.0.0.1:$2" > "$work/$1.txt"
  local rps p99
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/$1.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/$1.txt")
  echo "$rps $p99"
}
read -r nginx_rps nginx_p99 <<< "$(run nginx "$nginx_port")"
read -r sluice_rps sluice_p99 <<< "$(run sluice "$sluice_port")"
ratio=$(awk -v a="$sluice_rps" -v b="$nginx_rps" 'BEGIN { printf "%.0f%%", 100 * a / b }')
echo "| server | requests/s | p99 latency |"
echo "|---|---|---|"
echo "| nginx, return 200 | $nginx_rps | $nginx_p99 |"
echo "| sluice, POST /v1/check | $sluice_rps | $sluice_p99 |"
echo "sluice / nginx: $ratio (wrk -t2 -c64 -d${seconds}s, keep-alive)"
