#!/bin/bash
# vLLM's own benchmarks and KV cache, BF16 against DF11 in one run on one GPU, at one memory
# budget: Llama-3.1-8B shapes with random weights (bench_llama8b.py --make-only makes the BF16
# folder and its DF11 folder in WORK, with a word-level tokenizer), each run by a `vllm bench
# latency` (KIND=latency, the default) or `vllm bench throughput` (KIND=throughput) of its own.
#
#   python/tests/gpu/vllm_bench.sh OUT [WORK]      (WORK default /dev/shm/df11-bench)
#
# RUNS (default "bf16 df11 df11-exec"; df11-exec and df11-compact: the DF11 folder in df11_mode
# "exec" or "compact"; df11-layer and df11-host: the DF11 folder loaded with
# DF11_VLLM_LOAD_VIA=layer or =host; df11-unchained: with DF11_VLLM_DECODE_CHAINS=0, a decode
# launch per weight; df11-chained: with =3, each decoder layer's o, gate/up and down weights
# decoded in one launch; df11 decodes its o and gate/up weights in one, as =2; df11-tensor: the
# folder `df11 compress BF16 -o WORK/df11-tensor --group-by tensor` writes, which the caller
# makes, whose fused q/k/v and gate/up layers are coded again at load; df11-tensor-exec: that
# folder in df11_mode "exec", those layers packed into the layout on the GPU (df11-tensor-compact:
# the same in "compact"); df11-tensor-exec-host, df11-tensor-compact-host: the same with
# DF11_VLLM_LOAD_VIA=host, through the CPU encoder).
# BUDGET_GB (default 24): gpu_memory_utilization is BUDGET_GB over the GPU's memory, the same
# for both. LATENCY_ARGS (default: batch 1, 128 prompt tokens, 256 new, 3 + 10 iterations);
# THROUGHPUT_ARGS (default: the random dataset, 512 prompts of 512 tokens, 256 new each).
# OUT/vllm_bench.log gets vLLM's lines about memory and the KV cache and each benchmark's
# result; OUT/KIND-*.json the benchmarks' JSON. Needs what vllm_check.sh needs.
# SHAPE=14b: the 14B shape instead (bench_llama8b.py --shape; WORK default /dev/shm/df11-bench-14b),
# whose BF16 weights (27.5 GiB) exceed the default budget: BF16_ARGS (default none) are added to
# the BF16 run only, e.g. BF16_ARGS="--cpu-offload-gb 8" to serve it with CPU offload.
# SHAPE=30b-a3b: a Qwen3-MoE of Qwen3-30B-A3B's dimensions (128 experts, top 8), LAYERS of its
# 48 decoder layers (default 12: 16 GiB of BF16; WORK default /dev/shm/df11-bench-30b-a3b-LAYERS).
# TP (default 1): --tensor-parallel-size of every run, one GPU a rank, BUDGET_GB on each.
set -u
out=$1
shape=${SHAPE:-8b}
suffix=""
[ "$shape" = 8b ] || suffix=-$shape
layers=()
if [ "$shape" = 30b-a3b ]; then suffix=$suffix-${LAYERS:-12}; layers=(--layers "${LAYERS:-12}"); fi
work=${2:-/dev/shm/df11-bench$suffix}
here=$(cd "$(dirname "$0")" && pwd)
log=$out/vllm_bench.log
mkdir -p "$out" "$work"
# shellcheck source=vllm_env.sh
source "$here/vllm_env.sh" "$work"

python3 "$here/bench_llama8b.py" --work "$work" --shape "$shape" "${layers[@]}" --make-only >> "$log" 2>&1 || exit 1
util=$(python3 -c "import torch; print(round(${BUDGET_GB:-24} * 2**30 / torch.cuda.get_device_properties(0).total_memory, 4))")
echo "budget ${BUDGET_GB:-24} GiB: gpu_memory_utilization $util, tensor parallel ${TP:-1}" >> "$log"
rc=0
for name in ${RUNS:-bf16 df11 df11-exec}; do
  echo "=== $name" >> "$log"
  extra=()
  model=$name
  via=
  chains=
  case $name in df11-exec|df11-compact)
    model=df11; extra=(--additional-config "{\"df11_mode\": \"${name#df11-}\"}") ;; esac
  case $name in df11-layer|df11-host) model=df11; via=${name#df11-} ;; esac
  case $name in df11-chained) model=df11; chains=3 ;; df11-unchained) model=df11; chains=0 ;; esac
  case $name in df11-tensor-exec*|df11-tensor-compact*)
    mode=${name#df11-tensor-}; mode=${mode%-host}
    model=df11-tensor; extra=(--additional-config "{\"df11_mode\": \"$mode\"}") ;; esac
  case $name in df11-tensor-*-host) via=host ;; esac
  # shellcheck disable=SC2206
  if [ "$name" = bf16 ]; then extra=(${BF16_ARGS:-}); fi
  kind=${KIND:-latency}
  if [ "$kind" = throughput ]; then
    args=(--dataset-name random --disable-detokenize)
    # The random dataset's own lengths (--input-len and --output-len lose to their defaults).
    # shellcheck disable=SC2206
    args+=(${THROUGHPUT_ARGS:---random-input-len 512 --random-output-len 256 --num-prompts 512})
  else
    args=(--skip-tokenizer-init --disable-detokenize)
    # shellcheck disable=SC2206
    args+=(${LATENCY_ARGS:---batch-size 1 --input-len 128 --output-len 256 --num-iters-warmup 3 --num-iters 10})
  fi
  DF11_VLLM_LOAD_VIA=$via DF11_VLLM_DECODE_CHAINS=$chains timeout "${BENCH_TIMEOUT:-400}" python3 "$here/vllm_benchmark.py" "$kind" "${extra[@]}" \
    --tensor-parallel-size "${TP:-1}" --model "$work/$model" --max-model-len 4096 --gpu-memory-utilization "$util" \
    --output-json "$out/$kind-$name.json" "${args[@]}" > "$work/$kind-$name.log" 2>&1
  status=$?
  grep -E "GPU KV cache size|Model loading took|offload|Available KV cache memory|df11|Avg latency|percentile|Throughput|Total num" \
    "$work/$kind-$name.log" | cut -c1-300 >> "$log"
  [ $status -eq 0 ] || { tail -n 30 "$work/$kind-$name.log" | cut -c1-300 >> "$log"; rc=1; }
  echo "--- $name: exit $status" >> "$log"
done
exit $rc
