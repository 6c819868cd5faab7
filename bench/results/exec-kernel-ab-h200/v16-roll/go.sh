#!/bin/bash
# usage: bash .carry/go.sh OUT VARIANT...   (exec_step per variant library; "main" = .carry/me)
set -u
OUT=$1; shift; R=$PWD; [ -d .carry/me ] || tar xJf .carry/ms.tar.xz -C .carry; C=$R/.carry/me; M=$R/.carry/ms
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -c "import torch; print(torch.__version__)" | tee -a $OUT/gpu.txt
export PYTHONUNBUFFERED=1 PYTHONPATH=$R/python:$R/bench
start=$(date +%s)
for v in "$@"; do
  [ $(( $(date +%s) - start )) -gt ${BUDGET:-450} ] && { echo "stop before $v"; break; }
  L=$C/lib
  if [ $v != main ]; then L=/tmp/lib-$v; mkdir -p $L && cp $C/lib/* $L/ && cp $M/$v/libdf11.so.0 $L/libdf11.so.0; fi
  export LD_LIBRARY_PATH=$L DF11_LIBRARY_DIR=$L DF11_TOOLS_LIBRARY_DIR=$L
  t=$(date +%s)
  n=$(ls $OUT | grep -c "^step-$v\.")
  timeout 120 python3 bench/exec_step.py --layers 8 --tokens ${TOKENS:-1,2,4,8} --runs 30 --json $OUT/step-$v.$n.json > $OUT/step-$v.$n.log 2>&1
  echo "$v rc=$? $(( $(date +%s) - t )) s" | tee -a $OUT/summary.txt
  grep -E " step |q/k/v|gate|down| o " $OUT/step-$v.$n.log | tee -a $OUT/summary.txt
done
