#!/usr/bin/env bash
# kernel4 helper, run 5: decode v30 (ranges weighted by dispatch wave; weights from
# DF11_WAVE_WEIGHTS in this diagnostic build) against main's v24 binary, interleaved rounds;
# a traced build (trace/) at 5,4,3; tests of the weighted path.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k4r5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
dec() { # name bin weights(empty: unset)
  if [ -z "$3" ]; then
    timeout 60 env -u DF11_WAVE_WEIGHTS $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
  else
    DF11_WAVE_WEIGHTS=$3 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
  fi
}
for round in 1 2 3; do
  dec main_$round main ""
  dec eq_$round k4 ""
  dec w111_$round k4 1,1,1
  dec w11109_$round k4 11,10,9
  dec w654_$round k4 6,5,4
  dec w543_$round k4 5,4,3
  dec w432_$round k4 4,3,2
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for w in 5,4,3 1,1,1; do
  DF11_TRACE=$W/trace_$w.txt DF11_WAVE_WEIGHTS=$w timeout 60 $D/trace/df11-cuda-bench --runs 4 --warmup 1 --model-blocks 0 --no-gemv > $W/dec_trace_$w.log 2>&1; echo "trace $w rc=$?"
done
for w in 5,4,3 4,3,2; do
  DF11_WAVE_WEIGHTS=$w timeout 60 $D/k4/df11_cuda_tests > $W/tests_$w.log 2>&1; echo "tests $w rc=$?"
  grep -E "^\[  (PASSED|FAILED) " $W/tests_$w.log
done
echo "t=$SECONDS"
for v in main: k4:5,4,3 k4:6,5,4; do
  [ $SECONDS -lt 330 ] || break
  b=${v%%:*}; w=${v#*:}
  DF11_WAVE_WEIGHTS=$w timeout 100 $D/$b/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 --no-gemv > $W/full_${b}_$w.log 2>&1; echo "full $v rc=$?"
  grep -E '^decode \(|^  all blocks' $W/full_${b}_$w.log | cut -c1-120
done
echo "t=$SECONDS"
(cd $OUT && tar czf k4r5.tgz k4r5 && rm -rf k4r5)
