#!/bin/bash
# usage: bash .carry/check.sh OUT  -- C++ exec tests, sanitizers and the package's exec GPU tests on C32
set -u
OUT=$1; R=$PWD
[ -d .carry/me ] || tar xJf .carry/ms.tar.xz -C .carry
mkdir -p $OUT
L=/tmp/lib-C32; mkdir -p $L && cp .carry/me/lib/* $L/ && cp .carry/ms/C32/libdf11.so.0 $L/
export LD_LIBRARY_PATH=$L DF11_LIBRARY_DIR=$L DF11_TOOLS_LIBRARY_DIR=$L PYTHONPATH=$R/python PYTHONUNBUFFERED=1
T=.carry/df11_cuda_tests
start=${START:-$(date +%s)}
left() { echo $(( ${LIMIT:-540} - ($(date +%s) - start) )); }
timeout $(( $(left) < 120 ? $(left) : 120 )) $T --gtest_filter='CudaExec*' > $OUT/cudaexec.log 2>&1; echo "CudaExec rc=$?"; tail -3 $OUT/cudaexec.log
F='CudaExec.RaggedShapesEveryBatchUnalignedX:CudaExec.ExceptionHeavyMatrices:CudaExec.CorruptBlobsReportedNothingWrittenOutside:CudaExec.LlamaMemberShapes'
for tool in memcheck initcheck; do
  [ $(left) -lt 40 ] && { echo "skip $tool"; continue; }
  timeout $(( $(left) < 150 ? $(left) - 10 : 150 )) compute-sanitizer --tool $tool --error-exitcode 9 $T --gtest_filter="$F" > $OUT/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/san_$tool.log | tail -3
done
[ $(left) -gt 60 ] && timeout $(( $(left) - 40 )) compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter='CudaExec.RaggedShapesEveryBatchUnalignedX:CudaExec.CorruptBlobsReportedNothingWrittenOutside' > $OUT/san_racecheck.log 2>&1
echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/san_racecheck.log | tail -3
[ $(left) -gt 30 ] && timeout $(( $(left) - 10 )) python3 -m pytest -q -p no:cacheprovider python/tests/gpu/test_exec_weight.py > $OUT/pytest_exec.log 2>&1
echo "pytest rc=$?"; tail -2 $OUT/pytest_exec.log
