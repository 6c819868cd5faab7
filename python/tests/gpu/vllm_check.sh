#!/bin/bash
# DF11 folders in vLLM against BF16 in the same vLLM, on one GPU (vllm_check.py says what each
# step does). vLLM (>= 0.24) and the df11 package must be importable, with libdf11 and
# libdf11-tools (df11.compress) in the package or in DF11_LIBRARY_DIR / DF11_TOOLS_LIBRARY_DIR.
#
#   python/tests/gpu/vllm_check.sh OUT [WORK]     (WORK default /dev/shm/df11-vllm)
#
# CASES (default "graph eager official single exec lora serve hub refusals"): which groups of cases
# run; `make` always (unless MAKE=0). single: the encoder's single-file folder, refused without the model's
# config and served with --hf-config-path. serve: `vllm serve` of the DF11 folder through the
# OpenAI client (needs vLLM's server packages). hub: the DF11 folder and the official one as Hub
# ids on a local Hub. exec: the DF11 folder in df11_mode "exec" against BF16 whose Linear layers
# compute as the execution layout does (vllm_check.py generate --reference), with CUDA graphs.
# lora: the make step's PEFT adapter served with the model (enable_lora): decode mode against
# BF16 with it, the execution mode against BF16 computing as the layout does with it.
# Not in the default: "compact" (the same for df11_mode "compact", whose GEMM has the same
# products and order);
# also "host-load" and "gpu-load" (the DF11 folder loaded with its Linear
# weights in BF16 through host or GPU memory, DF11_VLLM_LOAD_VIA=host or gpu, against BF16),
# "layer-load" (the same with DF11_VLLM_LOAD_VIA=layer: each layer coded as vLLM's loader fills
# it, which decode mode does by default at one rank), "regrouped" (a DF11 folder of one group
# per tensor, whose fused q/k/v and gate/up layers are coded again on the GPU at load, against
# BF16), "regrouped-exec" and "regrouped-compact" (that folder in mode "exec" or "compact", its
# fused layers packed into the layout on the GPU, against BF16 computing as the layout does),
# "control" (the
# official case's two folders again, each in a second engine, compared with the first) and "tp" (tensor parallel on TP GPUs, default 2: the BF16
# model and the DF11 folder in decode mode compared, and the DF11 folder in mode "exec" against
# BF16 computing as the execution layout does; "tp-exec": that second pair alone; "tp-lora":
# the lora case's pairs at tensor parallel TP) and
# "multimodal": a tiny Gemma 3 with its SigLIP vision tower and a processor (vllm_check.py
# make-multimodal; vLLM's Gemma 3 needs torchvision), its BF16 folder against its DF11 folder with
# prompts holding images, under CUDA graphs and eager;
# "architectures": tiny models of more architectures (ARCHS; see that case below), each BF16
# folder against its DF11 folder;
# "families": for each family of the interop suite (FAMILIES, default all seven), its fixture's
# BF16 model against df11's folder of it and against the official encoder's folder of it;
# FAMILY_ARGS (e.g. "--tp 2", "--eager", "--engine-arg enable_prefix_caching=false") are added
# to each of those engines; FAMILY_KINDS (default "df11 official") picks the DF11 folders, and
# "bf16" in it runs the BF16 model in a second engine (a control).
# KEEP_COMPILED=1: each engine compiles afresh into a vLLM cache of its own (VLLM_CACHE_ROOT),
# kept unpacked, and OUT/compiled.tgz gets the code Inductor generated for each and the launch
# configurations its kernels' autotuning chose (*.best_config).
# INDUCTOR_DETERMINISTIC=1: every engine runs with TORCHINDUCTOR_DETERMINISTIC=1 (Inductor then
# picks its kernels' launch configurations without timing them). Under vLLM's defaults Inductor
# times them when an engine first runs them, and a reduction's configuration decides its order
# of additions: two engines of the same BF16 model can then differ (on an H200, a Qwen3-MoE
# fixture's prompt logprobs did even with it set). Where a DF11 engine differs from its BF16
# one, `vllm_check.py groups` over several engines' JSON (FAMILY_KINDS with "bf16", or other
# calls) shows whether it equals another BF16 engine.
# OUT/vllm_check.log gets each case's command, vLLM's lines about memory and the KV cache,
# df11's lines, the comparisons and, for a case that failed, its last lines; OUT/results.tgz the
# cases' JSON and full logs. Exit status 1 if a comparison or an expected refusal failed.
set -u
out=$1
work=${2:-/dev/shm/df11-vllm}
here=$(cd "$(dirname "$0")" && pwd)
check="python3 $here/vllm_check.py"
log=$out/vllm_check.log
mkdir -p "$out" "$work"
# shellcheck source=vllm_env.sh
source "$here/vllm_env.sh" "$work"
[ -z "${INDUCTOR_DETERMINISTIC:-}" ] || export TORCHINDUCTOR_DETERMINISTIC=1

