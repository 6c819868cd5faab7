#!/usr/bin/env bash
# Issue 21, h21g: the table the issue asks for, in one run on the 16-core host: per thread
# count n, `df11 compress` (the new default: no source SHA-256), `compress --source-sha256`
# (the old default), `verify --device cpu`, `decompress` and `zstd -1 -T<n>`, each once under
# GNU time. n = 16, 8, 4 on the 8B-shaped model (16.06 GB, shards of 4.98, 5.00, 4.92, 1.17
# GB); n = 2, 1 on its 8B-width slice (--layers 2 --vocab 32000 --shard-size 1GB, 1.40 GB:
# the full model would take ~10 min at one thread). 16 threads: compress twice.
# Before the table: one_file_writers (W threads filling ONE new 4 GB file by pwrite, by
# fallocate + pwrite, through a shared mapping, by MADV_POPULATE_WRITE + mapping, by
# fallocate + mapping; W = 1, 4, 16), and W files of their own for reference.
# Layout (as /work/main/.carry/h21g/): bin/ df11 df11-mkmodel zstd time one_file_writers,
# lib/ the .so files the machine lacks. Overrides for a dry run on a small machine: SIZE
# (the full model becomes `df11-mkmodel --size $SIZE`), SLICE_SIZE, WRITE_GB (default 4),
# THREADS_FULL (default "16 8 4"), THREADS_SLICE (default "2 1"), WRITER_MODES, SHM (default /dev/shm),
# OUT (default /tmp/h21g-out). Prints the table last; logs in $OUT/logs.tgz.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
OUT=${OUT:-/tmp/h21g-out}
S=${SHM:-/dev/shm}
W=$OUT/r
mkdir -p "$W"
TIME=/usr/bin/time
[ -x "$D/bin/time" ] && TIME=$D/bin/time
{
  date -u
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
if ldd "$D/bin/df11" | grep "not found"; then exit 1; fi
T=$OUT/table.txt
: > "$T"
for w in 1 4 16; do
  for m in ${WRITER_MODES:-pwrite fpwrite mmap populate fmmap}; do
    one_file_writers "$m" "$w" "${WRITE_GB:-4}" "$S" | tee -a "$T"
  done
done
one_file_writers own 4 "${WRITE_GB:-4}" "$S" | tee -a "$T"
one_file_writers own 16 "${WRITE_GB:-4}" "$S" | tee -a "$T"

M=$S/m8b
L=$S/m8s
if [ -n "${SIZE:-}" ]; then
  FULL=(--size "$SIZE" --seed 1)
  SLICE=(--size "${SLICE_SIZE:-100MB}" --seed 1)
else
  FULL=(--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1)
  SLICE=(--layers 2 --hidden 4096 --intermediate 14336 --vocab 32000 --heads 32 --kv-heads 8 --shard-size 1GB --seed 1)
fi
rm -rf "$M" "$L" "$S/d" "$S/r" "$S/z.zst"
"$TIME" -f "mkmodel %e s" df11-mkmodel "$M" "${FULL[@]}" --threads "$(nproc)" > "$W/mkmodel.txt" 2>&1
"$TIME" -f "mkmodel %e s" df11-mkmodel "$L" "${SLICE[@]}" --threads "$(nproc)" >> "$W/mkmodel.txt" 2>&1
cat "$W/mkmodel.txt"
gb() { stat -c %s "$1"/*.safetensors | awk '{ s += $1 } END { print s / 1e9 }'; }
GB_FULL=$(gb "$M")
GB_SLICE=$(gb "$L")
echo "full model $GB_FULL GB, slice $GB_SLICE GB; $(nproc) CPUs" | tee -a "$T"
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
row() { # model threads
  local m=$1 n=$2
  run "c$n" "$S/d" df11 compress "$m" -o "$S/d" -v --threads "$n"
  if [ "$n" = 16 ]; then run "c$n-b" "$S/d" df11 compress "$m" -o "$S/d" -v --threads "$n"; fi
  run "c$n-sha" "$S/d" df11 compress "$m" -o "$S/d" -v --threads "$n" --source-sha256
  run "v$n" - df11 verify "$S/d" --device cpu --threads "$n"
  run "x$n" "$S/r" df11 decompress "$S/d" -o "$S/r" --threads "$n"
  local last
  last=$(cd "$m" && ls ./*.safetensors | tail -1)
  cmp -s "$S/r/$last" "$m/$last" || echo "x$n: restored $last differs" | tee -a "$T"
  rm -rf "$S/r"
  run "z$n" - sh -c "zstd -1 -T$n -q -c $m/*.safetensors > $S/z.zst"
  rm -f "$S/z.zst"
}
GB=$GB_FULL
for n in ${THREADS_FULL:-16 8 4}; do row "$M" "$n"; done
rm -rf "$M" "$S/d"
GB=$GB_SLICE
for n in ${THREADS_SLICE:-2 1}; do row "$L" "$n"; done
rm -rf "$L" "$S/d"
cp "$W/machine.txt" "$OUT/"
(cd "$OUT" && tar czf logs.tgz r && rm -rf r)
cat "$T"
