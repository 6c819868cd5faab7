#!/usr/bin/env bash
# h21 final: compress / verify --device cpu / decompress / zstd -1 at 16, 8, 4 threads on the
# 8B-shaped model (16.06 GB, 4 shards of <= 5 GB), 2 and 1 threads on an 8B-width slice
# (2 layers, vocab 32000, one shard); the SHA-256 floor (the four shards hashed side by side).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib PATH=$D/bin:$PATH
W=$OUT/r; mkdir -p $W
{ grep -m1 'model name' /proc/cpuinfo; nproc; lscpu | grep -iE 'thread|core|socket|MHz|L3'; free -g | head -2; df -h /dev/shm | tail -1; uname -r; } > $W/machine.txt 2>&1; cat $W/machine.txt
S=/dev/shm; M=$S/m8b; M2=$S/m8s
df11-mkmodel $M --layers 32 --hidden 4096 --intermediate 14336 --vocab 128256 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1 --threads 16 > $W/mkmodel.txt 2>&1
df11-mkmodel $M2 --layers 2 --hidden 4096 --intermediate 14336 --vocab 32000 --heads 32 --kv-heads 8 --shard-size 5GB --seed 1 --threads 16 >> $W/mkmodel.txt 2>&1
cat $W/mkmodel.txt
cat $M/*.safetensors $M2/*.safetensors > /dev/null
GB=$(cat $M/*.safetensors | wc -c | awk '{print $1/1e9}'); GB2=$(cat $M2/*.safetensors | wc -c | awk '{print $1/1e9}')
/usr/bin/time -f "sha256 floor: 4 shards side by side %e s wall (%U user %S sys)" sh -c "for f in $M/*.safetensors; do sha256sum \$f > /dev/null & done; wait" 2>> $W/sha_floor.txt
(command -v openssl >/dev/null && openssl speed -evp sha256 -bytes 1048576 -seconds 1 2>/dev/null | tail -1) >> $W/sha_floor.txt; cat $W/sha_floor.txt
T=$OUT/table.txt; echo "model $GB GB, slice $GB2 GB" > $T; cp $W/sha_floor.txt $W/machine.txt $OUT/ 2>/dev/null
run() { # name gb outdir cmd...
  local name=$1 gb=$2 out=$3; shift 3
  [ "$out" = - ] || rm -rf "$out"
  /usr/bin/time -f "%e %U %S %M" -o $W/$name.time "$@" > $W/$name.log 2>&1; local rc=$?
  local e u s kb; read e u s kb < $W/$name.time
  awk -v n=$name -v rc=$rc -v e=$e -v u=$u -v s=$s -v m=$kb -v g=$gb 'BEGIN { printf "%-8s rc=%d %6.2f s %6.2f GB/s cpu %6.1f s (%.2f/GB, user %.1f sys %.1f) rss %d MB\n", n, rc, e, g/e, u+s, (u+s)/g, u, s, m/1024 }' | tee -a $T
}
row() { # threads model gb
  local t=$1 m=$2 g=$3
  run c$t $g $S/d df11 compress $m -o $S/d -v --threads $t
  grep -h "^phases" $W/c$t.log | cut -c1-700
  run v$t $g - df11 verify $S/d --device cpu --threads $t
  run x$t $g $S/r df11 decompress $S/d -o $S/r --threads $t; rm -rf $S/r
  run z$t $g - sh -c "zstd -1 -T$t -q -c $m/*.safetensors > $S/z.zst"; rm -f $S/z.zst; rm -rf $S/d
  (cd $OUT && tar czf logs.tgz r)
}
row 16 $M $GB; row 8 $M $GB
row 2 $M2 $GB2; row 1 $M2 $GB2
row 4 $M $GB
echo "model $GB GB, slice $GB2 GB"; cat $T
