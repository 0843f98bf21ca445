#!/usr/bin/env bash
# `sluice validate` refuses what `sluice serve` refuses, with file:line: here a broken lyft file in
# the Envoy door's config_dir (serve exits 2 on it); and passes the shipped examples.
# Usage: validate_test.sh SLUICE_BINARY EXAMPLES_DIR
set -euo pipefail
sluice_bin="$1"
examples="$2"
work="$(mktemp -d)"
source "$(dirname "$0")/lib.sh"
trap 'rm -rf "$work"' EXIT

for config in "$examples"/sluice.yaml "$examples"/*/sluice.yaml; do
  [ -f "$config" ] || continue
  "$sluice_bin" validate "$config" > /dev/null 2> "$work/err" || fail "$config does not validate: $(cat "$work/err")"
done

mkdir -p "$work/lyft"
printf 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 5 }\n' > "$work/lyft/d.yaml"
printf 'limits:\n  - { name: a, key: ip, rate: 1/s }\nenvoy_rls:\n  config_dir: lyft\n' > "$work/sluice.yaml"
if "$sluice_bin" validate "$work/sluice.yaml" > "$work/out" 2> "$work/err"; then
  fail "a broken lyft file validated: $(cat "$work/out")"
fi
grep -q "lyft/d.yaml:4:25: unit: \"fortnight\"" "$work/err" || fail "no file:line for the lyft error: $(cat "$work/err")"

printf 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n' > "$work/lyft/d.yaml"
"$sluice_bin" validate "$work/sluice.yaml" > "$work/out" 2> "$work/err" || fail "the mended lyft file fails: $(cat "$work/err")"
echo "validate: the examples pass; a broken lyft file is refused with file:line, as serve refuses it"
echo "1 passed, 0 failed"
