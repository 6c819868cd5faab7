"""DF11 folders served by vLLM against the BF16 model served by the same vLLM, on one GPU.

    vllm_check.py make WORK                      the models (below) under WORK
    vllm_check.py generate MODEL OUT.json [--eager] [--quantization Q] [--df11-mode M]
                  [--reference [MODE]] [--tp N] [--lora DIR]
                                                 one engine in this process: greedy tokens,
                                                 their logprobs and prompt logprobs, of each
                                                 request alone (twice) and of all in one
                                                 batch, and a timed batch-1 request.
                                                 --df11-mode: additional_config's df11_mode;
                                                 --reference: vLLM's BF16 Linear layers
                                                 compute as df11_mode MODE (default exec)
                                                 does: df11's reference GEMM up to that
                                                 mode's fused_max_tokens(), F.linear above;
                                                 --tp: tensor_parallel_size (one GPU a rank);
                                                 --lora DIR: the engine serves that adapter
    vllm_check.py make-families WORK FAMILY...   WORK/families/FAMILY/{bf16,official,df11}
    vllm_check.py make-architectures WORK NAME...
                                                 WORK/architectures/NAME/{bf16,df11}
    vllm_check.py make-multimodal WORK           WORK/multimodal/{bf16,df11}
    vllm_check.py generate-mm MODEL OUT.json [--eager]
                                                 as generate, for make-multimodal's model:
                                                 prompts with images (vLLM's multimodal path)
    vllm_check.py upload FOLDER REPO             FOLDER as the Hub repo REPO at $HF_ENDPOINT
    vllm_check.py client URL MODEL OUT.json      the requests of `generate`, each alone (twice),
                                                 to a `vllm serve` at URL through the OpenAI
                                                 client's completions API (greedy, token ids
                                                 in and out, logprobs and prompt logprobs)
    vllm_check.py compare A.json B.json          exit 1 unless tokens and logprobs are equal,
                                                 alone and batched (alone only where one of
                                                 them comes from `client`)
    vllm_check.py groups A.json B.json ...       the outputs sorted into classes of equal ones
                                                 (from any calls: where two BF16 engines of one
                                                 model differ, which of them a DF11 engine equals)
    vllm_check.py expect-failure LOG PATTERN...  exit 1 unless LOG holds every PATTERN

`make` writes WORK/bf16 (a Llama-shaped model with random weights: hidden 2048, 8 layers, GQA
16/4 heads, vocab 32000; two shards), WORK/df11 (df11.compress of it, as `df11 compress` writes
it; four shards), WORK/official-bf16 and WORK/official (the official encoder's committed tiny
Llama fixture, split into two shards with an index as the Hub's sharded folders are), and two
corrupt copies of WORK/df11: a bumped last output position in group model.layers.3 (structure)
and a flipped sign/mantissa byte in it (df11's checksum), and WORK/lora (a PEFT LoRA adapter of
the BF16 model, rank 8, on every Linear of its blocks) with WORK/lora-kernels (vLLM's LoRA
shrink kernel without its split reduction, for VLLM_TUNED_CONFIG_FOLDER: with that split one
engine does not repeat its own outputs). vllm_check.sh runs the cases and the comparisons. `make-families` takes, for each family of the interop suite (models.FAMILIES),
its committed fixture (tests/interop/fixtures/FAMILY: the BF16 model and the official
encoder's folder of it) and adds df11.compress of that BF16 model. `make-architectures`
does the same for tiny models of models.ARCHITECTURES (`df11 compress` of each). `make-multimodal` writes a
tiny Gemma 3 with its SigLIP vision tower (models.save_gemma3_vision, named as Google's
checkpoints name it) with a processor of its own (a word-level tokenizer whose ids are the
model's image tokens, and Gemma 3's image processor at the tower's 32 x 32 pixels), and
`df11 compress` of it (which copies the processor's files); vLLM's Gemma 3 needs torchvision.
"""
import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # models.py

SHAPE = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
             num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
             max_position_embeddings=2048, tie_word_embeddings=False)
CORRUPT_GROUP = "model.layers.3"


