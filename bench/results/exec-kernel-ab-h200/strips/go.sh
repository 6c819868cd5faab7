#!/bin/bash
# usage: bash .carry/ms/go.sh OUT VARIANT...   (exec_step per variant library; "main" = .carry/me)
set -u
OUT=$1; shift; R=$PWD; C=$R/.carry/me; M=$R/.carry/ms
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
export PYTHONUNBUFFERED=1 DF11_CLI=$C/bin/df11 PYTHONPATH=$R/python:$R/bench
start=$(date +%s)
for v in "$@"; do
  [ $(( $(date +%s) - start )) -gt ${BUDGET:-250} ] && { echo "stop before $v"; break; }
  L=$C/lib
  if [ $v != main ]; then L=/tmp/lib-$v; mkdir -p $L && cp $C/lib/* $L/ && cp $M/$v/libdf11.so.0 $L/libdf11.so.0; fi
  export LD_LIBRARY_PATH=$L DF11_LIBRARY_DIR=$L DF11_TOOLS_LIBRARY_DIR=$L
  t=$(date +%s)
  n=$(ls $OUT | grep -c "^step-$v") 
  timeout 90 python3 bench/exec_step.py --layers 8 --tokens ${TOKENS:-1,8,16,24,32} --runs 20 --json $OUT/step-$v-$n.json > $OUT/step-$v-$n.log 2>&1
  echo "$v rc=$? $(( $(date +%s) - t )) s" | tee -a $OUT/summary.txt
  grep -E " step " $OUT/step-$v-$n.log
done
