#!/usr/bin/env bash
# Stop 28, 2-core development machine: compress as issue 21 found it against today's, paired,
# with the -v phases of each. BEFORE = 9585015 (main 6a15b97, where the issue was filed, plus
# the -v phase line and no other change; the binary h200-diag carried as df11-old), AFTER =
# main a8325b8. Both Release; defaults as they are (before: the source SHA-256 recorded, after:
# not, spec 1.2). Usage: BEFORE=... AFTER=... MKMODEL=... bash before_after.sh
set -u
AB=$(cd "$(dirname "$0")/../../.." && pwd)/bench/paired_ab.py
cd /dev/shm
M=s28-m1
[ -d $M ] || "${MKMODEL:?}" $M --size 1GB --seed 7 > /dev/null
echo "# stop 28, 2-core development machine, $(date -u '+%F %T') UTC; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(nproc) CPUs"
echo "# before: ${BEFORE:?}; after: ${AFTER:?}"
echo; uptime
echo; echo "## compress after (A) against before (B), 11 pairs"
python3 "$AB" -n 11 --vs "$BEFORE compress $M -o s28-o2 -q --force" -- $AFTER compress $M -o s28-o1 -q --force
# The defaults differ in one header field (the source SHA-256); with it, after's output must be
# before's, file by file.
$AFTER compress $M -o s28-o1 -q --force --source-sha256
for f in s28-o2/*; do
  cmp -s "$f" "s28-o1/${f#s28-o2/}" && echo "same: ${f#s28-o2/}" || echo "DIFFERS: ${f#s28-o2/}"
done
uptime
echo; echo "## -v phases, three runs each, alternating: before, after"
for k in 1 2 3; do
  $BEFORE compress $M -o s28-o2 --force -v | grep -E '^(phases|compressed)'
  $AFTER compress $M -o s28-o1 --force -v | grep -E '^(phases|compressed)'
done
rm -rf s28-o1 s28-o2