def make(work):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    import df11
    import models
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    config = AutoConfig.for_model("llama", **SHAPE)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    models.randomize_small_params(model, 0)
    bf16 = os.path.join(work, "bf16")
    model.save_pretrained(bf16, max_shard_size="600MB")
    df11_dir = os.path.join(work, "df11")
    df11.compress(model, df11_dir, max_shard_size="300MB", force=True)
    # Each tensor its own group: vLLM's fused q/k/v and gate/up layers then span several groups
    # and are coded again at load (on the GPU where their weights are built there).
    df11.compress(model, os.path.join(work, "df11-tensor"), max_shard_size="300MB", force=True,
                  group_by="tensor")
    # The official fixture, sharded.
    fixture = os.path.join(models.FIXTURES, "llama")
    shutil.rmtree(os.path.join(work, "official-bf16"), ignore_errors=True)
    shutil.copytree(os.path.join(fixture, "bf16"), os.path.join(work, "official-bf16"))
    shard_official(os.path.join(fixture, "official"), os.path.join(work, "official"))
    # The encoder's default single-file output (config.json: dfloat11_config alone).
    shutil.rmtree(os.path.join(work, "official-single"), ignore_errors=True)
    shutil.copytree(os.path.join(fixture, "official-single"),
                    os.path.join(work, "official-single"))
    # Corrupt copies.
    shard = next(f for f in sorted(os.listdir(df11_dir)) if f.endswith(".safetensors")
                 and f"{CORRUPT_GROUP}.output_positions" in models.safetensors_names(
                     os.path.join(df11_dir, f)))
    for kind, tensor, how in (
            ("structure", "output_positions", models.bump_last_output_position),
            ("checksum", "sign_mantissa", flip_middle_byte)):
        models.corrupt_copy(df11_dir, os.path.join(work, f"corrupt-{kind}"),
                            f"{CORRUPT_GROUP}.{tensor}", how)
    with open(os.path.join(work, "corrupt.json"), "w") as f:
        json.dump({"shard": shard, "group": CORRUPT_GROUP}, f)
    make_adapter(model, os.path.join(work, "lora"))
    lora_kernels(os.path.join(work, "lora-kernels"))
    print("made", sorted(os.listdir(work)))


def make_adapter(model, out):
    """A PEFT LoRA adapter of rank 8 on every Linear of `model`'s blocks (changed in place),
    saved in `out`. init_lora_weights=False: B is random too (PEFT's default makes it zero, an
    adapter that changes nothing), so that the adapter changes the outputs."""
    from peft import LoraConfig, get_peft_model
    import torch
    torch.manual_seed(1)
    config = LoraConfig(r=8, lora_alpha=16, init_lora_weights=False,
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                        "up_proj", "down_proj"])
    shutil.rmtree(out, ignore_errors=True)
    get_peft_model(model, config).save_pretrained(out)


def lora_kernels(out):
    """A folder for VLLM_TUNED_CONFIG_FOLDER (vLLM's LoRA kernel tuning files) whose shrink
    configuration has split_k 1 for this GPU, every shape. vLLM's default shrink splits the
    reduction over up to 64 thread blocks summed with atomic adds, whose order varies from run
    to run: with it, one BF16 engine with an adapter does not repeat its own logprobs, and no
    engine can be compared with another bit for bit. The expand kernel has no split."""
    import torch
    config = {"block_m": 32, "block_n": 16, "block_k": 256, "split_k": 1, "num_warps": 4,
              "num_ctas": 1, "group_size_m": 8, "num_stages": 2, "max_nreg": None}
    # [max_loras][num_slices][m][k][n]; the nearest key is taken where none is equal, except
    # for num_slices (1: most layers; 2: gate/up; 3: q/k/v).
    table = {"1": {str(n): {"1": {"1": {"1": config}}} for n in (1, 2, 3)}}
    name = torch.cuda.get_device_name().replace(" ", "_").replace("-", "_")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}_SHRINK.json"), "w") as f:
        json.dump(table, f)


def make_families(work, families):
    import torch
    from transformers import AutoModelForCausalLM
    import df11
    import models
    for family in families:
        if family not in models.FAMILIES:
            sys.exit(f"make-families: unknown family {family!r} (one of {models.FAMILIES})")
        fixture, dst = os.path.join(models.FIXTURES, family), os.path.join(work, "families",
                                                                            family)
        shutil.rmtree(dst, ignore_errors=True)
        for kind in ("bf16", "official"):
            shutil.copytree(os.path.join(fixture, kind), os.path.join(dst, kind))
        model = AutoModelForCausalLM.from_pretrained(os.path.join(dst, "bf16"),
                                                     dtype=torch.bfloat16)
        df11.compress(model, os.path.join(dst, "df11"), force=True)
        print("made", dst, sorted(os.listdir(dst)))


