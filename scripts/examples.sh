#!/usr/bin/env bash
# Installs build/ into a temporary prefix and builds the embedding examples out of tree
# against it, the way an engine developer would: c_decode with find_package(df11) (CMake)
# against the shared library with nothing but a C compiler (no C++ compiler, none of the
# static library's dependencies findable) and against df11::df11_static, with pkg-config
# (shared), and statically against libdf11.a by hand; cuda_engine when the package was built
# with CUDA. Then runs the four c_decode builds on MODEL_DIR (a DF11 folder) and checks that
# they agree and decoded every tensor. When the package has the tools library, c_compress is
# built with find_package(df11) (df11::tools) and with pkg-config (df11-tools), both write a
# DF11 folder from memory, the two must be identical, and c_decode decodes it.
#   scripts/examples.sh MODEL_DIR [BUILD_DIR (default build)]
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1
prefix=$(mktemp -d)
out=$(mktemp -d)
trap 'rm -rf "$prefix" "$out"' EXIT

cmake --install "${2:-build}" --prefix "$prefix" >/dev/null
pc_dir=$(dirname "$(find "$prefix" -name df11.pc)")
lib_dir=$(dirname "$pc_dir")

# The shared library with a C compiler and CMake alone: every package the static and C++
# targets need is made unfindable, and there is no C++ compiler.
no_deps=()
for pkg in TBB nlohmann_json OpenSSL PkgConfig CUDAToolkit Threads; do
  no_deps+=("-DCMAKE_DISABLE_FIND_PACKAGE_$pkg=ON")
done
cmake -S examples/c_decode -B "$out/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER=/nonexistent/c++ --no-warn-unused-cli "${no_deps[@]}" >/dev/null
cmake --build "$out/cmake" >/dev/null
# The static library through CMake (df11::df11_static: C++ runtime, oneTBB, ..., and the
# CUDA runtime on CUDA builds, from the package's own link interface).
cmake -S examples/c_decode -B "$out/cmake_static" -DCMAKE_PREFIX_PATH="$prefix" \
  -DC_DECODE_STATIC=ON >/dev/null
cmake --build "$out/cmake_static" >/dev/null
export PKG_CONFIG_PATH=$pc_dir
cc -std=c99 -Wall -Wextra -pedantic -Werror examples/c_decode/c_decode.c -o "$out/c_decode_pc" \
  $(pkg-config --cflags --libs df11) -Wl,-rpath,"$lib_dir"
cc -std=c99 -Wall -Wextra -pedantic -Werror examples/c_decode/c_decode.c -o "$out/c_decode_static" \
  $(pkg-config --cflags df11) "$lib_dir/libdf11.a" \
  $(pkg-config --static --libs-only-L --libs-only-l df11 | sed 's/-ldf11 //')
if [ -f "$prefix/include/df11/cuda_decoder.h" ]; then
  cmake -S examples/cuda_engine -B "$out/cuda_engine" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$out/cuda_engine" >/dev/null
  # libdf11.a's kernels need the CUDA runtime, which df11::df11_static's interface brings.
  cmake -S examples/cuda_engine -B "$out/cuda_engine_static" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCUDA_ENGINE_STATIC=ON >/dev/null
  cmake --build "$out/cuda_engine_static" >/dev/null
  echo "cuda_engine built against the installed package (shared and static)"
fi

"$out/cmake/c_decode" "$model" >"$out/cmake.txt"
"$out/cmake_static/c_decode" "$model" >"$out/cmake_static.txt"
"$out/c_decode_pc" "$model" >"$out/pc.txt"
"$out/c_decode_static" "$model" >"$out/static.txt"
cmp "$out/cmake.txt" "$out/cmake_static.txt"
cmp "$out/cmake.txt" "$out/pc.txt"
cmp "$out/cmake.txt" "$out/static.txt"
tensors=$(head -n 1 "$out/cmake.txt" | sed -E 's/.*: ([0-9]+) tensors.*/\1/')
lines=$(( $(wc -l <"$out/cmake.txt") - 1 ))
if [ "$tensors" -eq 0 ] || [ "$tensors" -ne "$lines" ]; then
  echo "c_decode: $lines checksums for $tensors tensors" >&2
  exit 1
fi
head -n 3 "$out/cmake.txt"
echo "c_decode (CMake shared with a C compiler alone, CMake static, pkg-config shared and" \
  "static): $tensors tensors decoded, the four agree"

if [ -f "$prefix/include/df11/df11_tools.h" ]; then
  cmake -S examples/c_compress -B "$out/c_compress" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$out/c_compress" >/dev/null
  cc -std=c99 -Wall -Wextra -pedantic -Werror examples/c_compress/c_compress.c \
    -o "$out/c_compress_pc" $(pkg-config --cflags --libs df11-tools) -Wl,-rpath,"$lib_dir"
  "$out/c_compress/c_compress" "$out/compressed_cmake"
  "$out/c_compress_pc" "$out/compressed_pc" >/dev/null
  diff -r "$out/compressed_cmake" "$out/compressed_pc"
  "$out/cmake/c_decode" "$out/compressed_cmake" >"$out/compressed.txt"
  echo "c_compress (CMake, pkg-config): the same folder from memory;" \
    "c_decode: $(head -n 1 "$out/compressed.txt")"
fi
