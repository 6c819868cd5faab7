#!/usr/bin/env bash
# h21 diagnostic: where compress stops scaling on 16 cores (old = main + phase timings, new = branch).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
W=$OUT
{ grep -m1 'model name' /proc/cpuinfo; nproc; grep -o -m1 'sha_ni' /proc/cpuinfo; grep -o -m1 avx512f /proc/cpuinfo; free -g; df -h /dev/shm; uname -r; } > $W/machine.txt 2>&1
cat $W/machine.txt
ldd $D/bin/df11 | grep "not found" && exit 1
S=/dev/shm
avail=$(df --output=avail -k /dev/shm | tail -1)
if [ "$avail" -lt 70000000 ]; then mkdir -p /tmp/h21shm && mount -t tmpfs -o size=100g tmpfs /tmp/h21shm && S=/tmp/h21shm; fi
echo "work dir $S"
(command -v openssl && openssl speed -evp sha256 -bytes 1048576 -seconds 2 2>/dev/null | tail -1) > $W/sha_speed.txt 2>&1; cat $W/sha_speed.txt
M=$S/m8b
/usr/bin/time -f "mkmodel %e s" df11-mkmodel $M --layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1 --threads 16 > $W/mkmodel.txt 2>&1
cat $W/mkmodel.txt | tail -8
cat $M/*.safetensors > /dev/null
/usr/bin/time -f "sha256sum one 5GB shard %e s (%U user %S sys)" sha256sum $M/model-00001-of-00004.safetensors >> $W/sha_speed.txt 2>&1; tail -1 $W/sha_speed.txt
T=$W/table.txt; : > $T
run() { # name outdir cmd...
  local name=$1 out=$2; shift 2
  [ "$out" = - ] || rm -rf "$out"
  /usr/bin/time -f "%e %U %S %M" -o $W/$name.time "$@" > $W/$name.log 2>&1; local rc=$?
  read e u s m < $W/$name.time
  awk -v n=$name -v rc=$rc -v e=$e -v u=$u -v s=$s -v m=$m 'BEGIN { printf "%-10s rc=%d wall %6.2f s  user %6.2f  sys %6.2f  cpu/GB %.2f  GB/s %.2f  rss %d MB\n", n, rc, e, u, s, (u+s)/16.06, 16.06/e, m/1024 }' | tee -a $T
  grep -h "phases" $W/$name.log | cut -c1-600
}
run old_c16 $S/d_old df11-old compress $M -o $S/d_old -v --threads 16; rm -rf $S/d_old
run new_c16 $S/d df11 compress $M -o $S/d -v --threads 16
run new_c16b $S/d2 df11 compress $M -o $S/d2 -v --threads 16; rm -rf $S/d2
run new_c4 $S/d2 df11 compress $M -o $S/d2 -v --threads 4; rm -rf $S/d2
run new_v16 - df11 verify $S/d --device cpu --threads 16
run new_x16 $S/r df11 decompress $S/d -o $S/r -v --threads 16; rm -rf $S/r
run zstd_16 - sh -c "zstd -1 -T16 -q -c $M/*.safetensors > $S/z.zst"; ls -la $S/z.zst >> $T; rm -f $S/z.zst
echo; cat $T
