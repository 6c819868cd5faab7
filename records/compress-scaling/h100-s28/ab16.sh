#!/usr/bin/env bash
# Issue 21, stop 27: old (main before 2cb9d2c) against new (hashes and page drops beside the
# writes) on the 16-core host, side by side in one run, on the 8B-shaped model in /dev/shm:
#   compress --threads 16 -v, 8 alternating runs (o n n o o n n o), then decompress
#   --threads 16 the same way, verify --device cpu --threads 16 o n; then h21g's table.sh
#   with the new binary (16 8 4 on the full model, 2 1 on its slice; no writer probes).
# Layout: bin/ df11 df11-old df11-mkmodel zstd time, lib/ (tbb, xxhash, zstd), table.sh.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/s27-out}
# shellcheck disable=SC1091
source "$D/../../bench/cpu_host_env.sh" "$D" "$OUT"
S=${SHM:-/dev/shm}
M=$S/m8b
rm -rf "$S/d" "$S/r"
host_facts > /dev/null
make_llama8b "$M" "${SIZE:-}" > "$W/mkmodel.txt" 2>&1
GB=$(model_gb "$M")
T=$OUT/ab.txt
echo "model $GB GB; $(nproc) CPUs; $(cat "$D/VERSIONS")" | tee "$T"
run() { timed "$@" > /dev/null; }
k=0
for who in old new new old old new new old; do
  k=$((k + 1)); b=df11; [ $who = old ] && b=df11-old
  run "c16-$who-$k" "$S/d" $b compress "$M" -o "$S/d" -v --threads 16
done
grep -h "^phases" "$W"/c16-*.log | cut -c1-600 > "$W/phases.txt"
k=0
for who in old new new old old new new old; do
  k=$((k + 1)); b=df11; [ $who = old ] && b=df11-old
  run "x16-$who-$k" "$S/r" $b decompress "$S/d" -o "$S/r" --threads 16
done
last=$(cd "$M" && ls ./*.safetensors | tail -1)
cmp -s "$S/r/$last" "$M/$last" || echo "restored $last differs" | tee -a "$T"
rm -rf "$S/r"
run v16-old - df11-old verify "$S/d" --device cpu --threads 16
run v16-new - df11 verify "$S/d" --device cpu --threads 16
rm -rf "$M" "$S/d"
(cd "$OUT" && tar czf ab-logs.tgz r && rm -rf r)
WRITER_MODES=" " OUT=$OUT/table bash "$D/table.sh" > /dev/null 2>&1
cat "$T" "$OUT/table/table.txt" 2>/dev/null
