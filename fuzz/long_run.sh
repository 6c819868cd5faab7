#!/usr/bin/env bash
# Long fuzzing campaign (docs/security.md): every libFuzzer target of a sanitizer build runs for
# --minutes, as --jobs parallel processes sharing one corpus directory, seeded from
# fuzz/corpus/<name>/ and spec/vectors/ (and from --resume DIR, a corpus left by an earlier
# round). Prints a Markdown table: executions summed over the processes, exec/s, coverage,
# corpus size and crashes, and exits 1 if any target found a crash, leak or timeout.
#
# Usage: fuzz/long_run.sh --build-dir build-asan --minutes 30 --out /tmp/fuzz-long
#                         [--seconds S] [--jobs 2] [--jobs-for name=N ...] [--resume DIR]
#                         [--max-len N] [--targets a,b] [--tag T]
# --targets runs only those targets; --tag T names the run's directories <name>T (a second
# campaign of one target with other options, e.g. --max-len 512 --tag -short).
# The build: cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDF11_CUDA=OFF \
#   -DDF11_SANITIZE=address,undefined -DCMAKE_C_COMPILER=clang-14 \
#   -DCMAKE_CXX_COMPILER=clang++-14 -DDF11_FUZZ=ON && cmake --build build-asan -j2
# Binaries may also sit directly in --build-dir (a copy carried to another machine).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=build-asan
minutes=30
out=${TMPDIR:-/tmp}/fuzz-long
jobs=2
seconds=
targets=
tag=
resume=
max_len=
declare -A jobs_for=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --jobs-for) jobs_for[${2%%=*}]=${2#*=}; shift 2 ;;
    --resume) resume=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --targets) targets=,$2,; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "long_run.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done

shopt -s nullglob
build_dir=$(cd "$build_dir" && pwd)
fuzzers=()
for bin in "$build_dir"/fuzz/*_fuzzer "$build_dir"/*_fuzzer; do
  [[ -z $targets || $targets == *,$(basename "$bin" _fuzzer),* ]] && fuzzers+=("$bin")
done
[[ ${#fuzzers[@]} -gt 0 ]] || { echo "long_run.sh: no *_fuzzer in $build_dir" >&2; exit 2; }
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

seconds=${seconds:-$((minutes * 60))}
started=$(date -u +%FT%TZ)
pids=()
for bin in "${fuzzers[@]}"; do
  name=$(basename "$bin" _fuzzer)
  n=${jobs_for[$name]:-$jobs}
  dir=$out/$name$tag
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/logs" "$dir/artifacts"
  seeds=("$repo/fuzz/corpus/$name" "$repo/spec/vectors")
  [[ -n $resume && -d $resume/$name$tag/corpus ]] && seeds+=("$resume/$name$tag/corpus")
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$dir/artifacts/" -jobs="$n" -workers="$n")
  [[ -n $max_len ]] && args+=(-max_len="$max_len")
  # -jobs writes fuzz-<i>.log into the working directory.
  (cd "$dir/logs" && exec "$bin" "${args[@]}" "$dir/corpus" "${seeds[@]}" > driver.log 2>&1) &
  pids+=($!)
  echo "long_run.sh: $name: $n processes for $seconds s" >&2
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

status=0
echo "Started $started, $seconds s per target; ASAN_OPTIONS=$ASAN_OPTIONS; UBSAN_OPTIONS=$UBSAN_OPTIONS."
echo
echo "| target | processes | executions | exec/s (all processes) | coverage (cov / ft, best process) | corpus files | crashes, leaks, timeouts |"
echo "|---|---:|---:|---:|---|---:|---:|"
for bin in "${fuzzers[@]}"; do
  name=$(basename "$bin" _fuzzer)
  dir=$out/$name$tag
  n=${jobs_for[$name]:-$jobs}
  runs=0
  cov=0
  ft=0
  for log in "$dir"/logs/fuzz-*.log; do
    r=$(awk '/^Done [0-9]+ runs in/ { print $2 }' "$log" | tail -1)
    runs=$((runs + ${r:-0}))
    read -r c f < <(awk '/ cov: / { for (i = 1; i < NF; i++) { if ($i == "cov:") c = $(i + 1); if ($i == "ft:") f = $(i + 1) } } END { print c + 0, f + 0 }' "$log")
    ((c > cov)) && cov=$c
    ((f > ft)) && ft=$f
  done
  found=$(find "$dir/artifacts" -type f | wc -l)
  ((found == 0)) || status=1
  files=$(find "$dir/corpus" -type f | wc -l)
  echo "| $name$tag${max_len:+ (-max_len=$max_len)} | $n | $runs | $((runs / seconds)) | $cov / $ft | $files | $found |"
done
exit $status
