#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is needed, builds the
# optimized tree and the sanitizer tree, and runs every test in both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh release
scripts/build.sh asan

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "== tests (release) =="
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 300
echo "== tests (ASan + UBSan) =="
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 600
