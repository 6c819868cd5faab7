#!/bin/bash
# The shipped 12-bit kernels' instruction and DRAM counts per launch, one block (compact_bench).
out=$1
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/N/lib
mkdir -p /tmp/b && tar xJf "$here/bins.tar.xz" -C /tmp/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > "$out/gpu.txt"
cat "$out/gpu.txt"
timeout 90 /tmp/b/compact_bench --runs 30 --warmup 5 --batch "${BATCHES:-1,16,32,64,96,128,256}" > "$out/bench.txt" 2>&1
echo "bench rc $? ($SECONDS s)"
timeout "${NCU_LIMIT:-400}" ncu --clock-control none --kernel-name-base function \
  --kernel-name 'regex:^(wide_|split_|wgb?_)?gemm_kernel$' --print-kernel-base demangled --print-units base \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size,sm__cycles_elapsed.avg.per_second \
  --csv /tmp/b/compact_bench --runs 1 --warmup 0 --batch "${BATCHES:-1,16,32,64,96,128,256}" > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu rc $? ($SECONDS s): $(grep -c gemm_kernel "$out/ncu.csv") rows"
tail -3 "$out/ncu.err"
