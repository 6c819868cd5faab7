#!/usr/bin/env bash
# Fails (exit 1) when a C, C++ or CUDA source differs from .clang-format, naming each file.
# Pinned to Debian bookworm's clang-format 14 (scripts/install-deps.sh), so that every machine
# formats alike; --fix rewrites the files in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format-14}
mode=(--dry-run --Werror)
if [ "${1:-}" = --fix ]; then mode=(-i); fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.inc' \
                     ':!:fuzz/corpus/**')
bad=()
for f in "${files[@]}"; do
  if ! "$fmt" "${mode[@]}" "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted (scripts/check-format.sh --fix): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format ($("$fmt" --version | sed 's/.*version //'))"
