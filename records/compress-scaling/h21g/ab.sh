#!/usr/bin/env bash
# h21g 2-core pairs; run from /dev/shm
set -u
cd /dev/shm
DF=/tmp/h21g/df11
# The paired timer: bench/paired_ab.py (A B A B ..., one uncounted run of each first).
AB=/work/main/bench/paired_ab.py
echo "# h21g, 2-core development machine, $(date -u '+%F %T') UTC; $(grep -m1 'model name' /proc/cpuinfo); $(nproc) CPUs; /dev/shm tmpfs huge=$(grep -o 'huge=[a-z_]*' /proc/mounts | head -1 || echo never)"
echo "# df11 = h21g-scale $(git -C /work/wt/h21g rev-parse --short HEAD) (Release, -DDF11_WERROR=ON, -DDF11_CUDA=OFF): compress without a source SHA-256 by default"
echo "# model: df11-mkmodel h21g-m1 --size 1GB --seed 7 (983.6 MB, 2 shards), in /dev/shm; outputs to /dev/shm"
echo; echo "## uptime"; uptime
echo; echo "## compress (new default) vs zstd -1 -T2, 15 pairs"
python3 "$AB" -n 15 --vs "sh -c 'zstd -1 -T2 -q -c h21g-m1/*.safetensors > h21g-z.zst'" -- $DF compress h21g-m1 -o h21g-out -q --force
uptime
echo; echo "## compress (new default) vs compress --source-sha256 (the old default), 11 pairs"
python3 "$AB" -n 11 --vs "$DF compress h21g-m1 -o h21g-out2 -q --force --source-sha256" -- $DF compress h21g-m1 -o h21g-out -q --force
uptime
echo; echo "## compress --source-sha256 vs zstd -1 -T2, 11 pairs"
python3 "$AB" -n 11 --vs "sh -c 'zstd -1 -T2 -q -c h21g-m1/*.safetensors > h21g-z.zst'" -- $DF compress h21g-m1 -o h21g-out2 -q --force --source-sha256
uptime
echo; echo "## compress -v, one run each: --source-sha256 (before), default (after)"
$DF compress h21g-m1 -o h21g-out2 --force -v --source-sha256 | grep -E '^(phases|source SHA-256|compressed)'
$DF compress h21g-m1 -o h21g-out --force -v | grep -E '^(phases|source SHA-256|compressed)'
uptime
rm -rf h21g-out h21g-out2 h21g-z.zst
