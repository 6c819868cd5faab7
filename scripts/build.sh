#!/usr/bin/env bash
# Configures and builds df11 into ./build (Release; CUDA decoder included when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDF11_WERROR=ON "$@" >/dev/null
cmake --build build -j"$jobs"
