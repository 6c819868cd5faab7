#!/bin/bash
# Device: df11's libraries (run.tar.xz), glyd-gpu (glyd.tar.xz); stages named in $STAGES.
out=$OUT; t0=$SECONDS
mkdir -p /tmp/r /tmp/gsite
[ -f /tmp/r/bin/df11 ] || tar xJf .carry/run.tar.xz -C /tmp/r
[ -d /tmp/gsite/glyd_gpu ] || tar xJf .carry/glyd.tar.xz -C /tmp/gsite
export LD_LIBRARY_PATH=/tmp/r/lib DF11_LIBRARY_DIR=/tmp/r/lib DF11_TOOLS_LIBRARY_DIR=/tmp/r/lib \
  PYTHONPATH=$PWD/python DF11_CLI=/tmp/r/bin/df11 PYTHONUNBUFFERED=1
W=/dev/shm/df11-bench
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
  nproc; git log -1 --format=%H 2>/dev/null
  python3 -c "import torch, transformers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| df11', df11.version(), df11.has_cuda())"; } > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
for s in $STAGES; do
  t1=$SECONDS
  case $s in
    step) timeout 200 env PYTHONPATH=$PYTHONPATH:/tmp/gsite python3 bench/exec_step.py --layers 8 \
        --tokens 1,2,4,8,16,32,48,64,128,256 --runs 30 --layouts exec,compact --peers \
        --json "$out/exec_step.json" > "$out/exec_step.log" 2>&1 ;;
    gemv) timeout 90 /tmp/r/bin/df11 bench gemv --batch 1,2,4,8,16 --runs 30 --warmup 5 \
        --model-blocks 32 > "$out/gemv.log" 2>&1 ;;
    model) [ -f $W/df11/config.json ] || timeout 300 python3 python/tests/gpu/bench_llama8b.py \
        --work $W --make-only > "$out/model.log" 2>&1 ;;
    graphs) timeout ${GRAPHS_LIMIT:-250} python3 -m df11.bench $W/df11 --bf16 $W/bf16 --compare bf16,df11-exec \
        --cuda-graphs --modes graph --batch 1,8 --tokens 64 --repeat 3 --json "$out/graphs.json" \
        > "$out/graphs.log" 2>&1 ;;
    compile) timeout ${COMPILE_LIMIT:-420} python3 bench/hf_static_compile.py --bf16 $W/bf16 --df11 $W/df11 \
        --modes decode,exec --rounds ${ROUNDS:-1} --repeat 3 --keep /tmp/keep --json "$out/compile.json" \
        > "$out/compile.log" 2>&1; cp /tmp/keep/rounds.jsonl "$out/" 2>/dev/null ;;
    memory) timeout 200 python3 bench/gpu_memory.py --bf16 $W/bf16 --df11 $W/df11 \
        --variants bf16,df11,df11-exec,df11-compact --json "$out/gpu_memory.json" \
        > "$out/gpu_memory.log" 2>&1 ;;
    eager) timeout 300 python3 python/tests/gpu/ab_eager.py --work $W --variants bf16,df11,df11-exec \
        --batch 1,8 --rounds ${EROUNDS:-5} --json "$out/ab_eager.json" > "$out/ab_eager.log" 2>&1 ;;
  esac
  echo "== $s rc $? $((SECONDS - t1)) s"
done
echo "done $((SECONDS - t0)) s"
