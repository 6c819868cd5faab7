#!/bin/bash
# Runs the builds of bench/exec_wgb_variants.sh against each other on one GPU, in one call: each
# variant's CudaExec tests, then compact_bench in a paired order, each run's file kept whole.
#
#   bench/exec_variants_ab.sh VARIANTS OUT "A B B A" [BATCHES]
#
# VARIANTS: the folder of exec_wgb_variants.sh (VARIANTS/NAME/{compact_bench,df11_cuda_tests}).
# OUT: OUT/gpu.txt, OUT/tests_NAME.log per variant, OUT/I_NAME.txt per run (compact_bench --runs
# 30 --warmup 5 --batch BATCHES, default 33,48,64,80,96,112,128,160,192,256), and the one-call
# column of every run on stdout. Each step is bounded in time; the exit status is 1 if a
# variant's tests fail.
set -u
dir=${1:?usage: exec_variants_ab.sh VARIANTS OUT ORDER [BATCHES]}
out=${2:?usage: exec_variants_ab.sh VARIANTS OUT ORDER [BATCHES]}
order=${3:?usage: exec_variants_ab.sh VARIANTS OUT ORDER [BATCHES]}
batches=${4:-33,48,64,80,96,112,128,160,192,256}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
rc=0
# shellcheck disable=SC2086
for v in $(printf '%s\n' $order | sort -u); do
  timeout "${TESTS_TIMEOUT:-300}" "$dir/$v/df11_cuda_tests" --gtest_filter='CudaExec.*' \
    > "$out/tests_$v.log" 2>&1
  status=$?
  echo "tests $v: rc $status, $(grep -E '^\[  (PASSED|FAILED)' "$out/tests_$v.log" | tr '\n' ' ')"
  [ "$status" -eq 0 ] || rc=1
done
i=0
for v in $order; do
  i=$((i + 1))
  timeout "${BENCH_TIMEOUT:-120}" "$dir/$v/compact_bench" --runs 30 --warmup 5 \
    --batch "$batches" > "$out/${i}_$v.txt" 2>&1
  echo "run $i $v: rc $? (batch, cuBLAS ms, 12-bit one call ms)"
  awk '/^batch/ {on = 1; next} on && NF == 0 {exit} on {print "  ", $1, $2, $6, $7}' \
    "$out/${i}_$v.txt"
done
exit $rc
