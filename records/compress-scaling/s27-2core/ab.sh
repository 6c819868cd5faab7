#!/usr/bin/env bash
# Stop 27, 2-core development machine: old (main 8f5d71b) against new, paired, on
# df11-mkmodel --size 1GB --seed 7 in /dev/shm. New: NEW=/tmp/s27/df11-new (2cb9d2c: the
# hashes and page drops beside the writes; log ab_pairs_2cb9d2c.txt), then
# NEW=/tmp/s27/df11-final (180788a: + each chunk's input pages mapped in one call; ab_pairs.txt).
# Binaries: Release, -DDF11_WERROR=ON, CUDA on (the development builds), copied to /tmp/s27.
set -u
cd /dev/shm
AB=/work/wt/lead-bench/bench/paired_ab.py
OLD=/tmp/s27/df11-old NEW=${NEW:-/tmp/s27/df11-final} M=s27-m1
echo "# new: $NEW"
echo "# stop 27, 2-core development machine, $(date -u '+%F %T') UTC; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(nproc) CPUs"
echo "# model: df11-mkmodel $M --size 1GB --seed 7 ($(stat -c %s $M/*.safetensors | awk '{ s += $1 } END { printf "%.1f MB", s / 1e6 }'), 2 shards)"
echo; uptime
echo; echo "## compress: new (A) against old (B), 15 pairs"
python3 "$AB" -n 15 --vs "$OLD compress $M -o s27-o2 -q --force" -- $NEW compress $M -o s27-o1 -q --force
cmp <(cat s27-o1/*.safetensors | sha256sum) <(cat s27-o2/*.safetensors | sha256sum) && echo "outputs identical"
uptime
echo; echo "## decompress: new (A) against old (B), 15 pairs"
python3 "$AB" -n 15 --vs "$OLD decompress s27-o2 -o s27-r2 -q --force" -- $NEW decompress s27-o1 -o s27-r1 -q --force
uptime
echo; echo "## compress new (A) against zstd -1 -T2 (B), 15 pairs"
python3 "$AB" -n 15 --vs "sh -c 'zstd -1 -T2 -q -c $M/*.safetensors > s27-z.zst'" -- $NEW compress $M -o s27-o1 -q --force
uptime
echo; echo "## -v phases, one run each: old, new"
$OLD compress $M -o s27-o2 --force -v | grep -E '^(phases|compressed)'
$NEW compress $M -o s27-o1 --force -v | grep -E '^(phases|compressed)'
rm -rf s27-o1 s27-o2 s27-r1 s27-r2 s27-z.zst