rc=0
# case NAME ARGS...: vllm_check.py ARGS in its own process, its output in WORK/NAME.log.
case_() {
  local name=$1
  shift
  echo "=== $name: $*" >> "$log"
  local t0=$SECONDS
  timeout "${CASE_TIMEOUT:-300}" $check "$@" > "$work/$name.log" 2>&1
  local status=$?
  grep -E "GPU KV cache size|Model loading took|Available KV cache memory|df11|tokens/s|image tokens|made " \
    "$work/$name.log" | grep -v "^\s*File " | cut -c1-400 | tail -n 30 >> "$log"
  echo "--- $name: exit $status after $((SECONDS - t0)) s" >> "$log"
  # After every case, so that a run stopped part way still brings back what it did.
  tar -C "$work" -czf "$out/results.tgz" $(cd "$work" && ls ./*.json ./*.log 2>/dev/null)
  return $status
}
# fail_tail NAME [N]: the errors a failed case printed and its last N lines.
fail_tail() {
  grep -E "Error|Exception" "$work/$1.log" | grep -v "^\s*File " | cut -c1-400 | head -n 20 >> "$log"
  tail -n "${2:-40}" "$work/$1.log" | cut -c1-400 >> "$log"
}
compare() { $check compare "$work/$1.json" "$work/$2.json" >> "$log" 2>&1 || rc=1; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, vllm, df11; print('torch', torch.__version__, '| vllm', vllm.__version__, '| df11', df11.version(), 'cuda' if df11.has_cuda() else 'no cuda')"
} >> "$log" 2>&1

# The make step's models, which every case but families and architectures uses (MAKE=0 skips it).
[ "${MAKE:-1}" = 0 ] || case_ make make "$work" || { fail_tail make; exit 1; }
# gen NAME MODEL [FLAGS...]: one engine's outputs in WORK/NAME.json. The engine runs in the
# generating process, so that which requests of a batch share a step does not depend on when a
# separate engine process receives them (a step's batch decides the matmuls' shapes, hence their
# kernels and roundings).
gen() {
  local name=$1 model=$2
  shift 2
  if [ -n "${KEEP_COMPILED:-}" ]; then
    VLLM_CACHE_ROOT=$work/compiled/$name VLLM_COMPILE_CACHE_SAVE_FORMAT=unpacked \
      VLLM_ENABLE_V1_MULTIPROCESSING=0 case_ "$name" generate "$model" "$work/$name.json" "$@" \
      || { fail_tail "$name"; rc=1; }
    (cd "$work" && find compiled \( -name "*.py" -o -name "*.best_config" \) -print0 \
      | tar --null -T - -czf "$out/compiled.tgz")
  else
    VLLM_ENABLE_V1_MULTIPROCESSING=0 case_ "$name" generate "$model" "$work/$name.json" "$@" \
      || { fail_tail "$name"; rc=1; }
  fi
}
cases=" ${CASES:-graph eager official single exec lora serve hub refusals} "
want() { [[ $cases == *" $1 "* ]]; }
# Each pair compared as soon as both ran.
if want graph; then
  gen bf16-graph "$work/bf16"
  gen df11-graph "$work/df11"
  compare bf16-graph df11-graph
fi
if want eager; then
  gen bf16-eager "$work/bf16" --eager
  gen df11-eager "$work/df11" --eager --quantization df11
  compare bf16-eager df11-eager
fi
# load_case VIA LINE: the DF11 folder loaded with DF11_VLLM_LOAD_VIA=VIA, its log holding LINE,
# against BF16.
load_case() {
  [ -f "$work/bf16-graph.json" ] || gen bf16-graph "$work/bf16"
  DF11_VLLM_LOAD_VIA=$1 gen "df11-$1-graph" "$work/df11"
  grep -q "$2" "$work/df11-$1-graph.log" \
    || { echo "df11-$1-graph: no line '$2' in its log" >> "$log"; rc=1; }
  compare bf16-graph "df11-$1-graph"
}
# The Linear weights through host memory at load (where the GPU has no room for them).
! want host-load || load_case host "Linear weights pass through host memory"
! want gpu-load || load_case gpu "Linear weights pass through GPU memory"
# Each Linear layer coded as soon as vLLM's loader has filled it (vLLM's layer-wise loading).
! want layer-load || load_case layer "Linear weights load layer by layer"
# A folder of one group per tensor: the fused layers are coded again at load, on the GPU.
if want regrouped; then
  [ -f "$work/bf16-graph.json" ] || gen bf16-graph "$work/bf16"
  gen df11-tensor-graph "$work/df11-tensor"
  grep -q "coded again on the GPU" "$work/df11-tensor-graph.log" \
    || { echo "df11-tensor-graph: no line 'coded again on the GPU' in its log" >> "$log"; rc=1; }
  compare bf16-graph df11-tensor-graph
fi
if want official; then
  gen official-bf16-graph "$work/official-bf16"
  gen official-graph "$work/official"
  compare official-bf16-graph official-graph
fi
if want single; then
  # The encoder's default single-file folder: refused without the model's config, with a
  # message that says what to pass; served with it, against the BF16 fixture.
  if case_ official-single-bare generate "$work/official-single" "$work/official-single-bare.json"; then
    echo "official-single-bare: LOADED (must be refused)" >> "$log"; rc=1
  else
    $check expect-failure "$work/official-single-bare.log" "hf-config-path" >> "$log" 2>&1 || rc=1
  fi
  gen official-single-graph "$work/official-single" --hf-config-path "$work/official-bf16" \
    --quantization df11
  [ -f "$work/official-bf16-graph.json" ] || gen official-bf16-graph "$work/official-bf16"
  compare official-bf16-graph official-single-graph
fi
if want control; then
  # The official fixture again, BF16 and DF11 each in a second engine: whether two engines of
  # the same folder agree tells a difference of df11's from vLLM's own run-to-run variation.
  gen official-bf16-graph-2 "$work/official-bf16"
  gen official-graph-2 "$work/official"
  [ -f "$work/official-bf16-graph.json" ] && compare official-bf16-graph official-bf16-graph-2
  [ -f "$work/official-graph.json" ] && compare official-graph official-graph-2
  compare official-bf16-graph-2 official-graph-2
  # The graphs vLLM compiled and the code Inductor generated for them (Python sources only), to
  # see whether the two models' matmuls are the same calls.
  { find "${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}/torch_compile_cache" -name "*.py" 2>/dev/null
    find "${TMPDIR:-/tmp}/torchinductor_$(id -un)" -name "*.py" 2>/dev/null; } \
    | tar -czf "$out/compiled-code.tgz" -T - 2>/dev/null
fi
if want exec; then
  gen bf16-reference-graph "$work/bf16" --reference
fi
if want compact || want regrouped-compact; then
  # The compact mode's fused GEMM stops at fewer tokens than the execution mode's.
  gen bf16-reference-compact-graph "$work/bf16" --reference compact
fi
if want exec; then
  gen df11-exec-graph "$work/df11" --df11-mode exec
  compare bf16-reference-graph df11-exec-graph
fi
for mode in exec compact; do
  want "regrouped-$mode" || continue
  # The folder of one group per tensor in that mode: the fused layers are packed into the
  # layout on the GPU from the BF16 weights vLLM's loader built.
  ref=bf16-reference-graph
  [ "$mode" = exec ] || ref=bf16-reference-$mode-graph
  [ -f "$work/$ref.json" ] || gen "$ref" "$work/bf16" --reference "$mode"
  gen "df11-tensor-$mode-graph" "$work/df11-tensor" --df11-mode "$mode"
  grep -q "layout on the GPU" "$work/df11-tensor-$mode-graph.log" \
    || { echo "df11-tensor-$mode-graph: no line 'packed ... on the GPU' in its log" >> "$log"
         rc=1; }
  compare "$ref" "df11-tensor-$mode-graph"
done
if want compact; then
  gen df11-compact-graph "$work/df11" --df11-mode compact
  compare bf16-reference-compact-graph df11-compact-graph
fi
if want multimodal; then
  case_ make-multimodal make-multimodal "$work" || { fail_tail make-multimodal; rc=1; }
  for how in graph eager; do
    flag=""
    [ $how = eager ] && flag=--eager
    for kind in bf16 df11; do
      VLLM_ENABLE_V1_MULTIPROCESSING=0 case_ "mm-$kind-$how" generate-mm \
        "$work/multimodal/$kind" "$work/mm-$kind-$how.json" $flag \
        || { fail_tail "mm-$kind-$how"; rc=1; }
    done
    compare "mm-bf16-$how" "mm-df11-$how"
  done
fi
if want lora; then
  # A LoRA adapter served with the model (enable_lora): decode mode against BF16 with the same
  # adapter, the execution mode against BF16 computing as the layout does with it; and the
  # adapter must change the outputs (against the graph case's BF16 engine, without it). vLLM's
  # LoRA shrink kernel runs without its split reduction (atomic adds, whose order varies from
  # run to run: with them one BF16 engine does not repeat its own outputs): make's
  # lora-kernels configuration, through vLLM's kernel tuning files.
  export VLLM_TUNED_CONFIG_FOLDER=$work/lora-kernels
  gen bf16-lora-graph "$work/bf16" --lora "$work/lora"
  gen df11-lora-graph "$work/df11" --lora "$work/lora"
  compare bf16-lora-graph df11-lora-graph
  grep -q "input embeddings keep their BF16 weights" "$work/df11-lora-graph.log" \
    || { echo "df11-lora-graph: no line 'input embeddings keep their BF16 weights'" >> "$log"
         rc=1; }
  if [ -f "$work/bf16-graph.json" ] \
      && $check compare "$work/bf16-graph.json" "$work/bf16-lora-graph.json" > /dev/null 2>&1; then
    echo "bf16-lora-graph: the adapter changed no output (it must)" >> "$log"; rc=1
  fi
  gen bf16-reference-lora-graph "$work/bf16" --reference --lora "$work/lora"
  gen df11-exec-lora-graph "$work/df11" --df11-mode exec --lora "$work/lora"
  compare bf16-reference-lora-graph df11-exec-lora-graph
  unset VLLM_TUNED_CONFIG_FOLDER
fi
tp=${TP:-2}
if want tp; then
  gen "bf16-tp$tp" "$work/bf16" --tp "$tp"
  gen "df11-tp$tp" "$work/df11" --tp "$tp"
  compare "bf16-tp$tp" "df11-tp$tp"
  # Each rank codes its slices itself, each decoder layer's o and gate/up slices as one group,
  # so that they decode in one launch as at one rank.
  line="coded as one group each, to decode in one launch"
  grep -q "$line" "$work/df11-tp$tp.log" \
    || { echo "df11-tp$tp: no line '$line' in its log" >> "$log"; rc=1; }
fi
if want tp-lora; then
  # The lora case at tensor parallel TP: each rank's coded slices under vLLM's LoRA layers.
  export VLLM_TUNED_CONFIG_FOLDER=$work/lora-kernels
  gen "bf16-lora-tp$tp" "$work/bf16" --tp "$tp" --lora "$work/lora"
  gen "df11-lora-tp$tp" "$work/df11" --tp "$tp" --lora "$work/lora"
  compare "bf16-lora-tp$tp" "df11-lora-tp$tp"
  gen "bf16-reference-lora-tp$tp" "$work/bf16" --tp "$tp" --reference --lora "$work/lora"
  gen "df11-exec-lora-tp$tp" "$work/df11" --tp "$tp" --df11-mode exec --lora "$work/lora"
  compare "bf16-reference-lora-tp$tp" "df11-exec-lora-tp$tp"
  unset VLLM_TUNED_CONFIG_FOLDER
fi
if want tp || want tp-exec; then
  # The reference patch reaches the workers as they are forked (vLLM's default start method
  # while the parent has not initialized CUDA).
  gen "bf16-reference-tp$tp" "$work/bf16" --tp "$tp" --reference
  gen "df11-exec-tp$tp" "$work/df11" --tp "$tp" --df11-mode exec
  compare "bf16-reference-tp$tp" "df11-exec-tp$tp"
fi
if want families; then
  families=${FAMILIES:-llama qwen2 qwen3 mistral gemma3 phi3 qwen3moe}
  # shellcheck disable=SC2086
  case_ make-families make-families "$work" $families || { fail_tail make-families; exit 1; }
  # FAMILY_KINDS (default "df11 official"): which DF11 folders of each family run against its BF16
  # model; each pair is compared as soon as both ran, so a run stopped part way keeps them.
  for f in $families; do
    # shellcheck disable=SC2086
    gen "$f-bf16" "$work/families/$f/bf16" ${FAMILY_ARGS:-}
    for kind in ${FAMILY_KINDS:-df11 official}; do
      name=$f-$kind
      [ "$kind" != bf16 ] || name=$f-bf16-again
      # shellcheck disable=SC2086
      gen "$name" "$work/families/$f/$kind" ${FAMILY_ARGS:-}
      compare "$f-bf16" "$name"
    done
  done
fi
if want architectures; then
  # ARCHS (default: the generative models of models.ARCHITECTURES that vLLM 0.24 builds): each
  # tiny model's BF16 folder against its `df11 compress` folder, with ARCH_ARGS (e.g. "--eager")
  # added to both engines; each pair compared as soon as both ran.
  archs=${ARCHS:-mixtral olmoe granitemoe qwen3_next nemotron_h llama4_text gpt2 gpt_neox phi starcoder2 cohere falcon_h1}
  # shellcheck disable=SC2086
  case_ make-architectures make-architectures "$work" $archs || { fail_tail make-architectures; exit 1; }
  for a in $archs; do
    # vLLM's Qwen3-Next (gated delta-net layers) imports flashinfer at its first forward pass,
    # BF16's engine as DF11's: where flashinfer is missing the pair is not run, and the log says so.
    if [ "$a" = qwen3_next ] && ! python3 -c "import flashinfer" > /dev/null 2>&1; then
      echo "=== $a: NOT RUN: vLLM's Qwen3-Next needs flashinfer, which is not importable here" >> "$log"
      continue
    fi
    # shellcheck disable=SC2086
    gen "$a-bf16" "$work/architectures/$a/bf16" ${ARCH_ARGS:-}
    # shellcheck disable=SC2086
    gen "$a-df11" "$work/architectures/$a/df11" ${ARCH_ARGS:-}
    compare "$a-bf16" "$a-df11"
  done
fi
if want serve; then
  # `vllm serve` of the DF11 folder with the engine settings of `generate`, queried through the
  # OpenAI client; its answers against the offline engines' (the graph case's JSON).
  port=${SERVE_PORT:-8011}
  echo "=== serve: vllm serve $work/df11 on port $port" >> "$log"
  python3 -c "import vllm.entrypoints.openai.api_server" >> "$log" 2>&1 || rc=1
  python3 -m vllm.entrypoints.cli.main serve "$work/df11" --port "$port" --host 127.0.0.1 \
    --max-model-len 512 --max-num-seqs 16 --skip-tokenizer-init --seed 0 \
    --gpu-memory-utilization 0.8 > "$work/serve.log" 2>&1 &
  server=$!
  case_ df11-serve client "http://127.0.0.1:$port" "$work/df11" "$work/df11-serve.json" \
    --pid "$server" \
    || { fail_tail df11-serve; tail -n 40 "$work/serve.log" | cut -c1-400 >> "$log"; rc=1; }
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  grep -E "GPU KV cache size|Model loading took|df11|Uvicorn running|POST /v1/completions" \
    "$work/serve.log" | cut -c1-300 | tail -n 8 >> "$log"
  if [ -f "$work/df11-serve.json" ]; then
    [ -f "$work/bf16-graph.json" ] && compare bf16-graph df11-serve
    [ -f "$work/df11-graph.json" ] && compare df11-graph df11-serve
  fi
fi
if want hub; then
  # A Hub id: the DF11 folder uploaded with huggingface_hub to a local Hub (tests/hub/hub_server.py,
  # 127.0.0.1), then LLM(model="org/df11-check") fetches it as vLLM fetches any Hub model.
  repo_root=$(cd "$here/../../.." && pwd)
  echo "=== hub: $repo_root/tests/hub/hub_server.py" >> "$log"
  python3 "$repo_root/tests/hub/hub_server.py" --data "$work/hub-data" --token hf_df11check \
    > "$work/hub.urls" 2> "$work/hub-server.log" &
  hub=$!
  for _ in $(seq 50); do [ -s "$work/hub.urls" ] && break; sleep 0.2; done
  hub_url=$(cut -d' ' -f1 "$work/hub.urls")
  rm -rf "$work/hf-home"
  if HF_HUB_OFFLINE=0 HF_ENDPOINT=$hub_url HF_TOKEN=hf_df11check HF_HUB_DISABLE_XET=1 \
      $check upload "$work/df11" org/df11-check >> "$log" 2>&1; then
    HF_HUB_OFFLINE=0 HF_ENDPOINT=$hub_url HF_TOKEN=hf_df11check HF_HUB_DISABLE_XET=1 \
      HF_HOME=$work/hf-home gen df11-hub org/df11-check
    [ -f "$work/df11-hub.json" ] && [ -f "$work/df11-graph.json" ] && compare df11-graph df11-hub
    [ -f "$work/df11-hub.json" ] && [ -f "$work/bf16-graph.json" ] && compare bf16-graph df11-hub
    ls -R "$work/hf-home/hub" 2>/dev/null | grep -E "safetensors|json" | head -n 12 >> "$log"
  else
    echo "hub: upload failed" >> "$log"; rc=1
  fi
  # The official sharded folder as a Hub id too, against its BF16 model.
  if HF_HUB_OFFLINE=0 HF_ENDPOINT=$hub_url HF_TOKEN=hf_df11check HF_HUB_DISABLE_XET=1 \
      $check upload "$work/official" org/official-check >> "$log" 2>&1; then
    HF_HUB_OFFLINE=0 HF_ENDPOINT=$hub_url HF_TOKEN=hf_df11check HF_HUB_DISABLE_XET=1 \
      HF_HOME=$work/hf-home gen official-hub org/official-check
    [ -f "$work/official-bf16-graph.json" ] || gen official-bf16-graph "$work/official-bf16"
    [ -f "$work/official-hub.json" ] && compare official-bf16-graph official-hub
  else
    echo "hub: upload of the official folder failed" >> "$log"; rc=1
  fi
  kill "$hub" 2>/dev/null
fi
if ! want refusals; then
  echo "vllm_check: exit $rc" >> "$log"
  exit $rc
fi

# Refusals: a corrupt folder names its shard and group; without the plugin a DF11 folder fails.
shard=$(python3 -c "import json; print(json.load(open('$work/corrupt.json'))['shard'])")
for kind in structure checksum; do
  if case_ "corrupt-$kind" generate "$work/corrupt-$kind" "$work/corrupt-$kind.json"; then
    echo "corrupt-$kind: LOADED (must be refused)" >> "$log"; rc=1
  else
    fail_tail "corrupt-$kind" 12
    $check expect-failure "$work/corrupt-$kind.log" "$shard" "group 'model.layers.3'" \
      >> "$log" 2>&1 || rc=1
  fi
done
export VLLM_PLUGINS=no_such_plugin  # vLLM loads no general plugin: df11's is not there
if case_ no-plugin generate "$work/df11" "$work/no-plugin.json"; then
  echo "no-plugin: LOADED (must fail)" >> "$log"; rc=1
else
  fail_tail no-plugin 12
fi
unset VLLM_PLUGINS

echo "vllm_check: exit $rc" >> "$log"
exit $rc
