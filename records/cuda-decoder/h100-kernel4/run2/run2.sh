#!/usr/bin/env bash
# kernel4 helper, run 2: decode v28 (v27 with the take at the start of the iteration; cluster
# size from DF11_DECODE_CLUSTER) against main's v24 binary: A/B rounds first, tests and
# sanitizers of the cluster path (C = 2), the 32-block line, the fused kernel's rows.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k4r2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
dec() { # name bin cluster
  DF11_DECODE_CLUSTER=$3 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
}
for round in 1 2 3; do
  dec main_$round main 1
  for c in 1 2 4; do dec c${c}_$round k4 $c; done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for c in 1 2 4; do
  DF11_DECODE_CLUSTER=$c timeout 60 $D/k4/df11_cuda_tests > $W/tests_c$c.log 2>&1; echo "tests c$c rc=$?"
  grep -E "^\[  (PASSED|FAILED) " $W/tests_c$c.log
done
echo "t=$SECONDS"
export DF11_DECODE_CLUSTER=2
bash bench/cuda_gpu_session.sh $D/k4 $W/san_c2 memcheck racecheck initcheck 2>&1 | sed "s/^/c2 /"
echo "t=$SECONDS"
unset DF11_DECODE_CLUSTER
for v in main:1 k4:2 k4:1; do
  [ $SECONDS -lt 300 ] || break
  b=${v%%:*}; c=${v##*:}
  DF11_DECODE_CLUSTER=$c timeout 100 $D/$b/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_${b}_c$c.log 2>&1; echo "full $v rc=$?"
  grep -E '^decode|^  all blocks|^ +[0-9]+ +0\.|^fused|^verified' $W/full_${b}_c$c.log | cut -c1-120
done
echo "t=$SECONDS"
(cd $OUT && tar czf k4r2.tgz k4r2 && rm -rf k4r2)
