#!/usr/bin/env bash
# kernel4 helper, run 3: v29 diagnostic. k4 with DF11_DECODE_CLUSTER unset runs main's
# decode_blocks (static ranges), 1: v28's loop without a cluster, 2: with clusters of 2.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k4r3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
dec() { # name bin cluster(empty: unset)
  if [ -z "$3" ]; then
    timeout 60 env -u DF11_DECODE_CLUSTER $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
  else
    DF11_DECODE_CLUSTER=$3 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
  fi
}
for round in 1 2 3; do
  dec main_$round main ""
  dec static_$round k4 ""
  dec c1_$round k4 1
  dec c2_$round k4 2
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for c in "" 2; do
  if [ -z "$c" ]; then timeout 60 $D/k4/df11_cuda_tests > $W/tests_static.log 2>&1; echo "tests static rc=$?"
  else DF11_DECODE_CLUSTER=$c timeout 60 $D/k4/df11_cuda_tests > $W/tests_c$c.log 2>&1; echo "tests c$c rc=$?"; fi
done
grep -E "^\[  (PASSED|FAILED) " $W/tests_*.log
echo "t=$SECONDS"
for round in 1 2; do
  for b in main k4; do
    [ $SECONDS -lt 300 ] || break
    timeout 100 $D/$b/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_${b}_$round.log 2>&1; echo "full $b $round rc=$?"
    grep -E '^decode \(|^  all blocks|^ +1 +0\.' $W/full_${b}_$round.log | cut -c1-120
  done
done
echo "t=$SECONDS"
(cd $OUT && tar czf k4r3.tgz k4r3 && rm -rf k4r3)
