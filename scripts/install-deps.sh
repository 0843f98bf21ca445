#!/usr/bin/env bash
# Installs everything Sluice needs to build, test and run, from Debian 12's packages.
# Idempotent: when every package is already there it changes nothing and asks no mirror.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git curl ca-certificates
  libboost1.81-dev libboost-json1.81-dev
  libyaml-cpp-dev libjwt-dev libssl-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libhiredis-dev redis-server redis-tools
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3 python3-grpcio python3-grpc-tools
  nginx-light wrk nodejs
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
# Packages such as nginx start their service on install (on 0.0.0.0:80); the tests start their
# own on loopback ports, so keep package daemons from starting while we install.
made_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee /usr/sbin/policy-rc.d > /dev/null
  "${sudo_cmd[@]}" chmod +x /usr/sbin/policy-rc.d
  made_policy=yes
fi
status=0
{ "${sudo_cmd[@]}" apt-get update -q &&
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; } || status=$?
if [ -n "$made_policy" ]; then "${sudo_cmd[@]}" rm -f /usr/sbin/policy-rc.d; fi
exit "$status"