def make_architectures(work, names):
    """For each model type of models.ARCHITECTURES in `names` (its first case), the tiny model
    with random weights in WORK/architectures/NAME/bf16 (positions up to 512, for the requests
    of `generate`) and `df11 compress` of it in .../df11."""
    import models
    for name in names:
        case = next((c for c in models.ARCHITECTURES if c[0] == name), None)
        if case is None:
            sys.exit(f"make-architectures: unknown model type {name!r} (one of "
                     f"{sorted({c[0] for c in models.ARCHITECTURES})})")
        dst = os.path.join(work, "architectures", name)
        shutil.rmtree(dst, ignore_errors=True)
        model_type, cls, extra = case
        models.save_architecture(os.path.join(dst, "bf16"),
                                 (model_type, cls, dict(extra, max_position_embeddings=512)))
        models.df11_compress(os.path.join(dst, "bf16"), os.path.join(dst, "df11"))
        print("made", dst, sorted(os.listdir(dst)))


MM_IMAGE_TOKENS = {500: "<image_soft_token>", 501: "<start_of_image>", 502: "<end_of_image>"}


def save_gemma3_processor(path):
    """A Gemma3Processor for models.build_gemma3_vision in `path`: a word-level tokenizer over
    the model's 512 ids ("w<id>", the image tokens at the ids its config names) and Gemma 3's
    image processor at the tower's 32 x 32 pixels, 4 tokens an image."""
    from tokenizers import Tokenizer, models as token_models, pre_tokenizers
    from transformers import Gemma3ImageProcessor, Gemma3Processor, PreTrainedTokenizerFast
    # vLLM's Gemma 3 looks up the newline runs of Gemma's vocabulary (which this tokenizer,
    # splitting on whitespace, never produces).
    special = {0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>", 4: "\n", 5: "\n\n",
               6: "\n\n\n", 7: "\n\n\n\n", **MM_IMAGE_TOKENS}
    vocab = {special.get(i, f"w{i}"): i for i in range(512)}
    tok = Tokenizer(token_models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>", extra_special_tokens={"image_token": MM_IMAGE_TOKENS[500],
                                                 "boi_token": MM_IMAGE_TOKENS[501],
                                                 "eoi_token": MM_IMAGE_TOKENS[502]})
    images = Gemma3ImageProcessor(size={"height": 32, "width": 32}, do_pan_and_scan=False)
    Gemma3Processor(image_processor=images, tokenizer=fast, image_seq_length=4).save_pretrained(
        path)


def make_multimodal(work):
    import models
    dst = os.path.join(work, "multimodal")
    shutil.rmtree(dst, ignore_errors=True)
    bf16_dir = os.path.join(dst, "bf16")
    models.save_gemma3_vision(bf16_dir, "google")
    save_gemma3_processor(bf16_dir)
    models.df11_compress(bf16_dir, os.path.join(dst, "df11"))
    print("made", dst, sorted(os.listdir(os.path.join(dst, "df11"))))


def mm_prompts():
    """Prompts with 0, 1 and 2 images (seeded noise of several sizes: the processor resizes
    them to 32 x 32), as vLLM's prompt dicts."""
    import random
    import numpy as np
    from PIL import Image
    rng, pixels = random.Random(9), np.random.default_rng(9)

    def words(n):
        return " ".join(f"w{rng.randrange(10, 500)}" for _ in range(n))

    def image(h, w):
        return Image.fromarray((pixels.random((h, w, 3)) * 255).astype("uint8"))
    boi = MM_IMAGE_TOKENS[501]
    return [
        {"prompt": f"<bos> {words(5)} {boi} {words(7)}", "multi_modal_data": {"image": image(40, 48)}},
        {"prompt": f"<bos> {words(12)}"},
        {"prompt": f"<bos> {boi} {words(3)} {boi} {words(20)}",
         "multi_modal_data": {"image": [image(32, 32), image(64, 20)]}},
        {"prompt": f"<bos> {words(30)} {boi} {words(2)}", "multi_modal_data": {"image": image(90, 90)}},
    ]


