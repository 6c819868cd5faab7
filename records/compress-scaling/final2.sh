#!/usr/bin/env bash
# Issue 21, h21f: one run on the 16-core host, old binary against new side by side, on the
# 8B-shaped model (16.06 GB, 4 shards of <= 5 GB) in /dev/shm:
#   - compress --threads 16 old/new/old/new (the new -v says when each source SHA-256 ran),
#     new --threads 8, new --no-source-sha256 at 16;
#   - verify --device cpu at 16, old and new (file workers as arena tasks in the new);
#   - decompress at 16: old, new (file workers as arena tasks: 16 threads in all, where old ran
#     16 + 3), new --parallel-files 1, 2 and 3; at 8: old, new;
#   - zstd -1 -T16 and -T8;
#   - tmpfs_writers: W threads writing 8 GB into W files of their own in 8 MiB pwrite()s
#     (W = 1, 2, 4, 8, 16), then 4 writers into one shared file: the kernel's side alone;
#   - the machine (lscpu: threads per core) and `openssl speed -evp sha256`.
# Layout (as /work/main/.carry/h21f/): bin/ df11 df11-old df11-mkmodel zstd time tmpfs_writers,
# lib/ the .so files the machine lacks. Overrides for a dry run on a small machine: SIZE=300MB
# (the model becomes `df11-mkmodel --size $SIZE`), WRITE_GB (default 8), SHM (default
# /dev/shm), OUT (default /tmp/final2-out). Prints the table last; logs in $OUT/logs.tgz.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
OUT=${OUT:-/tmp/final2-out}
S=${SHM:-/dev/shm}
if [ -z "${SIZE:-}" ] && [ "$(df --output=avail -k "$S" | tail -1)" -lt 50000000 ]; then
  mkdir -p /tmp/final-shm && mount -t tmpfs -o size=100g tmpfs /tmp/final-shm && S=/tmp/final-shm
fi
W=$OUT/r
mkdir -p "$W"
TIME=/usr/bin/time
[ -x "$D/bin/time" ] && TIME=$D/bin/time
{
  grep -m1 'model name' /proc/cpuinfo
  lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3)'
  grep -o -m1 -E 'sha_ni' /proc/cpuinfo
  grep -o -m1 avx512f /proc/cpuinfo
  free -g | head -2
  df -h "$S" | tail -1
  grep " $S " /proc/mounts
  cat /sys/kernel/mm/transparent_hugepage/shmem_enabled
  uname -r
  (openssl speed -evp sha256 -bytes 1048576 -seconds 1 2> /dev/null | tail -1)
} > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
for b in df11 df11-old; do
  if ldd "$D/bin/$b" | grep "not found"; then exit 1; fi
done
M=$S/m8b
if [ -n "${SIZE:-}" ]; then
  FULL=(--size "$SIZE" --seed 1)
else
  FULL=(--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1)
fi
rm -rf "$M" "$S/d" "$S/r" "$S/z.zst"
"$TIME" -f "mkmodel %e s" df11-mkmodel "$M" "${FULL[@]}" --threads "$(nproc)" > "$W/mkmodel.txt" 2>&1
cat "$W/mkmodel.txt"
GB=$(stat -c %s "$M"/*.safetensors | awk '{ s += $1 } END { print s / 1e9 }')
T=$OUT/table.txt
echo "model $GB GB; $(nproc) CPUs; old = bin/df11-old, new = bin/df11" > "$T"
for w in 1 2 4 8 16; do tmpfs_writers own "$w" "${WRITE_GB:-8}" "$S" | tee -a "$T"; done
tmpfs_writers shared 4 "${WRITE_GB:-8}" "$S" | tee -a "$T"
run() { # name outdir cmd...
  local name=$1 out=$2
  shift 2
  [ "$out" = - ] || rm -rf "$out"
  "$TIME" -f "%e %U %S %M" -o "$W/$name.time" "$@" > "$W/$name.log" 2>&1
  local rc=$? e u s kb
  read -r e u s kb < "$W/$name.time"
  awk -v n="$name" -v rc=$rc -v e="$e" -v u="$u" -v s="$s" -v m="$kb" -v g="$GB" 'BEGIN { printf "%-14s rc=%d %6.2f s %6.2f GB/s cpu %6.1f s (%.2f/GB, user %.1f sys %.1f) rss %d MB\n", n, rc, e, g/e, u+s, (u+s)/g, u, s, m/1024 }' | tee -a "$T"
  grep -h -E "^(phases|source SHA-256)" "$W/$name.log" | cut -c1-900
}
c() { run "$1" "$S/d" "${@:2}" -o "$S/d" -v; }
c c16-old df11-old compress "$M" --threads 16
c c16-new df11 compress "$M" --threads 16
c c16-old-b df11-old compress "$M" --threads 16
c c16-new-b df11 compress "$M" --threads 16
c c16-new-nosha df11 compress "$M" --threads 16 --no-source-sha256
c c8-new df11 compress "$M" --threads 8
run v16-old - df11-old verify "$S/d" --device cpu --threads 16
run v16-new - df11 verify "$S/d" --device cpu --threads 16
x() { run "$1" "$S/r" "${@:2}"; rm -rf "$S/r"; }
x x16-old df11-old decompress "$S/d" -o "$S/r" --threads 16
x x16-new df11 decompress "$S/d" -o "$S/r" --threads 16
x x16-new-f1 df11 decompress "$S/d" -o "$S/r" --threads 16 --parallel-files 1
x x16-new-f2 df11 decompress "$S/d" -o "$S/r" --threads 16 --parallel-files 2
x x16-new-f3 df11 decompress "$S/d" -o "$S/r" --threads 16 --parallel-files 3
x x16-old-b df11-old decompress "$S/d" -o "$S/r" --threads 16
x x8-old df11-old decompress "$S/d" -o "$S/r" --threads 8
x x8-new df11 decompress "$S/d" -o "$S/r" --threads 8
rm -rf "$S/d"
for t in 16 8; do
  run "z$t" - sh -c "zstd -1 -T$t -q -c $M/*.safetensors > $S/z.zst"
  rm -f "$S/z.zst"
done
rm -rf "$M"
cp "$W/machine.txt" "$OUT/"
(cd "$OUT" && tar czf logs.tgz r && rm -rf r)
cat "$T"
