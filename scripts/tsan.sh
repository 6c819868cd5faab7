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
# history_size=7 (the largest): TSan keeps enough history to restore the stack of the earlier
# access, so that a report whose earlier access is TBB's own atomic (a wait_context on the
# caller's stack, reused by the next frame) meets its suppression; with the default, such
# stacks often read "failed to restore" and the report escapes (5 of 15 runs of
# Determinism.SameBytesForEveryChunkSize, against 0 of 15 with 7).
export TSAN_OPTIONS="suppressions=$supp halt_on_error=1 history_size=7"
# A test process per core (TSan finds a race from how the accesses are synchronised, not
# from their timing).
ctest --test-dir build-tsan -L "encoder|decoder" -j"$(nproc)"
