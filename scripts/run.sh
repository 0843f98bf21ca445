#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs what is needed, builds, and starts `sluice serve` on
# the in-memory store with examples/sluice.yaml (API on 127.0.0.1:8080, admin on :9090).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh release
exec build/src/sluice serve --config examples/sluice.yaml
