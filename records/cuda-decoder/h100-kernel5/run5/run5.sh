#!/usr/bin/env bash
# kernel5 helper, run 5: compute-sanitizer memcheck, racecheck, initcheck of the branch's
# final code (the session script's filters, TailPool test included), memcheck of the C API
# GPU tests.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
bash $D/session.sh $D/final $W/session memcheck racecheck initcheck > $W/session_summary.txt 2>&1; cat $W/session_summary.txt
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) " $W/session/*.log
echo "t=$SECONDS"
mkdir -p /work/wt/kernel5/build/cli && cp $D/final/df11 /work/wt/kernel5/build/cli/df11
if [ $SECONDS -lt 420 ]; then
  timeout 150 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/final/df11_capi_gpu_tests > $W/capi_gpu_memcheck.log 2>&1; echo "capi memcheck rc=$?"
  grep -E "ERROR SUMMARY|PASSED|FAILED" $W/capi_gpu_memcheck.log
fi
echo "t=$SECONDS"
(cd $OUT && tar czf run5.tgz run5 && rm -rf run5)
