#!/bin/bash
# usage: variant.sh NAME "MACRO=VAL ..."  -> NAME/libdf11.so.0 (exec_gemm.cu's defaults edited, then restored)
cd /work/main
name=$1; shift
cp decoder/cuda/src/exec_gemm.cu /tmp/exec_gemm.orig
for kv in $1; do k=${kv%=*}; v=${kv#*=}; sed -i "s/^#define $k [0-9]*\( .*\)\?$/#define $k $v/" decoder/cuda/src/exec_gemm.cu; done
grep -E "^#define DF11_EXEC_(GEMM_ROLL|ROLL_X)" decoder/cuda/src/exec_gemm.cu | tr '\n' ' '; echo
(cd /work/build-sm90 && ninja -j2 capi/libdf11.so 2>&1 | grep -E "error|warning" ; true)
mkdir -p /tmp/cb/ms/$name && cp -L /work/build-sm90/capi/libdf11.so.0 /tmp/cb/ms/$name/ && strip /tmp/cb/ms/$name/libdf11.so.0
cp /tmp/exec_gemm.orig decoder/cuda/src/exec_gemm.cu
touch decoder/cuda/src/exec_gemm.cu
