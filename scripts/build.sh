#!/usr/bin/env bash
# Builds Sluice. Usage: scripts/build.sh [release|asan]   (default: release)
#   release  build/       optimized, with tests, benchmarks and examples
#   asan     build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer, tests only
set -euo pipefail
cd "$(dirname "$0")/.."

flavor="${1:-release}"
jobs="$(nproc)"
case "$flavor" in
  release)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
    cmake --build build -j "$jobs"
    ;;
  asan)
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON \
      -DSLUICE_BUILD_BENCH=OFF
    cmake --build build-asan -j "$jobs"
    ;;
  *)
    echo "usage: $0 [release|asan]" >&2
    exit 2
    ;;
esac