def generate_mm(model, out, eager):
    """generate's record for mm_prompts through vLLM's multimodal path: each prompt alone,
    twice, then all of them in one batch; greedy tokens, logprobs and prompt logprobs."""
    from vllm import LLM, SamplingParams
    t0 = time.perf_counter()
    llm = LLM(model=model, enforce_eager=eager, max_model_len=256, max_num_seqs=8, seed=0,
              gpu_memory_utilization=0.5, limit_mm_per_prompt={"image": 2})
    start_s = time.perf_counter() - t0
    params = SamplingParams(temperature=0.0, max_tokens=32, logprobs=4, prompt_logprobs=2,
                            ignore_eos=True, detokenize=False)

    def pairs(d):
        return None if d is None else sorted((int(t), lp.logprob) for t, lp in d.items())

    def run(batch):
        outs = llm.generate(batch, params, use_tqdm=False)
        return [{"prompt": o.prompt_token_ids, "tokens": list(o.outputs[0].token_ids),
                 "logprobs": [pairs(d) for d in o.outputs[0].logprobs],
                 "prompt_logprobs": [pairs(d) for d in (o.prompt_logprobs or [])]}
                for o in outs]
    ps = mm_prompts()
    single = [run([p])[0] for p in ps]
    again = [run([p])[0] for p in ps]
    batch = run(ps)
    images = sum(1 for p in single for t in p["prompt"] if t == 500) // 4
    result = {"model": model, "eager": eager, "engine_start_s": start_s,
              "images_in_prompts": images, "single_repeats": single == again,
              "outputs": {"single": single, "batch": batch}}
    with open(out, "w") as f:
        json.dump(result, f)
    print(f"{out}: engine start {start_s:.1f} s, {len(ps)} prompts with {images} images "
          f"({4 * images} image tokens), single requests "
          f"{'repeat' if single == again else 'DO NOT repeat'} exactly")


def flip_middle_byte(data):
    data[len(data) // 2] ^= 0x40


def shard_official(src, dst):
    """src's model.safetensors as two shards (the blocks' groups split between them) with a
    model.safetensors.index.json, config.json copied."""
    from safetensors import safe_open
    from safetensors.torch import save_file
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    shutil.copy(os.path.join(src, "config.json"), dst)
    with safe_open(os.path.join(src, "model.safetensors"), "pt") as f:
        names = sorted(f.keys())
        tensors = {n: f.get_tensor(n) for n in names}
        metadata = f.metadata()
    first = [n for n in names if not n.startswith("model.layers.1.") and n.startswith("model.")]
    shards = {"model-00001-of-00002.safetensors": first,
              "model-00002-of-00002.safetensors": [n for n in names if n not in first]}
    weight_map = {}
    for file, members in shards.items():
        save_file({n: tensors[n] for n in members}, os.path.join(dst, file), metadata=metadata)
        weight_map.update({n: file for n in members})
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)


def prompts(vocab):
    import random
    rng = random.Random(5)
    return [[rng.randrange(1, vocab) for _ in range(n)] for n in (7, 16, 33, 64, 100, 5)]


def use_reference_gemm(mode: str = "exec"):
    """vLLM's unquantized Linear layers (every Linear of a BF16 model) compute as df11's
    execution layout does in `mode`: torch.ops.df11.exec_reference_linear (df11's reference
    GEMM at up to exec_mode.fused_max_tokens(mode) tokens, F.linear above), which the DF11
    model in that mode must equal."""
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from df11.exec_mode import exec_reference_linear, fused_max_tokens
    max_tokens = fused_max_tokens(mode)

    def apply(self, layer, x, bias=None):
        return exec_reference_linear(x, layer.weight, bias, max_tokens)
    UnquantizedLinearMethod.apply = apply


def read_config(model):
    """config.json of a folder, or of a Hub id (through huggingface_hub, as vLLM reads it)."""
    if os.path.isdir(model):
        return json.load(open(os.path.join(model, "config.json")))
    from huggingface_hub import hf_hub_download
    return json.load(open(hf_hub_download(model, "config.json")))


