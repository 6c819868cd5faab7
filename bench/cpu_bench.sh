#!/usr/bin/env bash
# CPU benchmark of the df11 tool, file to file, on this machine:
#   1. df11-mkmodel writes a Llama-shaped BF16 checkpoint of --size bytes (default 2.5GB), and
#      its files are read once so that every step starts with a warm page cache;
#   2. each step runs --runs times (default 3; the median wall time counts) under
#      /usr/bin/time -v (peak RSS) with a wall-clock timer, each run after `sync`:
#      df11 compress, df11 decompress, df11 verify, df11 verify --against, and, for scale,
#      zstd -1 -T2 (and zstd -d) on the same safetensors bytes;
#   3. a Markdown table with the targets (compress >= 1 GB/s, CPU decode >= 1.5 GB/s, peak RSS
#      <= 1.5 x the largest group's BF16 size + 256 MB) and the machine's load goes to stdout
#      and replaces the "## CPU (2-core machine)" section of BENCHMARKS.md (other sections are
#      left as they are).
#
# Usage: bench/cpu_bench.sh [--build-dir build] [--size 2.5GB] [--work /tmp/df11-cpu-bench]
#                           [--threads N] [--runs 3] [--keep] [--no-write]
# Rates are BF16 bytes (the original safetensors files) per second of wall time, GB = 1e9.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=build
size=2.5GB
work=${TMPDIR:-/tmp}/df11-cpu-bench
threads=0
keep=0
write=1
runs=3
command_line="bench/cpu_bench.sh $*"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --no-write) write=0; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "cpu_bench.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
command_line=${command_line% }

cd "$repo"
df11=$build_dir/cli/df11
mkmodel=$build_dir/tools/df11-mkmodel
for bin in "$df11" "$mkmodel"; do
  [[ -x $bin ]] || { echo "cpu_bench.sh: $bin not built (cmake --build $build_dir --target df11 df11-mkmodel)" >&2; exit 2; }
done
if [[ ! -x /usr/bin/time ]]; then
  echo "cpu_bench.sh: installing GNU time for peak RSS" >&2
  if [[ $(id -u) -eq 0 ]]; then apt-get install -y -qq time >/dev/null; else sudo apt-get install -y -qq time >/dev/null; fi
