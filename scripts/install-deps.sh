#!/usr/bin/env bash
# Installs df11's build and test dependencies from Debian's packages (needs root or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config \
  nlohmann-json3-dev libtbb-dev libcli11-dev libzstd-dev zstd libcurl4-openssl-dev \
  libssl-dev libxxhash-dev libgtest-dev clang-14 clang-format-14 libclang-rt-14-dev time \
  python3 python3-venv >/dev/null