def upload(folder, repo):
    """`folder` as the Hub repo `repo` at $HF_ENDPOINT (a local Hub), with huggingface_hub."""
    from huggingface_hub import HfApi
    api = HfApi(endpoint=os.environ["HF_ENDPOINT"], token=os.environ["HF_TOKEN"])
    api.create_repo(repo)
    api.upload_folder(repo_id=repo, folder_path=folder)
    print(f"uploaded {folder} as {repo} to {os.environ['HF_ENDPOINT']}")


def generate(model, out, eager, quantization, df11_mode=None, reference=None,
             hf_config_path=None, tp=1, engine_args=(), lora=None):
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest
    if reference:
        use_reference_gemm(reference)
        # A compiled model in vLLM's cache (the same model and settings without the patch) would
        # be loaded without tracing the patched layers.
        os.environ["VLLM_DISABLE_COMPILE_CACHE"] = "1"
    max_len = min(512, read_config(hf_config_path or model).get("max_position_embeddings", 512))
    t0 = time.perf_counter()
    extra = {"additional_config": {"df11_mode": df11_mode}} if df11_mode else {}
    if hf_config_path:
        extra["hf_config_path"] = hf_config_path
    if lora:
        extra.update(enable_lora=True, max_loras=2, max_lora_rank=8)
    for arg in engine_args:  # KEY=VALUE, VALUE in JSON (a bare word is a string)
        key, _, value = arg.partition("=")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value
    llm = LLM(model=model, enforce_eager=eager, quantization=quantization, max_model_len=max_len,
              max_num_seqs=16, skip_tokenizer_init=True, seed=0, gpu_memory_utilization=0.8,
              tensor_parallel_size=tp, **extra)
    start_s = time.perf_counter() - t0
    vocab = llm.llm_engine.model_config.get_vocab_size()
    params = SamplingParams(temperature=0.0, max_tokens=48, logprobs=4, prompt_logprobs=2,
                            ignore_eos=True, detokenize=False)

    def pairs(d):
        return None if d is None else sorted((int(t), lp.logprob) for t, lp in d.items())

    # With an adapter: each request alone runs with it, and in the batch every other request
    # (requests with and without it sharing steps).
    adapter = LoRARequest("adapter", 1, os.path.abspath(lora)) if lora else None

    def run(batch):
        requests = None if adapter is None else (
            [adapter] if len(batch) == 1 else [adapter if k % 2 == 0 else None
                                               for k in range(len(batch))])
        outs = llm.generate([{"prompt_token_ids": p} for p in batch], params, use_tqdm=False,
                            lora_request=requests)
        return [{"prompt": o.prompt_token_ids,
                 "tokens": list(o.outputs[0].token_ids),
                 "logprobs": [pairs(d) for d in o.outputs[0].logprobs],
                 "prompt_logprobs": [pairs(d) for d in (o.prompt_logprobs or [])]}
                for o in outs]

    # Each request alone (the same steps whatever the engine's timing), twice, then all of
    # them in one call (the steps' batches are the same from run to run only where the engine
    # runs in this process: vllm_check.sh sets VLLM_ENABLE_V1_MULTIPROCESSING=0).
    ps = prompts(vocab)
    single = [run([p])[0] for p in ps]
    again = [run([p])[0] for p in ps]
    batch = run(ps)
    # Batch 1, 128 prompt tokens, up to 256 new: the second of two runs.
    new = min(256, max_len - 129)
    one = SamplingParams(temperature=0.0, max_tokens=new, ignore_eos=True, detokenize=False)
    ids = [{"prompt_token_ids": [(7 * i) % (vocab - 1) + 1 for i in range(128)]}]
    times = []
    for _ in range(2):
        t = time.perf_counter()
        llm.generate(ids, one, use_tqdm=False, lora_request=adapter)
        times.append(time.perf_counter() - t)
    result = {"model": model, "eager": eager, "quantization": quantization,
              "engine_args": list(engine_args),
              "df11_mode": df11_mode, "tensor_parallel_size": tp, "reference_gemm": reference,
              "lora": lora,
              "engine_start_s": start_s, "batch1_new_tokens": new, "batch1_s": times[-1],
              "single_repeats": single == again, "outputs": {"single": single, "batch": batch}}
    with open(out, "w") as f:
        json.dump(result, f)
    print(f"{out}: engine start {start_s:.1f} s, batch 1 {new / times[-1]:.1f} tokens/s, "
          f"single requests {'repeat' if single == again else 'DO NOT repeat'} exactly")


