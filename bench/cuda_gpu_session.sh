#!/usr/bin/env bash
# The CUDA decoder on one GPU machine: tests, compute-sanitizer (memcheck, racecheck,
# initcheck), the benchmark and an Nsight Compute profile of the decode kernel, each step
# logged to OUT_DIR and bounded in time. Binaries come prebuilt for the GPU's architecture:
#
#   bench/cuda_gpu_session.sh BIN_DIR OUT_DIR [steps...]   (steps: info tests memcheck
#                                      racecheck initcheck bench ab ncu ncu_fused source
#                                      source_fused)
#
# `source` and `source_fused` profile one launch of the decode kernel (fused kernel at batch 1)
# with the full set and keep its summary (`<name>.log`) and its SASS source page as CSV
# (`<name>.csv`), which bench/sass_attribution.py attributes to
# source lines against `nvdisasm -g -c` of the same binary's cubin.
#
# `ab` times BIN_DIR against the baseline build in AB_BASE on the same machine (interleaved
# rounds, one log per benchmark process), the comparison every kernel change needs.
#
# BIN_DIR holds df11_cuda_tests and df11-cuda-bench (and lib/ with any shared library the
# machine lacks). A short summary of every step is printed last.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
shift 2
steps=${*:-info tests memcheck racecheck initcheck bench ncu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=()

step() {  # step NAME SECONDS command...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$name: rc=$rc, $((SECONDS - t0)) s, $(grep -E -m1 'PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY|decode \(one launch\)' "$out/$name.log" | head -c 160)")
}

# One launch (the 4th, after 3 warm-up runs) of the kernels matching REGEX, profiled with the
# full set: the summary to $out/NAME.log, the SASS source page to $out/NAME.csv.
source_profile() {  # source_profile NAME REGEX df11-cuda-bench-arguments...
  local name=$1 regex=$2
  shift 2
  step "${name}_run" 400 ncu --clock-control none --kernel-name "regex:$regex" --launch-skip 3 \
    --launch-count 1 --set full -f -o "$out/$name" "$bin/df11-cuda-bench" --runs 1 --warmup 3 \
    --model-blocks 0 "$@"
  ncu --import "$out/$name.ncu-rep" >"$out/$name.log" 2>&1
  ncu --import "$out/$name.ncu-rep" --page source --print-source sass --csv >"$out/$name.csv" 2>&1
  rm -f "$out/$name.ncu-rep"
}

# Sanitizer runs leave out the multi-megabyte cases and the long corruption sweep, unless
# SANITIZE_ALL=1 (every GPU test, every case).
small_filter='CudaDecode.*:CudaGemv.*:-CudaDecode.CorruptStreamsAgreeWithReference'
race_filter='CudaDecode.EveryCase*:CudaDecode.OneLaunch*:CudaDecode.Hostile*:CudaDecode.TailPool*:CudaGemv.*'
init_filter='CudaDecode.EveryCase*:CudaDecode.ManySmall*:CudaDecode.TailPool*:CudaGemv.*'
small_env=DF11_CUDA_TEST_SMALL=1
if [ "${SANITIZE_ALL:-0}" = 1 ]; then
  small_filter='CudaDecode.*:CudaGemv.*'
  race_filter='CudaDecode.*:CudaGemv.*'
  init_filter='CudaDecode.*:CudaGemv.*'
  small_env=DF11_CUDA_TEST_ALL=1
fi

for s in $steps; do
  case $s in
    info)
      nvidia-smi >"$out/info.log" 2>&1
      { nvcc --version; compute-sanitizer --version; ncu --version; ldd "$bin/df11_cuda_tests"; } \
        >>"$out/info.log" 2>&1
      summary+=("info: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader)")
      ;;
    tests) step tests 60 "$bin/df11_cuda_tests" ;;
    memcheck)
      step memcheck 220 env "$small_env" compute-sanitizer --tool memcheck \
        --leak-check full --error-exitcode 9 "$bin/df11_cuda_tests" --gtest_filter="$small_filter" ;;
    racecheck)
      step racecheck 240 env "$small_env" compute-sanitizer --tool racecheck \
        --racecheck-report hazard --error-exitcode 9 "$bin/df11_cuda_tests" \
        --gtest_filter="$race_filter" ;;
    initcheck)
      step initcheck 150 env "$small_env" compute-sanitizer --tool initcheck \
        --error-exitcode 9 "$bin/df11_cuda_tests" --gtest_filter="$init_filter" ;;
    # BENCH_EXTRA: more options, e.g. "--dump DIR".
    bench) step bench 400 "$bin/df11-cuda-bench" --runs 20 --warmup 5 --model-blocks 32 \
             ${BENCH_EXTRA:-} ;;
    ab)  # A/B on the same machine against a baseline build (AB_BASE: a folder with its
         # df11-cuda-bench): AB_ROUNDS interleaved rounds of the decode rows, then AB_FULL
         # interleaved full runs (fused rows, model line) of each
      if [ -z "${AB_BASE:-}" ] || [ ! -x "$AB_BASE/df11-cuda-bench" ]; then
        summary+=("ab: AB_BASE must name a folder holding the baseline's df11-cuda-bench")
      else
        for r in $(seq "${AB_ROUNDS:-3}"); do
          for side in new base; do
            b=$bin; [ $side = base ] && b=$AB_BASE
            step "ab_dec_${side}_$r" 60 "$b/df11-cuda-bench" --runs 20 --warmup 5 \
              --model-blocks 0 --no-gemv
          done
        done
        for r in $(seq "${AB_FULL:-2}"); do
          for side in new base; do
            b=$bin; [ $side = base ] && b=$AB_BASE
            step "ab_full_${side}_$r" 120 "$b/df11-cuda-bench" --runs 20 --warmup 5 \
              --model-blocks 32
          done
        done
      fi ;;
    ncu)
      step ncu 400 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 \
        --launch-count 1 --set full "$bin/df11-cuda-bench" --runs 1 --warmup 3 \
        --model-blocks 0 --no-gemv ;;
    ncu_fused)  # one fused decode+GEMV launch at batch 1 (the 4th: after 3 warm-up runs)
      step ncu_fused 400 ncu --clock-control none --kernel-name regex:fused_gemv_kernel \
        --launch-skip 3 --launch-count 1 --set full "$bin/df11-cuda-bench" --runs 1 --warmup 3 \
        --model-blocks 0 ;;
    source) source_profile decode_source decode_kernel --no-gemv ;;
    source_fused) source_profile fused_source fused_gemv_kernel ;;
    *) echo "unknown step $s" >&2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
