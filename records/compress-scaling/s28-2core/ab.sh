#!/usr/bin/env bash
# Stop 28, 2-core development machine: compress (main a8325b8) against zstd -1 -T2, paired,
# on df11-mkmodel --size 1GB --seed 7 in /dev/shm, on a quiet machine (load average < 0.1
# before the run); then compress's -v phases once. Binary: Release, -DDF11_WERROR=ON, CUDA on
# (the development build). Usage: DF11=path/to/df11 MKMODEL=path/to/df11-mkmodel bash ab.sh
set -u
AB=$(cd "$(dirname "$0")/../../.." && pwd)/bench/paired_ab.py
cd /dev/shm
N=${DF11:?} M=s28-m1
[ -d $M ] || "${MKMODEL:?}" $M --size 1GB --seed 7 > /dev/null
echo "# df11: $N ($("$N" --version 2>&1 | head -1))"
echo "# stop 28, 2-core development machine, $(date -u '+%F %T') UTC; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(nproc) CPUs"
GB=$(stat -c %s $M/*.safetensors | awk '{ s += $1 } END { printf "%.4f", s / 1e9 }')
echo "# model: df11-mkmodel $M --size 1GB --seed 7 ($GB GB, 2 shards)"
echo; uptime
echo; echo "## compress (A) against zstd -1 -T2 (B), 15 pairs"
python3 "$AB" -n 15 --vs "sh -c 'zstd -1 -T2 -q -c $M/*.safetensors > s28-z.zst'" -- $N compress $M -o s28-o1 -q --force | tee s28-ab.txt
awk -v g="$GB" '/^A cpu s/ { printf "compress: %.3f CPU-s per GB (median)\n", $5 / g }' s28-ab.txt
uptime
echo; echo "## -v phases, one run"
$N compress $M -o s28-o1 --force -v | grep -E '^(phases|compressed)'
rm -rf s28-o1 s28-z.zst s28-ab.txt