def client(url, model, out, pid=None, wait_s=600):
    """The single requests of `generate`, sent to a server one at a time: the same record per
    request (the server's top logprobs keyed "token_id:N")."""
    import urllib.request
    from openai import OpenAI
    t0 = time.time()
    while True:  # the server compiles and captures its graphs before it answers
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if pid is not None:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    gone = f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                gone = True
            if gone:
                raise SystemExit(f"{url}: the server (process {pid}) exited before it answered")
        if time.time() - t0 > wait_s:
            raise SystemExit(f"{url}: no answer to /health after {wait_s} s")
        time.sleep(2)
    api = OpenAI(base_url=url + "/v1", api_key="unused")
    served = [m.id for m in api.models.list().data]
    vocab = read_config(model)["vocab_size"]

    def ids(key):
        return int(key.split(":", 1)[1]) if isinstance(key, str) and ":" in key else int(key)

    def one(p):
        r = api.completions.create(
            model=served[0], prompt=p, max_tokens=48, temperature=0.0, logprobs=4,
            extra_body={"prompt_logprobs": 2, "ignore_eos": True, "return_token_ids": True,
                        "return_tokens_as_token_ids": True})
        c = r.choices[0].model_dump()
        return {"prompt": c["prompt_token_ids"], "tokens": c["token_ids"],
                "logprobs": [sorted((ids(k), v) for k, v in d.items())
                             for d in c["logprobs"]["top_logprobs"]],
                "prompt_logprobs": [None if d is None else
                                    sorted((int(k), v["logprob"]) for k, v in d.items())
                                    for d in c["prompt_logprobs"]]}
    ps = prompts(vocab)
    single = [one(p) for p in ps]
    again = [one(p) for p in ps]
    with open(out, "w") as f:
        json.dump({"model": model, "served": served[0], "url": url,
                   "single_repeats": single == again, "outputs": {"single": single}}, f)
    print(f"{out}: {len(single)} requests served as {served[0]} at {url}, "
          f"{'repeat' if single == again else 'DO NOT repeat'} exactly")


def first_difference(x, y):
    """Where two requests' records first differ: (key, step), or None."""
    for key in ("prompt", "tokens", "prompt_logprobs", "logprobs"):
        for k, (u, v) in enumerate(zip(x[key], y[key])):
            if u != v:
                return key, k
        if len(x[key]) != len(y[key]):
            return key, min(len(x[key]), len(y[key]))
    return None


def largest_gap(x, y):
    """The largest difference between two requests' logprobs of the same token, over the prompt
    and over the generated steps up to and including the first whose token differs."""
    gap = 0.0
    steps = [(u, v) for u, v in zip(x["prompt_logprobs"], y["prompt_logprobs"])]
    for k, (u, v) in enumerate(zip(x["logprobs"], y["logprobs"])):
        steps.append((u, v))
        if k >= len(x["tokens"]) or k >= len(y["tokens"]) or x["tokens"][k] != y["tokens"][k]:
            break
    for u, v in steps:
        if u is None or v is None:
            continue
        du, dv = dict(map(tuple, u)), dict(map(tuple, v))
        gap = max([gap] + [abs(du[t] - dv[t]) for t in du.keys() & dv.keys()])
    return gap


