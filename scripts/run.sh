#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs what is needed, builds, and runs Sluice on its
# in-memory store. Until the HTTP service lands (issue 3), this runs the embedded-API example.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh release
exec build/examples/sluice_embedded_example
