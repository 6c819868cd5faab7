#!/usr/bin/env bash
# kernel5 helper, run 4: the branch's final code (v33: tail pool 40%, runs of 2, no
# environment variables): CUDA tests, C API GPU tests, four interleaved rounds against main's
# v24 binary, the full benchmark (32 blocks, fused GEMV) of both twice, ncu of the decode.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
bash $D/session.sh $D/final $W/session info tests > $W/session_summary.txt 2>&1; cat $W/session_summary.txt
grep -E "^\[  (PASSED|FAILED) " $W/session/tests.log
# df11_capi_gpu_tests run `df11 compress` from the build path they were built in.
mkdir -p /work/wt/kernel5/build/cli && cp $D/final/df11 /work/wt/kernel5/build/cli/df11
timeout 120 $D/final/df11_capi_gpu_tests > $W/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $W/capi_gpu_tests.log
for round in 1 2 3 4; do
  for v in main final; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for v in main final main final; do
  [ $SECONDS -lt 330 ] || break
  timeout 100 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.$SECONDS.log 2>&1; echo "full $v rc=$?"
done
for f in $W/full_*.log; do echo "== $(basename $f)"; grep -E '^decode \(|^  all blocks|^ +1 +0\.|^ +8 +0\.|fused, one launch ' $f | cut -c1-110; done
echo "t=$SECONDS"
[ $SECONDS -lt 420 ] && bash $D/session.sh $D/final $W/session ncu >> $W/session_summary.txt 2>&1
tail -1 $W/session_summary.txt
grep -E "Achieved Occupancy|Achieved Active Warps|Executed Ipc A|Duration|Registers Per|Theoretical Occ" $W/session/ncu.log | head -12
echo "t=$SECONDS"
(cd $OUT && tar czf run4.tgz run4 && rm -rf run4)
