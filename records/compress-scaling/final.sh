#!/usr/bin/env bash
# Issue 21 final table, one run on one host: compress / verify --device cpu / decompress and
# zstd -1 -T<n> at 16 and 8 threads on the 8B-shaped model (16.06 GB, 4 shards of <= 5 GB),
# at 4, 2 and 1 threads on an 8B-width slice (2 layers, vocab 32000, 2 shards: the full model
# would take ~100 s more at those counts); compress --no-source-sha256 at 16 and 8; main's
# compress at 16 (same-run baseline, if bin/df11-main is there); the SHA-256 floor (the four
# shards hashed side by side). Layout (as .carry/h21b/): bin/ df11 df11-main df11-mkmodel zstd
# time, lib/ the .so files the machine lacks.
#
# Overrides for a dry run on a small machine: SIZE=300MB (the full model becomes
# `df11-mkmodel --size $SIZE`), SLICE_SIZE (default SIZE), SHM (default /dev/shm), OUT
# (default /tmp/final-out). Prints the table last; logs in $OUT/logs.tgz.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
OUT=${OUT:-/tmp/final-out}
S=${SHM:-/dev/shm}
# At most ~45 GB at once (model, slice, DF11 folder, restored folder): a smaller /dev/shm
# gets a tmpfs of its own (the machine runs commands as root).
if [ -z "${SIZE:-}" ] && [ "$(df --output=avail -k "$S" | tail -1)" -lt 50000000 ]; then
  mkdir -p /tmp/final-shm && mount -t tmpfs -o size=100g tmpfs /tmp/final-shm && S=/tmp/final-shm
fi
W=$OUT/r
mkdir -p "$W"
{ grep -m1 'model name' /proc/cpuinfo; nproc; grep -o -m1 -E 'sha_ni' /proc/cpuinfo; grep -o -m1 avx512f /proc/cpuinfo; free -g | head -2; df -h "$S" | tail -1; uname -r; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
if ldd "$D/bin/df11" | grep "not found"; then exit 1; fi
M=$S/m8b
M2=$S/m8s
if [ -n "${SIZE:-}" ]; then
  FULL=(--size "$SIZE" --seed 1)
  SLICE=(--size "${SLICE_SIZE:-$SIZE}" --seed 2)
else
  FULL=(--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1)
  SLICE=(--layers 2 --hidden 4096 --intermediate 14336 --vocab 32000 --heads 32 --kv-heads 8 --shard-size 1GB --seed 1)
fi
rm -rf "$M" "$M2" "$S/d" "$S/r" "$S/z.zst"
/usr/bin/time -f "mkmodel %e s" df11-mkmodel "$M" "${FULL[@]}" --threads "$(nproc)" > "$W/mkmodel.txt" 2>&1
/usr/bin/time -f "mkmodel slice %e s" df11-mkmodel "$M2" "${SLICE[@]}" --threads "$(nproc)" >> "$W/mkmodel.txt" 2>&1
cat "$W/mkmodel.txt"
bytes() { stat -c %s "$1"/*.safetensors | awk '{ s += $1 } END { print s / 1e9 }'; }
GB=$(bytes "$M")
GB2=$(bytes "$M2")
/usr/bin/time -f "sha256 floor: the shards side by side %e s wall (%U user %S sys)" sh -c "for f in $M/*.safetensors; do sha256sum \$f > /dev/null & done; wait" 2> "$W/sha_floor.txt"
(command -v openssl > /dev/null && openssl speed -evp sha256 -bytes 1048576 -seconds 1 2> /dev/null | tail -1) >> "$W/sha_floor.txt"
cat "$W/sha_floor.txt"
T=$OUT/table.txt
echo "model $GB GB (16, 8 threads), slice $GB2 GB (4, 2, 1 threads); $(nproc) CPUs" > "$T"
run() { # name gb outdir cmd...
  local name=$1 gb=$2 out=$3
  shift 3
  [ "$out" = - ] || rm -rf "$out"
  /usr/bin/time -f "%e %U %S %M" -o "$W/$name.time" "$@" > "$W/$name.log" 2>&1
  local rc=$? e u s kb
  read -r e u s kb < "$W/$name.time"
  awk -v n="$name" -v rc=$rc -v e="$e" -v u="$u" -v s="$s" -v m="$kb" -v g="$gb" 'BEGIN { printf "%-9s rc=%d %6.2f s %6.2f GB/s cpu %6.1f s (%.2f/GB, user %.1f sys %.1f) rss %d MB\n", n, rc, e, g/e, u+s, (u+s)/g, u, s, m/1024 }' | tee -a "$T"
  grep -h "^phases" "$W/$name.log" | cut -c1-700
}
row() { # threads model gb
  local t=$1 m=$2 g=$3
  run "c$t" "$g" "$S/d" df11 compress "$m" -o "$S/d" -v --threads "$t"
  run "v$t" "$g" - df11 verify "$S/d" --device cpu --threads "$t"
  run "x$t" "$g" "$S/r" df11 decompress "$S/d" -o "$S/r" --threads "$t"
  rm -rf "$S/r" "$S/d"
  run "z$t" "$g" - sh -c "zstd -1 -T$t -q -c $m/*.safetensors > $S/z.zst"
  rm -f "$S/z.zst"
}
nosha() { # threads model gb
  run "c${1}nosha" "$3" "$S/d" df11 compress "$2" -o "$S/d" -v --threads "$1" --no-source-sha256
  rm -rf "$S/d"
}
row 16 "$M" "$GB"
nosha 16 "$M" "$GB"
if [ -x "$D/bin/df11-main" ]; then
  run c16main "$GB" "$S/d" df11-main compress "$M" -o "$S/d" -v --threads 16
  rm -rf "$S/d"
fi
row 8 "$M" "$GB"
nosha 8 "$M" "$GB"
rm -rf "$M"
row 4 "$M2" "$GB2"
row 2 "$M2" "$GB2"
row 1 "$M2" "$GB2"
rm -rf "$M2"
cp "$W/sha_floor.txt" "$W/machine.txt" "$OUT/"
(cd "$OUT" && tar czf logs.tgz r && rm -rf r)
cat "$T"
