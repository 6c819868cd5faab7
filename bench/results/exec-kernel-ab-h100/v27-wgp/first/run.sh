#!/bin/bash
# wgp (warp-specialized, decode once) against main's kernels: tests, sanitizers, A/B.
set -u
C=$PWD/.carry; R=$OUT/r; mkdir -p $R
cd /tmp && tar xJf $C/V.tar.xz && cd - > /dev/null
export LD_LIBRARY_PATH=$C/N/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
TESTS_TIMEOUT=100 BENCH_TIMEOUT=60 bash bench/exec_variants_ab.sh /tmp/V $R/ab "A P65 P P P65 A" 65,96,128,129,160,192,224,256
echo "ab rc $? ($SECONDS s)"
for tool in memcheck racecheck initcheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool /tmp/V/P65/df11_cuda_tests --gtest_filter='CudaExec.WarpgroupKernelRowCountsAndCopies' > $R/san_P65_$tool.log 2>&1
  echo "P65 $tool rc $? ($SECONDS s): $(grep -E 'SUMMARY' $R/san_P65_$tool.log | tail -1)"
done
tar cf $OUT/r.tar -C $OUT r
echo "== end ($SECONDS s)"
