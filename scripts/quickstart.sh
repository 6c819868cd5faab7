#!/usr/bin/env bash
# Fresh machine -> working df11: installs dependencies, builds, generates the built-in example
# model (a Llama-shaped BF16 checkpoint, made locally, no network), compresses it to DF11,
# verifies it bit for bit against the original, and restores the original files.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=build/cli/df11
rm -rf example
build/tools/df11-mkmodel example/llama-bf16 --seed 1
"$bin" inspect example/llama-bf16 --baseline zstd
"$bin" compress example/llama-bf16 -o example/llama-df11
"$bin" inspect example/llama-df11
"$bin" verify example/llama-df11 --against example/llama-bf16
"$bin" decompress example/llama-df11 -o example/llama-restored
(cd example/llama-bf16 && find . -type f -exec sha256sum {} + | sort -k2) > example/original.sha256
(cd example/llama-restored && find . -type f -exec sha256sum {} + | sort -k2) > example/restored.sha256
diff example/original.sha256 example/restored.sha256
echo "quickstart: restored files are byte-identical to the original ($(wc -l < example/original.sha256) files)"
