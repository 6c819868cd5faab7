#!/usr/bin/env bash
# Runs the parallel encoder and decoder suites under ThreadSanitizer.
# The system oneTBB is not instrumented, so TBB's own synchronisation is invisible to TSan:
# df11 adds explicit fork/join edges around its parallel loops, and the suppression files
# below silence reports from inside TBB only (never from df11 code).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDF11_CUDA=OFF \
  -DDF11_SANITIZE=thread >/dev/null
cmake --build build-tsan -j"$(nproc)" --target df11_encoder_tests df11_decoder_tests
supp=$(mktemp)
trap 'rm -f "$supp"' EXIT
cat tests/encoder/tsan.supp tests/decoder/tsan.supp > "$supp"
export TSAN_OPTIONS="suppressions=$supp halt_on_error=1"
ctest --test-dir build-tsan -L "encoder|decoder" -j1
