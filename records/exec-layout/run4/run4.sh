#!/usr/bin/env bash
# h20 device run 4: the C API GPU tests (libdf11.so, with the df11 tool making the folder) and
# `df11 bench gemv` (text, full; JSON, short) from the CLI.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
o=${OUT:-/tmp/out}; mkdir -p $o
t0=$SECONDS
# The test finds the df11 tool under the build directory it was compiled in.
mkdir -p /work/wt/h20/build-cuda/cli && ln -sf $here/bin/df11 /work/wt/h20/build-cuda/cli/df11
export LD_LIBRARY_PATH=$here/bin/lib
timeout 200 bin/df11_capi_gpu_tests > $o/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$? $((SECONDS-t0))s"
timeout 150 bin/df11 bench gemv --batch 1,2,4,8,16 --runs 30 --warmup 5 --model-blocks 32 > $o/bench_gemv_cli.log 2>&1; echo "df11 bench gemv rc=$? $((SECONDS-t0))s"
timeout 100 bin/df11 bench gemv --batch 1,16 --runs 5 --warmup 2 --model-blocks 0 --json > $o/bench_gemv_cli.json 2>&1; echo "df11 bench gemv --json rc=$? $((SECONDS-t0))s"
grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|Failure' $o/capi_gpu_tests.log | head
grep -E -A14 '^Execution layout' $o/bench_gemv_cli.log
python3 -c "import json,sys; d=json.load(open('$o/bench_gemv_cli.json')); print('json ok:', d['ok'], 'exec rows:', [(r['batch'], round(r['fused_vs_cublas'],2), r['fused_equals_reference']) for r in d['exec']['rows']])"
