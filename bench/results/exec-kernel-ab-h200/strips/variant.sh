#!/bin/bash
# usage: variant.sh NAME "MACRO=VAL ..."  -> .carry/ms/NAME/libdf11.so.0, register report

cd /work/main
name=$1; shift
cp decoder/cuda/src/exec_gemm.cu /tmp/exec_gemm.orig
for kv in $1; do k=${kv%=*}; v=${kv#*=}; sed -i "s/^#define $k [0-9]*$/#define $k $v/" decoder/cuda/src/exec_gemm.cu; done
grep -E "^#define DF11_EXEC_GEMM_(STRIPS|STEPS|MIN)" decoder/cuda/src/exec_gemm.cu | tr '\n' ' '; echo
(cd build-sm90 && make df11_capi 2>&1 | grep -E "error|warning" ; true)
(cd build-sm90/decoder/cuda && /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DDF11_HAVE_CUDA=1 --options-file CMakeFiles/df11_cuda.dir/includes_CUDA.rsp -O3 -DNDEBUG --generate-code=arch=compute_90,code=[sm_90] -Xcompiler=-fPIC --expt-relaxed-constexpr -std=c++20 -Xptxas -v -x cu -c /work/main/decoder/cuda/src/exec_gemm.cu -o /tmp/eg.o 2>&1 | awk '/Compiling entry.*gemm_kernelILb1/ {match($0,/ELj[0-9]+E/); nb=substr($0,RSTART+3,RLENGTH-4); on=1} on && /spill/ {sp=$0; sub(/.*frame, /,"",sp)} on && /Used/ {match($0,/Used [0-9]+/); print "NB=" nb " " substr($0,RSTART,RLENGTH) " regs; " sp; on=0}')
mkdir -p .carry/ms/$name && cp -L build-sm90/capi/libdf11.so.0 .carry/ms/$name/ && strip .carry/ms/$name/libdf11.so.0
cp /tmp/exec_gemm.orig decoder/cuda/src/exec_gemm.cu
touch decoder/cuda/src/exec_gemm.cu
