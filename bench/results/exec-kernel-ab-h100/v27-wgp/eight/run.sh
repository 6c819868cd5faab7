#!/bin/bash
# wgp with 8 producer warps (chunks up to 192 rows) against main's kernels; tests of P8.
set -u
C=$PWD/.carry; R=$OUT/r; mkdir -p $R
cd /tmp && tar xJf $C/V.tar.xz && cd - > /dev/null
export LD_LIBRARY_PATH=$C/N/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
i=0
for v in A P8 P8L P8L P8 A; do
  i=$((i + 1))
  timeout 60 /tmp/V/$v/compact_bench --runs 20 --warmup 3 --batch 96,128,129,160,192,256 > $R/${i}_$v.txt 2>&1
  echo "run $i $v rc $? ($SECONDS s): $(awk '/^batch/ {on = 1; next} on && NF == 0 {exit} on {printf "%s %s %s | ", $1, $2, $6}' $R/${i}_$v.txt)"
done
timeout 100 /tmp/V/P8/df11_cuda_tests --gtest_filter='CudaExec.*' > $R/tests_P8.log 2>&1
echo "P8 tests rc $? ($SECONDS s): $(grep -E '^\[  (PASSED|FAILED)|FAILED  \]' $R/tests_P8.log | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool /tmp/V/P8/df11_cuda_tests --gtest_filter='CudaExec.WarpgroupKernelRowCountsAndCopies' > $R/san_P8_$tool.log 2>&1
  echo "P8 $tool rc $? ($SECONDS s): $(grep -E 'SUMMARY' $R/san_P8_$tool.log | tail -1)"
done
tar cf $OUT/r.tar -C $OUT r
echo "== end ($SECONDS s)"
