#!/bin/bash
# vLLM's wheels, as ../shared/vllm/prepare.sh leaves them in .vllm (part0 ... partN, each holding
# piece_*, the last also wheels.sha256 and device-install.sh), split again into parts that fit
# one device call beside the checkout, the last part also carrying FILES (the folder
# device_env.sh takes: wheel/, lib/, bin/df11) as run.tar.xz, so that vllm_stage.sh can run
# vLLM's benchmarks with df11 after the parts' calls:
#
#   python/tests/gpu/vllm_parts.sh FILES [PART_MIB]      (from the project's root; default 52)
#
# Joins the pieces in the parts' order, checks the join against wheels.sha256, and replaces
# .vllm's parts by part0 ... partM of PART_MIB MiB each at most (the last with wheels.sha256,
# device-install.sh and run.tar.xz); prints the number of parts and their sizes. A call carries
# 64 MiB with the tree, so PART_MIB and the tree must stay under that: a sparse checkout without
# fuzz/, bench/results/, tests/, spec/ and docs/ is about 5 MiB. Exits non-zero, leaving .vllm as
# it was, where a part, the checksum or device-install.sh is missing or the join does not match.
set -euo pipefail
files=${1:?usage: vllm_parts.sh FILES [PART_MIB]}
mib=${2:-52}
[ -d .vllm ] || { echo "vllm_parts.sh: no .vllm here (run ../shared/vllm/prepare.sh first)" >&2; exit 2; }
for need in wheel lib bin/df11; do
  [ -e "$files/$need" ] || { echo "vllm_parts.sh: $files/$need is missing" >&2; exit 2; }
done
parts=()
for d in .vllm/part*; do [ -d "$d" ] && parts+=("${d#.vllm/part}"); done
[ ${#parts[@]} -gt 0 ] || { echo "vllm_parts.sh: .vllm holds no parts" >&2; exit 2; }
mapfile -t parts < <(printf '%s\n' "${parts[@]}" | sort -n)
last=${parts[-1]}
sum=.vllm/part$last/wheels.sha256
[ -f "$sum" ] || { echo "vllm_parts.sh: $sum is missing" >&2; exit 2; }
[ -f ".vllm/part$last/device-install.sh" ] || { echo "vllm_parts.sh: .vllm/part$last/device-install.sh is missing" >&2; exit 2; }
i=0
for k in "${parts[@]}"; do
  [ "$k" = "$i" ] || { echo "vllm_parts.sh: .vllm/part$i is missing" >&2; exit 2; }
  i=$((i + 1))
done
tmp=.vllm/new
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
for k in "${parts[@]}"; do
  set -- .vllm/part"$k"/piece_*
  [ -e "$1" ] || { echo "vllm_parts.sh: .vllm/part$k holds no pieces" >&2; exit 2; }
  cat "$@"
done > "$tmp/wheels.tar"
want=$(cut -c1-64 "$sum")
got=$(sha256sum "$tmp/wheels.tar" | cut -c1-64)
[ "$want" = "$got" ] || { echo "vllm_parts.sh: the joined pieces do not match $sum" >&2; exit 3; }
(cd "$tmp" && split -b "${mib}M" -d -a 2 wheels.tar piece_ && rm wheels.tar)
n=0
for p in "$tmp"/piece_*; do
  mkdir -p "$tmp/part$n"
  mv "$p" "$tmp/part$n/"
  n=$((n + 1))
done
end=$tmp/part$((n - 1))
cp "$sum" ".vllm/part$last/device-install.sh" "$end/"
tar -C "$files" -cJf "$end/run.tar.xz" wheel lib bin
for k in "${parts[@]}"; do rm -rf ".vllm/part$k"; done
for k in $(seq 0 $((n - 1))); do mv "$tmp/part$k" ".vllm/part$k"; done
echo "parts: $n"
du -sh .vllm/part*
