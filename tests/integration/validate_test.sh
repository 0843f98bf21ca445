#!/usr/bin/env bash
# `sluice validate` refuses what `sluice serve` refuses, with file:line: here a broken lyft file in
# the Envoy door's config_dir (serve exits 2 on it); and passes the shipped examples.
# Usage: validate_test.sh SLUICE_BINARY EXAMPLES_DIR ["DOOR ..."]   (the optional doors built in)
set -euo pipefail
sluice_bin="$1"
examples="$2"
doors=" ${3:-} "
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'rm -rf "$work"' EXIT

for config in "$examples"/sluice.yaml "$examples"/*/sluice.yaml; do
  [ -f "$config" ] || continue
  "$sluice_bin" validate "$config" > /dev/null 2> "$work/err" || fail "$config does not validate: $(cat "$work/err")"
done
# The file as serve takes it, too.
"$sluice_bin" validate --config "$examples/sluice.yaml" > /dev/null 2> "$work/err" ||
  fail "validate --config fails: $(cat "$work/err")"

mkdir -p "$work/lyft"
printf 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 5 }\n' > "$work/lyft/d.yaml"
printf 'limits:\n  - { name: a, key: ip, rate: 1/s }\nenvoy_rls:\n  config_dir: lyft\n' > "$work/sluice.yaml"
if "$sluice_bin" validate "$work/sluice.yaml" > "$work/out" 2> "$work/err"; then
  fail "a broken lyft file validated: $(cat "$work/out")"
fi
grep -q "lyft/d.yaml:4:25: unit: \"fortnight\"" "$work/err" || fail "no file:line for the lyft error: $(cat "$work/err")"

printf 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n' > "$work/lyft/d.yaml"
"$sluice_bin" validate "$work/sluice.yaml" > "$work/out" 2> "$work/err" || fail "the mended lyft file fails: $(cat "$work/err")"
# A mapping where the list of JWT keys goes is one error, at its line: the secrets' redaction
# iterated it as a list and added yaml-cpp's "invalid node" with no line.
printf 'identity:\n  jwt:\n    keys: { algorithm: HS256, secret: 0123456789abcdef0123456789abcdef }\nlimits:\n  - { name: a, key: ip, rate: 1/s }\n' > "$work/keys_map.yaml"
"$sluice_bin" validate "$work/keys_map.yaml" > "$work/out" 2> "$work/err" && fail "a map of JWT keys validated"
grep -q "keys_map.yaml:3:5: identity.jwt.keys must list at least one key" "$work/err" ||
  fail "the JWT keys' error is not at its line: $(cat "$work/err")"
grep -q "^1 error(s)$" "$work/err" || fail "more than the one error: $(cat "$work/err")"
# Every section's errors in one run: the policy's did not let the gateway's be seen.
printf 'limits:\n  - { name: a, key: ip, rate: 1/fortnight }\ngateway:\n  listen: nowhere\n' > "$work/both.yaml"
if "$sluice_bin" validate "$work/both.yaml" > "$work/out" 2> "$work/err"; then
  fail "a broken file validated: $(cat "$work/out")"
fi
grep -q "fortnight" "$work/err" || fail "the policy's error is missing: $(cat "$work/err")"
if [[ "$doors" == *" gateway "* ]]; then
  grep -q "gateway.listen" "$work/err" || fail "the gateway's error is missing: $(cat "$work/err")"
  # Each of the gateway's errors counts: the policy's one and several of the gateway's said
  # "2 error(s)".
  listed=$(grep -vc ' error(s)$' "$work/err")
  [ "$listed" -ge 3 ] || fail "not every error is listed: $(cat "$work/err")"
  grep -q "^$listed error(s)$" "$work/err" || fail "$listed errors listed, counted otherwise: $(cat "$work/err")"
fi
# Two doors on one port: serve could not bind the second, so validate says so.
if [[ "$doors" == *" gateway "* ]]; then
  printf 'server: { listen: 127.0.0.1:18080, admin: 127.0.0.1:18081 }\nlimits:\n  - { name: a, key: ip, rate: 1/s }\ngateway: { listen: 127.0.0.1:18081, upstreams: { app: 127.0.0.1:9 }, routes: [ { path_prefix: /, upstream: app } ] }\n' > "$work/clash.yaml"
  "$sluice_bin" validate "$work/clash.yaml" > "$work/out" 2> "$work/err" && fail "two doors on one port validated"
  grep -q "clash.yaml:4:12: gateway.listen and server.admin name the same port" "$work/err" ||
    fail "the port clash was not named: $(cat "$work/err")"
  # serve refuses it alike, before it opens any listener.
  timeout 20 "$sluice_bin" serve --config "$work/clash.yaml" > "$work/out" 2> "$work/err" &&
    fail "serve started with two doors on one port"
  grep -q "clash.yaml:4:12: gateway.listen and server.admin name the same port" "$work/err" ||
    fail "serve did not name the port clash: $(cat "$work/err")"
fi
# A file the user may not read says why. Only an unprivileged user is refused, so as root the
# check runs as nobody, when nobody can reach the file (else the path's lookup, not the file's
# open, would be what fails) and cannot read it.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
unreadable=""
printf 'limits:\n  - { name: a, key: ip, rate: 1/s }\n' > "$work/secret.yaml"
chmod 600 "$work/secret.yaml"
chmod 755 "$work"
if [ "$(id -u)" -ne 0 ]; then
  chmod 000 "$work/secret.yaml"
  "$sluice_bin" validate "$work/secret.yaml" > "$work/out" 2> "$work/err" && fail "an unreadable file validated"
  unreadable=checked
elif command -v setpriv > /dev/null && as_nobody test -e "$work/secret.yaml" 2> /dev/null &&
    ! as_nobody test -r "$work/secret.yaml"; then
  as_nobody "$sluice_bin" validate "$work/secret.yaml" > "$work/out" 2> "$work/err" &&
    fail "an unreadable file validated"
  unreadable=checked
else
  echo "SKIPPED: the unreadable-file check (root without setpriv, or nobody cannot reach $work)" >&2
fi
if [ -n "$unreadable" ]; then
  grep -q "secret.yaml: cannot read the file: Permission denied" "$work/err" ||
    fail "the reason an unreadable file fails is missing: $(cat "$work/err")"
fi
# Control characters in a config value quoted by an error are escaped: a newline forged a second
# error line ("2 error(s)" for one), and an escape sequence reached the terminal.
printf 'limits:\n  - { name: a, key: ip, rate: 1/s, algorithm: "\\e[31mgcra\\nforged.yaml:1:1: forged" }\n' > "$work/escapes.yaml"
"$sluice_bin" validate "$work/escapes.yaml" > "$work/out" 2> "$work/err" && fail "a bad algorithm validated"
grep -q 'algorithm "\\x1B\[31mgcra\\x0Aforged.yaml:1:1: forged" is unknown' "$work/err" ||
  fail "the control characters were not escaped: $(cat -A "$work/err")"
grep -q "^1 error(s)$" "$work/err" || fail "one error printed as more: $(cat -A "$work/err")"
! grep -q $'\e' "$work/err" || fail "an escape character reached the output"

# A file whose YAML takes more memory than the process may have (the parser holds a few hundred
# bytes per value: 1.5 million one-letter values) is refused with a message and exit code 2, as
# any refused file; it was an uncaught std::bad_alloc and an abort (134). Under a 1.5 GB address
# space, which a sanitizer build cannot start in: there the check is skipped.
out_of_memory=""
{ printf 'limits:\n  - { name: a, key: ip, rate: 1/s }\nx: [a'; head -c 3000000 /dev/zero | tr '\0' ',' | sed 's/,/,a/g'; printf ']\n'; } > "$work/dense.yaml"
if (ulimit -v 1500000; "$sluice_bin" validate "$work/secret.yaml") > /dev/null 2>&1; then
  status=0
  (ulimit -v 1500000; exec "$sluice_bin" validate "$work/dense.yaml") > "$work/out" 2> "$work/err" || status=$?
  [ "$status" = 2 ] || fail "a file too big for memory gave exit code $status: $(head -c 300 "$work/err")"
  grep -q "dense.yaml: not enough memory to read it" "$work/err" ||
    fail "a file too big for memory did not say so: $(head -c 300 "$work/err")"
  out_of_memory=checked
else
  echo "SKIPPED: the out-of-memory check (the binary does not start in a 1.5 GB address space)" >&2
fi
echo "validate: the examples pass; a broken lyft file is refused with file:line, as serve refuses it; every section's errors are listed; two doors on one port are refused by both; $([ -n "$unreadable" ] && echo "an unreadable file says why" || echo "the unreadable-file check SKIPPED"); $([ -n "$out_of_memory" ] && echo "a file too big for memory is refused" || echo "the out-of-memory check SKIPPED")"
echo "1 passed, 0 failed"