fi
command -v zstd >/dev/null || { echo "cpu_bench.sh: the zstd tool is needed for the baseline" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cpu_bench.sh: python3 is needed to read df11 inspect --json" >&2; exit 2; }

threads_opt=()
[[ $threads -gt 0 ]] && threads_opt=(--threads "$threads")
cores=$(nproc)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

rm -rf "$work"
mkdir -p "$work"
bf16=$work/bf16
out=$work/df11
restored=$work/restored
log=$work/log
mkdir -p "$log"

echo "== generating the model ($size)" >&2
"$mkmodel" "$bf16" --size "$size" --seed 1 "${threads_opt[@]}" | tee "$log/mkmodel.txt" >&2
sync                        # the generator's writeback must not overlap the first step
cat "$bf16"/* > /dev/null  # warm page cache
bf16_bytes=$(cat "$bf16"/*.safetensors | wc -c)

# run_step NAME OUTPUT CMD...: runs CMD $runs times under /usr/bin/time -v, each time after
# removing OUTPUT (a path the step writes; "-" for none) and flushing dirty pages (sync), so
# that no run waits on the previous run's writeback; sets wall (s, the median run's), rss_kb
# (the largest), cpu_pct and cpu_s (the median run's) and walls (every run's, in order).
run_step() {
  local name=$1 output=$2; shift 2
  echo "== $name ($runs runs): $*" >&2
  local i t0 t1 w
  local -a all=()
  for ((i = 1; i <= runs; i++)); do
    [[ $output == - ]] || rm -rf "$output"
    sync
    t0=$(date +%s.%N)
    if ! /usr/bin/time -v -o "$log/$name.$i.time" "$@" > "$log/$name.out" 2>&1; then
      echo "cpu_bench.sh: step '$name' failed:" >&2
      cat "$log/$name.out" >&2
      exit 1
    fi
    t1=$(date +%s.%N)
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    all+=("$w $i")
  done
  local median
  median=$(printf '%s\n' "${all[@]}" | sort -n | awk -v n="$runs" 'NR == int((n + 1) / 2) { print $2 }')
  wall=$(printf '%s\n' "${all[@]}" | awk -v i="$median" '$2 == i { print $1 }')
  walls=$(printf '%s\n' "${all[@]}" | awk '{ printf "%s%s", sep, $1; sep = ", " }')
  rss_kb=$(cat "$log/$name".*.time | awk -F': ' '/Maximum resident set size/ { if ($2 > m) m = $2 } END { print m }')
  cpu_pct=$(awk -F': ' '/Percent of CPU this job got/ { print $2 }' "$log/$name.$median.time")
  cpu_s=$(awk -F': ' '/User time|System time/ { t += $2 } END { printf "%.2f", t }' "$log/$name.$median.time")
  cat "$log/$name.out" >&2
}

declare -A step_cmd step_wall step_rss step_cpu step_cpu_s step_walls
record() {  # record NAME "display command"
  step_cmd[$1]=$2; step_wall[$1]=$wall; step_rss[$1]=$rss_kb; step_cpu[$1]=$cpu_pct
  step_cpu_s[$1]=$cpu_s; step_walls[$1]=$walls
}

run_step compress "$out" "$df11" compress "$bf16" -o "$out" -q "${threads_opt[@]}"
record compress "df11 compress bf16 -o df11"
run_step decompress "$restored" "$df11" decompress "$out" -o "$restored" -q "${threads_opt[@]}"
record decompress "df11 decompress df11 -o restored"
# The restored files must be the originals, byte for byte (not timed).
(cd "$bf16" && sha256sum -- * | sort -k2) > "$log/original.sha256"
(cd "$restored" && sha256sum -- * | sort -k2) > "$log/restored.sha256"
diff -q "$log/original.sha256" "$log/restored.sha256" >/dev/null ||
  { echo "cpu_bench.sh: restored files differ from the originals" >&2; exit 1; }
rm -rf "$restored"
run_step verify - "$df11" verify "$out" --device cpu -q "${threads_opt[@]}"
record verify "df11 verify df11 --device cpu"
run_step verify_against - "$df11" verify "$out" --against "$bf16" --device cpu -q "${threads_opt[@]}"
record verify_against "df11 verify df11 --against bf16 --device cpu"
zstd_threads=${threads:-0}
[[ $zstd_threads -gt 0 ]] || zstd_threads=$cores
run_step zstd "$work/model.zst" sh -c "zstd -1 -T$zstd_threads -q -c \"$bf16\"/*.safetensors > \"$work/model.zst\""
record zstd "zstd -1 -T$zstd_threads -c bf16/*.safetensors > model.zst"
run_step zstd_d "$work/model.unzst" sh -c "zstd -d -q -c \"$work/model.zst\" > \"$work/model.unzst\""
record zstd_d "zstd -d -c model.zst > model.unzst"
rm -f "$work/model.unzst"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

df11_bytes=$(cat "$out"/*.safetensors | wc -c)
zstd_bytes=$(wc -c < "$work/model.zst")
"$df11" inspect "$out" --json > "$log/inspect.json"
read -r largest_group largest_bytes groups < <(python3 - "$log/inspect.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
g = max(r["groups"], key=lambda g: g["bf16_bytes"])
print(g["name"], g["bf16_bytes"], len(r["groups"]))
EOF
)

table=$(python3 - <<EOF
bf16 = $bf16_bytes
largest = $largest_bytes
rss_limit = 1.5 * largest + 256e6
steps = [
    ("compress", "${step_cmd[compress]}", ${step_wall[compress]}, ${step_rss[compress]}, "${step_cpu[compress]}", ${step_cpu_s[compress]}, "${step_walls[compress]}", 1.0),
    ("decompress", "${step_cmd[decompress]}", ${step_wall[decompress]}, ${step_rss[decompress]}, "${step_cpu[decompress]}", ${step_cpu_s[decompress]}, "${step_walls[decompress]}", 1.5),
    ("verify", "${step_cmd[verify]}", ${step_wall[verify]}, ${step_rss[verify]}, "${step_cpu[verify]}", ${step_cpu_s[verify]}, "${step_walls[verify]}", 1.5),
    ("verify --against", "${step_cmd[verify_against]}", ${step_wall[verify_against]}, ${step_rss[verify_against]}, "${step_cpu[verify_against]}", ${step_cpu_s[verify_against]}, "${step_walls[verify_against]}", 1.5),
    ("zstd -1 (scale)", "${step_cmd[zstd]}", ${step_wall[zstd]}, ${step_rss[zstd]}, "${step_cpu[zstd]}", ${step_cpu_s[zstd]}, "${step_walls[zstd]}", None),
    ("zstd -d (scale)", "${step_cmd[zstd_d]}", ${step_wall[zstd_d]}, ${step_rss[zstd_d]}, "${step_cpu[zstd_d]}", ${step_cpu_s[zstd_d]}, "${step_walls[zstd_d]}", None),
]
def mb(b): return f"{b / 1e6:,.0f} MB"
print("| step | command | wall s (median) | GB/s (BF16) | CPU | CPU s | GB per CPU-s | peak RSS | targets | met | every run, s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
for name, cmd, wall, rss_kb, cpu, cpu_s, walls, target in steps:
    rate = bf16 / wall / 1e9
    rss = rss_kb * 1024
    if target is None:
        targets, met = "-", "-"
    else:
        what = "compress" if name == "compress" else "decode"
        targets = f">= {target} GB/s; RSS <= {mb(rss_limit)}"
        ok_rate, ok_rss = rate >= target, rss <= rss_limit
        met = ("yes" if ok_rate and ok_rss else
               "no: " + ", ".join(x for x, ok in (("speed", ok_rate), ("RSS", ok_rss)) if not ok))
    per_cpu = bf16 / cpu_s / 1e9 if cpu_s > 0 else float("nan")
    print(f"| {name} | \`{cmd}\` | {wall:.2f} | {rate:.2f} | {cpu} | {cpu_s:.2f} | {per_cpu:.2f} | {mb(rss)} | {targets} | {met} | {walls} |")
EOF
)

ratio_df11=$(awk -v a="$df11_bytes" -v b="$bf16_bytes" 'BEGIN { printf "%.4f", a / b }')
ratio_zstd=$(awk -v a="$zstd_bytes" -v b="$bf16_bytes" 'BEGIN { printf "%.4f", a / b }')
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
model_line=$(head -1 "$log/mkmodel.txt")
section=$(cat <<EOF
## CPU (2-core machine)

Measured $(date -u +%Y-%m-%d) at commit \`$commit\` with \`$command_line\` (build: \`$build_dir\`,
CMAKE_BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$build_dir/CMakeCache.txt" 2>/dev/null || echo '?')).
Machine: $cores cores ($cpu); load average before $load_before, after $load_after.

Model: \`df11-mkmodel bf16 --size $size --seed 1\` -> ${model_line#*: }; $(awk -v b="$bf16_bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }') of
safetensors in $(ls "$bf16"/*.safetensors | wc -l) file(s), page cache warm (files read once before the first step).
DF11: $(awk -v b="$df11_bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }') (ratio $ratio_df11), $groups groups; largest group \`$largest_group\` = $(awk -v b="$largest_bytes" 'BEGIN { printf "%.0f MB", b / 1e6 }') BF16.
zstd -1: $(awk -v b="$zstd_bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }') (ratio $ratio_zstd).
Each step runs $runs times, file to file, each run after \`sync\` (df11 fsyncs its outputs
before renaming them into place, so its wall time includes getting them to disk; zstd writes to
the page cache only); restored files checked byte-identical by sha256; the median run counts:
GB/s = BF16 bytes / its wall seconds; CPU = user+sys over wall
(200% = both cores), CPU s = user+sys seconds, GB per CPU-s = BF16 bytes / CPU s (what one
core does alone: under load the wall-clock rate falls, this one much less); peak RSS (the largest of the runs) from
\`/usr/bin/time -v\`. Targets: compress >= 1 GB/s, CPU decode >= 1.5 GB/s, peak RSS <= 1.5 x
the largest group's BF16 size + 256 MB.

$table
EOF
)

echo
echo "$section"

if [[ $write -eq 1 ]]; then
  SECTION="$section" python3 - "$repo/BENCHMARKS.md" <<'PYEOF'
import os, sys
path = sys.argv[1]
section = os.environ["SECTION"].rstrip() + "\n"
title = "## CPU (2-core machine)"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
lines = text.splitlines(keepends=True)
start = next((i for i, l in enumerate(lines) if l.rstrip() == title), None)
if start is None:
    if not text.endswith("\n"):
        text += "\n"
    text += "\n" + section
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    text = "".join(lines[:start]) + section + ("\n" + tail if tail else "")
open(path, "w").write(text)
PYEOF
  echo "cpu_bench.sh: wrote the CPU section of BENCHMARKS.md" >&2
fi
[[ $keep -eq 1 ]] || rm -rf "$work"
