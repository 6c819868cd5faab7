#!/bin/bash
# The execution layout's figures on one GPU, in one call: the figures BENCHMARKS.md gives per
# GPU (the fused GEMM against cuBLAS at every token count, the 8-block step against F.linear
# and against decode + F.linear, the execution mode's switch) and the tests that make them
# count, each step bounded in time and logged to OUT, a one-line summary per step on stdout.
#
#   bench/exec_gpu_rows.sh FILES OUT
#
# FILES: the folder of python/tests/gpu/device_env.sh (wheel/, lib/, bin/df11) and bins/
# (df11_cuda_tests and compact_bench of the same tree, built for the GPU). Run from the
# checkout's root. Environment, each optional:
#   TOKENS  the step's token counts (default 1,16,32,64,65,96,128,129,160,192,256)
#   BATCHES compact_bench's batches (default 1,8,16,32,64,65,96,128,129,160,192,224,256)
#   SAN     compute-sanitizer tools on CudaExec.WarpgroupKernelRowCountsAndCopies (default
#           "memcheck racecheck initcheck synccheck"; "" for none)
#   WANT_GPU  a part of the GPU's name (e.g. H200): on another GPU, exit 3 before any step
#   NCU     1: also Nsight Compute's counts of compact_bench's fused launches at NCU_BATCHES
#           (default 1,16,32,64,96,128,256) and bench/exec_bounds.py's table of the block's
#           launch against its issue and byte bounds (ncu.csv, bounds.md); NCU_TBPS the GPU's
#           DRAM bandwidth in TB/s (default 3.35, an H100 SXM; an H200 has 4.8)
# OUT: gpu.txt, cuda_exec_tests.log, san_TOOL.log, bench.txt, pytest_exec.log,
# step_{1_fused,2_decode,3_fused}.{json,log} (bench/exec_step.py fused up to 256 tokens,
# decoded at every count, fused again), switch.log (bench/exec_switch.py on the three),
# tune.log and switches.json (`python -m df11.tune --mode all`), and r.tar of all of them. The exit status is 1 if a test step failed.
set -u
files=$(cd "${1:?usage: exec_gpu_rows.sh FILES OUT}" && pwd) || exit 2
out=${2:?usage: exec_gpu_rows.sh FILES OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
tokens=${TOKENS:-1,16,32,64,65,96,128,129,160,192,256}
batches=${BATCHES:-1,8,16,32,64,65,96,128,129,160,192,224,256}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ -n "${WANT_GPU:-}" ] && [[ "$name" != *"$WANT_GPU"* ]]; then
  echo "not a $WANT_GPU GPU: $name"
  exit 3
fi
# shellcheck disable=SC1091  # sourced from the checkout: python/tests/gpu/device_env.sh
source "$repo/python/tests/gpu/device_env.sh" "$files" "$out" > /dev/null || exit 2
cat "$out/gpu.txt"
bins=$files/bins
rc=0

timeout 300 "$bins/df11_cuda_tests" --gtest_filter='CudaExec.*' > "$out/cuda_exec_tests.log" 2>&1
status=$?
[ "$status" -eq 0 ] || rc=1
echo "CudaExec rc $status ($SECONDS s): $(grep -E '^\[  (PASSED|FAILED)' "$out/cuda_exec_tests.log" | tr '\n' ' ')"
for tool in ${SAN-memcheck racecheck initcheck synccheck}; do
  timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 1 "$bins/df11_cuda_tests" \
    --gtest_filter='CudaExec.WarpgroupKernelRowCountsAndCopies' > "$out/san_$tool.log" 2>&1
  status=$?
  [ "$status" -eq 0 ] || rc=1
  echo "$tool rc $status ($SECONDS s): $(grep -E 'SUMMARY' "$out/san_$tool.log" | tail -1)"
done

timeout 150 "$bins/compact_bench" --runs 30 --warmup 5 --batch "$batches" > "$out/bench.txt" 2>&1
echo "compact_bench rc $? ($SECONDS s): batch, cuBLAS ms, 12-bit a launch per matrix, one call, decode + cuBLAS"
awk '/^batch/ {on = 1; next} on && NF == 0 {exit}
  on {n = 0; for (i = 2; i <= NF; i++) if ($i !~ /^\(/) v[++n] = $i; print "   ", $1, v[1], v[2], v[4], v[6]}' \
  "$out/bench.txt"

(cd "$repo/python/tests" && timeout 300 python3 -m pytest -q -p no:cacheprovider gpu/test_exec_weight.py \
  gpu/test_tune_gpu.py) \
  > "$out/pytest_exec.log" 2>&1
status=$?
[ "$status" -eq 0 ] || rc=1
echo "pytest rc $status ($SECONDS s): $(tail -1 "$out/pytest_exec.log")"

i=0
for run in fused:256 decode:0 fused:256; do
  i=$((i + 1))
  log=$out/step_${i}_${run%%:*}
  (cd "$repo/bench" && timeout 200 python3 exec_step.py --layers 8 --tokens "$tokens" --runs 30 \
    --fused-max-tokens "${run#*:}" --json "$log.json") > "$log.log" 2>&1
  echo "step $i ${run%%:*} rc $? ($SECONDS s)"
  grep -E ' step ' "$log.log"
done
(cd "$repo/bench" && python3 exec_switch.py --fused "$out/step_1_fused.json" \
  "$out/step_3_fused.json" --decode "$out/step_2_decode.json") > "$out/switch.log" 2>&1
cat "$out/switch.log"
# The same decision as users make it: python -m df11.tune, its file kept beside the steps.
timeout 300 python3 -m df11.tune --mode all --file "$out/switches.json" > "$out/tune.log" 2>&1
echo "df11.tune rc $? ($SECONDS s)"
grep -E '^switch|tokens  fused' "$out/tune.log"
if [ "${NCU:-0}" = 1 ]; then
  nb=${NCU_BATCHES:-1,16,32,64,96,128,256}
  timeout 400 ncu --clock-control none --kernel-name-base function \
    --kernel-name 'regex:^(wide_|split_|wgb?_)?gemm_kernel$' --print-kernel-base demangled \
    --print-units base --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size,sm__cycles_elapsed.avg.per_second \
    --csv "$bins/compact_bench" --runs 1 --warmup 0 --batch "$nb" > "$out/ncu.csv" 2> "$out/ncu.err"
  echo "ncu rc $? ($SECONDS s)"
  sms=$(python3 -c "import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)")
  python3 "$repo/bench/exec_bounds.py" "$out/ncu.csv" --batch "$nb" --sms "$sms" \
    --tbps "${NCU_TBPS:-3.35}" > "$out/bounds.md" 2>&1
  cat "$out/bounds.md"
fi
tar cf "$out/r.tar" -C "$out" --exclude r.tar .
echo "== end ($SECONDS s), rc $rc"
exit $rc
