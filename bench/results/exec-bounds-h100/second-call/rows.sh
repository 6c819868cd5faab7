#!/bin/bash
# The execution layout's figures on this GPU, in order of need (the GEMM rows, the kernels'
# counts, the tests, the step, the switch), each step bounded; what has been written is tarred
# into DEST/r.tar every 20 s, so a run cut short still brings it back.
dest=$1
out=/tmp/w
mkdir -p "$out"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $name"
tbps=3.35
[[ "$name" == *H200* ]] && tbps=4.8
snap() { (cd "$out" && tar cf /tmp/r.tar . && mv /tmp/r.tar "$dest/r.tar"); }
mkdir -p .carry/N/bins && tar xJf .carry/bins.tar.xz -C .carry/N/bins
(
  # shellcheck disable=SC1091
  source python/tests/gpu/device_env.sh .carry/N "$out" > /dev/null || exit 2
  cat "$out/gpu.txt"
  bins=.carry/N/bins
  timeout 150 "$bins/compact_bench" --runs 30 --warmup 5 \
    --batch 1,8,16,32,64,65,96,128,129,160,192,224,256 > "$out/bench.txt" 2>&1
  echo "compact_bench rc $? ($SECONDS s)"
  nb=1,16,32,64,96,128,256
  timeout 200 ncu --clock-control none --kernel-name-base function \
    --kernel-name 'regex:^(wide_|split_|wgb?_)?gemm_kernel$' --print-kernel-base demangled \
    --print-units base --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size,sm__cycles_elapsed.avg.per_second \
    --csv "$bins/compact_bench" --runs 1 --warmup 0 --batch "$nb" > "$out/ncu.csv" 2> "$out/ncu.err"
  echo "ncu rc $? ($SECONDS s)"
  python3 bench/exec_bounds.py "$out/ncu.csv" --batch "$nb" --sms 132 --tbps "$tbps" > "$out/bounds.md" 2>&1
  cat "$out/bounds.md"
  timeout 300 "$bins/df11_cuda_tests" --gtest_filter='CudaExec.*' > "$out/cuda_exec_tests.log" 2>&1
  echo "CudaExec rc $? ($SECONDS s): $(grep -E '^\[  (PASSED|FAILED)' "$out/cuda_exec_tests.log" | tr '\n' ' ')"
  i=0
  for run in fused:256 decode:0; do
    i=$((i + 1))
    log=$out/step_${i}_${run%%:*}
    (cd bench && timeout 200 python3 exec_step.py --layers 8 --tokens 1,16,32,64,65,96,128,129,160,192,256 \
      --runs 30 --fused-max-tokens "${run#*:}" --json "$log.json") > "$log.log" 2>&1
    echo "step $i ${run%%:*} rc $? ($SECONDS s)"
  done
  (cd bench && python3 exec_switch.py --fused "$out/step_1_fused.json" --decode "$out/step_2_decode.json") \
    > "$out/switch.log" 2>&1
  cat "$out/switch.log"
  (cd python/tests && timeout 300 python3 -m pytest -q -p no:cacheprovider gpu/test_exec_weight.py) \
    > "$out/pytest_exec.log" 2>&1
  echo "pytest rc $? ($SECONDS s): $(tail -1 "$out/pytest_exec.log")"
) > "$out/log.txt" 2>&1 &
job=$!
while kill -0 "$job" 2> /dev/null; do sleep 20; snap; done
snap
cat "$out/log.txt"
