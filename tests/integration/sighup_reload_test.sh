#!/usr/bin/env bash
# SIGHUP re-reads the configuration: a good file takes effect, an edit to a restart-only setting is
# logged as waiting for a restart, a broken file is refused with its errors logged and the old
# policy keeps serving. Bounded: every wait has a limit.
# Usage: sighup_reload_test.sh SLUICE_BINARY ["DOOR ..."]   (the optional doors built in:
# gateway, envoy_rls; a section for one added by a reload is reported as opening at restart)
set -euo pipefail
sluice_bin="$1"
read -r -a doors <<< "${2:-}"
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

# An edit to a setting read only at start is not applied; the reload logs it as waiting for a
# restart, and takes in the rest.
# So does a section added for a door, which opens at start only.
printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0, threads: 1 }\nlimits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 9/min }\n' > "$work/sluice.yaml"
for door in "${doors[@]}"; do
  case "$door" in
    gateway) echo 'gateway: { listen: 127.0.0.1:0, upstreams: { app: 127.0.0.1:9 }, routes: [ { path_prefix: /, upstream: app } ] }' ;;
    envoy_rls) mkdir -p "$work/lyft"; echo "envoy_rls: { listen: 127.0.0.1:0, config_dir: $work/lyft }" ;;
    *) fail "unknown door $door" ;;
  esac >> "$work/sluice.yaml"
done
kill -HUP "$sluice_pid"
for _ in $(seq 1 100); do seen=$(limit); [ "$seen" = 9 ] && break; sleep 0.05; done
[ "$seen" = 9 ] || fail "after the second SIGHUP the limit is '$seen', not 9"
# The policy is in force before the reload logs its warnings: poll the log, bounded.
logged() { for _ in $(seq 1 100); do grep -q "$1" "$work/sluice.err" && return 0; sleep 0.05; done; return 1; }
logged "server.threads changed from auto to 1; it takes effect at restart" \
  || fail "the restart-only edit was not reported: $(cat "$work/sluice.err")"
for door in "${doors[@]}"; do
  logged "$door: the section was added; the door opens at restart" \
    || fail "the added $door section was not reported: $(cat "$work/sluice.err")"
done

write_config 7/fortnight
kill -HUP "$sluice_pid"
for _ in $(seq 1 100); do grep -q "reload refused" "$work/sluice.err" && break; sleep 0.05; done
grep -q "reload refused.*fortnight" "$work/sluice.err" || fail "the broken reload was not reported: $(cat "$work/sluice.err")"
grep -q "sluice.yaml:3:" "$work/sluice.err" || fail "the error has no file:line: $(cat "$work/sluice.err")"
[ "$(limit)" = 9 ] || fail "the old policy did not keep serving"

# A file that is not YAML at all is refused, and says nothing of door sections it does not have.
added_before=$(grep -c "the section was added" "$work/sluice.err" || true)
printf 'limits: [\n' > "$work/sluice.yaml"
kill -HUP "$sluice_pid"
for _ in $(seq 1 100); do [ "$(grep -c "reload refused" "$work/sluice.err")" -ge 2 ] && break; sleep 0.05; done
[ "$(grep -c "reload refused" "$work/sluice.err")" -ge 2 ] || fail "the unreadable file was not refused"
[ "$(grep -c "the section was added" "$work/sluice.err" || true)" = "$added_before" ] ||
  fail "a file that is not YAML was taken for an added door section: $(tail -3 "$work/sluice.err")"
[ "$(limit)" = 9 ] || fail "the old policy did not keep serving after the unreadable file"

# A door section added with errors (which would stop the next start) refuses the reload, limits
# and all. So does an Envoy section whose lyft files would not load.
for door in "${doors[@]}"; do
  printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 9/min }\n%s: { colour: red }\n' "$door" > "$work/sluice.yaml"
  kill -HUP "$sluice_pid"
  logged "$door: the section was added with errors" ||
    fail "the broken $door section was not reported: $(tail -3 "$work/sluice.err")"
done
if [[ " ${doors[*]} " == *" envoy_rls "* ]]; then
  printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 5/min }\nenvoy_rls: { listen: 127.0.0.1:0, config_dir: %s/missing }\n' "$work" > "$work/sluice.yaml"
  kill -HUP "$sluice_pid"
  logged "envoy_rls: the section was added with errors.*" && logged "missing" ||
    fail "an envoy_rls section whose lyft files cannot load was not refused: $(tail -3 "$work/sluice.err")"
  [ "$(limit)" = 9 ] || fail "a refused reload changed the limits"
