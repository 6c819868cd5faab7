#!/bin/bash
# Builds compact_bench and df11_cuda_tests once per variant of the warpgroup GEMM's copies, for
# an A/B on one GPU (decoder/cuda/EXEC_KERNEL.md, v25): exec_gemm.cu compiled with each
# variant's macros into a copy of BUILD's libdf11_cuda.a, then both programs relinked with it.
#
#   bench/exec_wgb_variants.sh BUILD OUT [NAME=MACROS ...]
#
# BUILD: a configured build directory whose df11_cuda, compact_bench and df11_cuda_tests are
# built (sm_90a). OUT/NAME/{compact_bench,df11_cuda_tests} per variant, stripped. Without
# NAME=MACROS: the per-lane copies (A), bulk copies one stage ahead (B2), W two stages ahead
# (B3), X by a tensor map (T2: the default, T3) and T3 from 33 rows (T3w). Chunks of X above
# 128 rows: DF11_EXEC_WG_MAX=256 (one chunk of 256 rows at 129-256, one block a
# multiprocessor), DF11_EXEC_WG_UPTO=256 (two chunks of at most 128 rows at 129-256).
set -eu
build=$(cd "${1:?usage: exec_wgb_variants.sh BUILD OUT [NAME=MACROS ...]}" && pwd)
out=${2:?usage: exec_wgb_variants.sh BUILD OUT [NAME=MACROS ...]}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)/decoder/cuda/src/exec_gemm.cu
if [ $# -eq 0 ]; then
  set -- "A=-DDF11_EXEC_WG_BULK=0" "B2=-DDF11_EXEC_WGB_TMAP=0" \
    "B3=-DDF11_EXEC_WGB_TMAP=0 -DDF11_EXEC_WGB_WSLOTS=3" "T2=" "T3=-DDF11_EXEC_WGB_WSLOTS=3" \
    "T3w=-DDF11_EXEC_WGB_WSLOTS=3 -DDF11_EXEC_WG_FROM=33"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The object's compile line as CMake wrote it, without its dependency file and output.
flags=$(sed -n 's/^CUDA_FLAGS = //p' "$build/decoder/cuda/CMakeFiles/df11_cuda.dir/flags.make")
defines=$(sed -n 's/^CUDA_DEFINES = //p' "$build/decoder/cuda/CMakeFiles/df11_cuda.dir/flags.make")
for spec in "$@"; do
  name=${spec%%=*}
  macros=${spec#*=}
  dir=$out/$name
  mkdir -p "$dir"
  echo "== $name: ${macros:-(defaults)}"
  # shellcheck disable=SC2086
  (cd "$build/decoder/cuda" && /usr/local/cuda/bin/nvcc $defines \
    --options-file CMakeFiles/df11_cuda.dir/includes_CUDA.rsp $flags $macros \
    -x cu -c "$src" -o "$dir/exec_gemm.cu.o")
  cp "$build/decoder/cuda/libdf11_cuda.a" "$dir/"
  (cd "$dir" && ar r libdf11_cuda.a exec_gemm.cu.o)
  (cd "$build/bench" && sed "s#../decoder/cuda/libdf11_cuda.a#$dir/libdf11_cuda.a#; \
    s#-o compact_bench#-o $dir/compact_bench#" CMakeFiles/compact_bench.dir/link.txt | bash)
  (cd "$build/tests" && sed "s#../decoder/cuda/libdf11_cuda.a#$dir/libdf11_cuda.a#; \
    s#-o df11_cuda_tests#-o $dir/df11_cuda_tests#" CMakeFiles/df11_cuda_tests.dir/link.txt | bash)
  strip "$dir/compact_bench" "$dir/df11_cuda_tests"
  rm -f "$dir/exec_gemm.cu.o" "$dir/libdf11_cuda.a"
done