def compare(a_path, b_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    ok = a["single_repeats"] and b["single_repeats"]
    for side in (a, b):
        if not side["single_repeats"]:
            print(f"{side['model']}: single requests did not repeat exactly in one engine")
    for kind in ("single", "batch"):
        if kind not in a["outputs"] or kind not in b["outputs"]:
            continue
        xs, ys = a["outputs"][kind], b["outputs"][kind]
        diffs = [(i, first_difference(x, y)) for i, (x, y) in enumerate(zip(xs, ys))]
        diffs = [(i, d) for i, d in diffs if d is not None]
        same = len(xs) == len(ys) and not diffs
        ok = ok and same
        n = sum(len(x["tokens"]) for x in xs)
        gap = max([largest_gap(x, y) for x, y in zip(xs, ys)], default=0.0)
        print(f"{'EQUAL' if same else 'DIFFERENT'} ({kind}): {a_path} vs {b_path} "
              f"({len(xs)} requests, {n} tokens: tokens, logprobs, prompt logprobs)"
              + "".join(f"; request {i} first differs in {key} at {k}" for i, (key, k) in diffs)
              + (f"; largest logprob gap {gap:.3g}" if diffs else ""))
    return 0 if ok else 1


def groups(paths):
    """Sorts engines' outputs (generate's JSON files, from any calls) into classes of equal
    outputs, bit for bit, and prints one line per class: whether a DF11 engine gives what some
    BF16 engine gives where two BF16 engines of the same model differ from each other."""
    classes = []
    for path in paths:
        outputs = json.load(open(path))["outputs"]
        for cls in classes:
            if cls[0] == outputs:
                cls[1].append(path)
                break
        else:
            classes.append((outputs, [path]))
    for i, (_, members) in enumerate(classes):
        print(f"class {i}: " + " ".join(members))
    return 0


def expect_failure(log, patterns):
    text = open(log, errors="replace").read()
    missing = [p for p in patterns if p not in text]
    print(f"{log}: {'refused as expected' if not missing else 'MISSING ' + repr(missing)}")
    return 1 if missing else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    def engine_parser(name):
        s = sub.add_parser(name)
        s.add_argument("model")
        s.add_argument("out")
        s.add_argument("--eager", action="store_true")
        return s
    for name in ("make", "make-multimodal"):
        sub.add_parser(name).add_argument("work")
    s = engine_parser("generate")
    s.add_argument("--quantization")
    s.add_argument("--df11-mode")
    s.add_argument("--reference", nargs="?", const="exec", choices=["exec", "compact"],
                   help="compute as df11_mode MODE does (default exec)")
    s.add_argument("--hf-config-path", help="the model's config, for a folder whose config.json "
                   "names no model (the dfloat11 encoder's single-file output)")
    s.add_argument("--tp", type=int, default=1, help="tensor_parallel_size")
    s.add_argument("--engine-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="another argument of vllm.LLM (VALUE in JSON), e.g. "
                   "enable_prefix_caching=false")
    s.add_argument("--lora", help="a PEFT LoRA adapter's folder: the engine serves it "
                   "(enable_lora), every request alone and every other one of the batch with it")
    s = sub.add_parser("make-families")
    s.add_argument("work")
    s.add_argument("families", nargs="+")
    s = sub.add_parser("make-architectures")
    s.add_argument("work")
    s.add_argument("names", nargs="+")
    engine_parser("generate-mm")
    s = sub.add_parser("upload")
    s.add_argument("folder")
    s.add_argument("repo")
    s = sub.add_parser("client")
    s.add_argument("url")
    s.add_argument("model")
    s.add_argument("out")
    s.add_argument("--pid", type=int, help="the server's process: stop waiting if it exits")
    s = sub.add_parser("compare")
    s.add_argument("a")
    s.add_argument("b")
    s = sub.add_parser("groups")
    s.add_argument("paths", nargs="+")
    s = sub.add_parser("expect-failure")
    s.add_argument("log")
    s.add_argument("patterns", nargs="+")
    a = p.parse_args()
    if a.cmd == "make":
        make(a.work)
    elif a.cmd == "make-families":
        make_families(a.work, a.families)
    elif a.cmd == "make-architectures":
        make_architectures(a.work, a.names)
    elif a.cmd == "make-multimodal":
        make_multimodal(a.work)
    elif a.cmd == "generate-mm":
        generate_mm(a.model, a.out, a.eager)
    elif a.cmd == "generate":
        generate(a.model, a.out, a.eager, a.quantization, a.df11_mode, a.reference,
                 a.hf_config_path, a.tp, a.engine_arg, a.lora)
    elif a.cmd == "upload":
        upload(a.folder, a.repo)
    elif a.cmd == "client":
        client(a.url, a.model, a.out, a.pid)
    elif a.cmd == "compare":
        return compare(a.a, a.b)
    elif a.cmd == "groups":
        return groups(a.paths)
    else:
        return expect_failure(a.log, a.patterns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
