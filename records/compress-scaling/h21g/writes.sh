#!/usr/bin/env bash
# Issue 21, h21g: --write-mode pwrite (one writer per file, the default) against mapped (each
# file's pages over all threads, mapped_writer.h) on the 16-core host, alternating, on the
# 8B-shaped model (16.06 GB, 4 shards) in /dev/shm: compress at 16 threads (three runs each;
# the last one's output is then decompressed), decompress at 16 (three each) and 8 (two each).
# Not yet run (the session's device time ran out): ~90 s of commands. Layout as table.sh
# (.carry/h21g: bin/ df11 df11-mkmodel time, lib/). OUT (default /tmp/h21g-out2), SIZE for a
# dry run. Prints the table last; a restored shard that differs is said so.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
OUT=${OUT:-/tmp/h21g-out2}
S=${SHM:-/dev/shm}
W=$OUT/r
mkdir -p "$W"
TIME=/usr/bin/time
[ -x "$D/bin/time" ] && TIME=$D/bin/time
{ date -u; grep -m1 'model name' /proc/cpuinfo; nproc; free -g | head -2; df -h "$S" | tail -1; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
M=$S/m8b
if [ -n "${SIZE:-}" ]; then FULL=(--size "$SIZE" --seed 1); else
  FULL=(--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1)
fi
rm -rf "$M" "$S/d" "$S/r"
df11-mkmodel "$M" "${FULL[@]}" --threads "$(nproc)" > "$W/mkmodel.txt" 2>&1
GB=$(stat -c %s "$M"/*.safetensors | awk '{ s += $1 } END { print s / 1e9 }')
T=$OUT/table.txt
echo "model $GB GB; $(nproc) CPUs" | tee "$T"
run() { # name outdir cmd...
  local name=$1 out=$2
  shift 2
  [ "$out" = - ] || rm -rf "$out"
  "$TIME" -f "%e %U %S %M" -o "$W/$name.time" "$@" > "$W/$name.log" 2>&1
  local rc=$? e u s kb
  read -r e u s kb < "$W/$name.time"
  awk -v n="$name" -v rc=$rc -v e="$e" -v u="$u" -v s="$s" -v m="$kb" -v g="$GB" 'BEGIN { printf "%-16s rc=%d %6.2f s %6.2f GB/s cpu %6.1f s (%.2f/GB, user %.1f sys %.1f) rss %d MB\n", n, rc, e, g/e, u+s, (u+s)/g, u, s, m/1024 }' | tee -a "$T"
  grep -h -E "^(phases|source SHA-256)" "$W/$name.log" | cut -c1-1200
}
for i in 1 2 3; do
  for m in pwrite mapped; do
    run "c16-$m-$i" "$S/d" df11 compress "$M" -o "$S/d" -v --threads 16 --write-mode "$m"
  done
done
last=$(cd "$M" && ls ./*.safetensors | tail -1)
x() { # name threads mode
  run "$1" "$S/r" df11 decompress "$S/d" -o "$S/r" -v --threads "$2" --write-mode "$3"
  cmp -s "$S/r/$last" "$M/$last" || echo "$1: restored $last differs" | tee -a "$T"
  rm -rf "$S/r"
}
for i in 1 2 3; do x "x16-pwrite-$i" 16 pwrite; x "x16-mapped-$i" 16 mapped; done
for i in 1 2; do x "x8-pwrite-$i" 8 pwrite; x "x8-mapped-$i" 8 mapped; done
rm -rf "$M" "$S/d"
(cd "$OUT" && tar czf logs.tgz r && rm -rf r)
cat "$T"
