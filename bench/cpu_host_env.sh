# Sourced by CPU scaling measurements on a GPU machine's host (compress, verify, decompress
# against zstd): the steps every such script needs.
#
#   source bench/cpu_host_env.sh TOOLS OUT
#
# TOOLS holds bin/ (df11, df11-mkmodel, zstd, optionally GNU time as bin/time) and lib/ (the
# .so files the host lacks); OUT receives everything. Sets OUT, PATH, LD_LIBRARY_PATH, TIME, W
# (OUT/r: one log and one GNU time file per step) and T (OUT/table.txt: one row per step), and
# defines:
#   host_facts               the machine (CPU, cores, memory, /dev/shm and its huge pages,
#                            kernel, SHA-256 speed) into W/machine.txt and the terminal
#   make_llama8b DIR [SIZE]  df11-mkmodel's 8B-shaped Llama (16.06 GB, 5 GB shards, seed 1),
#                            or `--size SIZE` for a dry run on a small machine
#   model_gb DIR             GB of *.safetensors in DIR
#   timed NAME OUTDIR CMD... runs CMD under GNU time (OUTDIR removed first unless "-"), logs
#                            it as W/NAME.log, and appends to T the row
#                            "NAME rc=R WALL s GB/s cpu CPU s (CPU/GB, user U sys S) rss M MB"
#                            with GB from the variable GB; prints the log's -v phase lines.
# Exits the sourcing script: status 2 on a wrong call, 1 when TOOLS's binaries miss a library.

if [ $# -ne 2 ]; then
  echo "usage: source bench/cpu_host_env.sh TOOLS OUT" >&2
  exit 2
fi
TOOLS=$(cd "$1" && pwd)
OUT=$2
export PATH="$TOOLS/bin:$PATH" LD_LIBRARY_PATH="$TOOLS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TIME=/usr/bin/time
[ -x "$TOOLS/bin/time" ] && TIME=$TOOLS/bin/time
W=$OUT/r
T=$OUT/table.txt
mkdir -p "$W"
for b in "$TOOLS"/bin/df11*; do
  if ldd "$b" 2>/dev/null | grep -q "not found"; then
    echo "$b: a library is missing:" >&2
    ldd "$b" | grep "not found" >&2
    exit 1
  fi
done

host_facts() {
  {
    date -u
    grep -m1 'model name' /proc/cpuinfo
    lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3)'
    grep -o -m1 -E 'sha_ni' /proc/cpuinfo
    grep -o -m1 avx512f /proc/cpuinfo
    free -g | head -2
    df -h /dev/shm | tail -1
    grep " /dev/shm " /proc/mounts
    cat /sys/kernel/mm/transparent_hugepage/shmem_enabled
    uname -r
    (openssl speed -evp sha256 -bytes 1048576 -seconds 1 2>/dev/null | tail -1)
  } > "$W/machine.txt" 2>&1
  cat "$W/machine.txt"
}

make_llama8b() {
  local dir=$1 size=${2:-}
  local shape=(--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32
               --kv-heads 8 --shard-size 5GB --seed 1)
  [ -n "$size" ] && shape=(--size "$size" --seed 1)
  rm -rf "$dir"
  df11-mkmodel "$dir" "${shape[@]}" --threads "$(nproc)"
}

model_gb() {
  stat -c %s "$1"/*.safetensors | awk '{ s += $1 } END { print s / 1e9 }'
}

timed() {
  local name=$1 out=$2
  shift 2
  [ "$out" = - ] || rm -rf "$out"
  "$TIME" -f "%e %U %S %M" -o "$W/$name.time" "$@" > "$W/$name.log" 2>&1
  local rc=$? e u s kb
  # GNU time puts "Command exited with non-zero status N" first when the command fails.
  read -r e u s kb < <(tail -n 1 "$W/$name.time")
  awk -v n="$name" -v rc=$rc -v e="$e" -v u="$u" -v s="$s" -v m="$kb" -v g="${GB:?set GB}" \
    'BEGIN { printf "%-14s rc=%d %6.2f s %6.2f GB/s cpu %6.1f s (%.2f/GB, user %.1f sys %.1f) rss %d MB\n",
             n, rc, e, g / e, u + s, (u + s) / g, u, s, m / 1024 }' | tee -a "$T"
  grep -h -E "^(phases|source SHA-256)" "$W/$name.log" | cut -c1-1200
  return 0
}
