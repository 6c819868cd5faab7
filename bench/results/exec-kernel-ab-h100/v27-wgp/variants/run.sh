#!/bin/bash
# wgp variants and diagnostics against main's kernels (compact_bench, one call), then ncu of P.
set -u
C=$PWD/.carry; R=$OUT/r; mkdir -p $R
cd /tmp && tar xJf $C/V.tar.xz && cd - > /dev/null
export LD_LIBRARY_PATH=$C/N/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
i=0
for v in A P PW5 PX4 PA6 PD1 PD2 P A; do
  i=$((i + 1))
  timeout 60 /tmp/V/$v/compact_bench --runs 20 --warmup 3 --batch 129,192,256 > $R/${i}_$v.txt 2>&1
  echo "run $i $v rc $? ($SECONDS s): $(awk '/^batch/ {on = 1; next} on && NF == 0 {exit} on {printf "%s %s %s %s | ", $1, $2, $6, $7}' $R/${i}_$v.txt)"
done
timeout 150 ncu --kernel-name-base mangled --kernel-name regex:wgp_gemm_kernelILb1ELj256 --launch-skip 4 --launch-count 1 --set full -o $R/p256 /tmp/V/P/compact_bench --runs 1 --warmup 0 --batch 256 > $R/ncu_run.log 2>&1
echo "ncu rc $? ($SECONDS s)"
ncu -i $R/p256.ncu-rep --page details > $R/p256_details.txt 2>&1
ncu -i $R/p256.ncu-rep --page source --csv --print-source sass > $R/p256_src.csv 2>&1
grep -E 'Duration|Registers|Warp Cycles Per Issued|Issued Ipc|Achieved Occupancy|Compute \(SM\) Through|Memory Through|Stall' $R/p256_details.txt | head -30
tar cf $OUT/r.tar -C $OUT r
echo "== end ($SECONDS s)"