fi
# A SIGHUP while the process is still starting (loading a file of thousands of limits: about a
# second) is a reload asked for, not the end of the process, which it was by default.
stop_sluice
{
  printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n'
  for i in $(seq 1 5000); do printf '  - { name: l%d, key: ip, match: { path_prefix: /p%d }, rate: 5/min }\n' "$i" "$i"; done
} > "$work/big.yaml"
"$sluice_bin" serve --config "$work/big.yaml" > "$work/sluice.out" 2> "$work/sluice.err" &
sluice_pid=$!
# Sent once the process holds SIGHUP (bit 1 of SigBlk), not after a guessed delay: before that,
# exec and the libraries' start-up would still take the default action on any build.
for _ in $(seq 1 400); do
  blocked=$(sed -n 's/^SigBlk:\t*//p' "/proc/$sluice_pid/status" 2>/dev/null || true)
  [ -n "$blocked" ] && (( 16#$blocked & 1 )) && break
  grep -q "listening" "$work/sluice.out" && break
  sleep 0.005
done
kill -HUP "$sluice_pid"
for _ in $(seq 1 400); do grep -q "listening" "$work/sluice.out" && break; kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$sluice_pid" 2>/dev/null || fail "a SIGHUP during start ended the process: $(wait "$sluice_pid"; echo "exit $?")"
grep -q "listening" "$work/sluice.out" || fail "sluice did not start: $(cat "$work/sluice.err")"
logged "reloaded" || fail "the SIGHUP sent during start was not taken as a reload: $(cat "$work/sluice.err")"

# A reload whose YAML takes more memory than the process may have (1.5 million one-letter values,
# under a 1.5 GB address space) is refused and the old config keeps serving; the uncaught
# std::bad_alloc ended the process. A sanitizer build cannot start in that space: skipped there.
stop_sluice
write_config 3/min
out_of_memory=""
if (ulimit -v 1500000; "$sluice_bin" validate "$work/sluice.yaml") > /dev/null 2>&1; then
  (ulimit -v 1500000; exec "$sluice_bin" serve --config "$work/sluice.yaml") > "$work/sluice.out" 2> "$work/sluice.err" &
  sluice_pid=$!
  for _ in $(seq 1 200); do grep -q "listening" "$work/sluice.out" && break; sleep 0.05; done
  sluice_port=$(sed -n 's/.*api=127.0.0.1:\([0-9]*\).*/\1/p' "$work/sluice.out")
  [ -n "$sluice_port" ] || fail "sluice did not start under 1.5 GB: $(cat "$work/sluice.err")"
  { printf 'server: { listen: 127.0.0.1:0, admin: 127.0.0.1:0 }\nlimits:\n  - { name: per-ip, key: ip, rate: 9/min }\nx: [a'
    head -c 3000000 /dev/zero | tr '\0' ',' | sed 's/,/,a/g'; printf ']\n'; } > "$work/sluice.yaml"
  kill -HUP "$sluice_pid"
  # Parsing until memory runs out takes seconds: a longer bounded wait (20 s).
  for _ in $(seq 1 4); do
    logged "reload refused, keeping the old config: .*sluice.yaml: not enough memory" && break
  done
  logged "reload refused, keeping the old config: .*sluice.yaml: not enough memory to read it" ||
    fail "a reload too big for memory was not refused: $(tail -c 300 "$work/sluice.err")"
  kill -0 "$sluice_pid" 2>/dev/null || fail "a reload too big for memory ended the process"
  [ "$(limit)" = 3 ] || fail "after the refused reload the limit is '$(limit)', not 3"
  out_of_memory=checked
else
  echo "SKIPPED: the out-of-memory reload (the binary does not start in a 1.5 GB address space)" >&2
fi
echo "SIGHUP reload: good config applied, a restart-only edit reported, broken config refused with file:line, a SIGHUP during start reloads; $([ -n "$out_of_memory" ] && echo "a reload too big for memory is refused" || echo "the out-of-memory reload SKIPPED")"
echo "1 passed, 0 failed"
