"""The benchmark model: Llama-3.1-8B shapes (--shape 14b: Qwen2.5-14B's dimensions in a Llama,
14.8B weights, 29.5 GB of BF16; --shape 30b-a3b: a Qwen3-MoE of Qwen3-30B-A3B's dimensions, 128
experts of which a token uses 8, written tensor by tensor in the checkpoint's own per-expert
names, each tensor N(0, 0.02) and the norms ones), random weights (from_config, seeded),
saved as BF16 in --work (a RAM disk: /dev/shm), compressed with the df11 tool ($DF11_CLI; without
it, with df11.compress on the model in memory), then
python -m df11.bench on it against BF16 and the official loader. Both folders get a word-level
tokenizer over the vocabulary ("t<id>" words; write_tokenizer), so that benchmarks which sample
prompts as text (vLLM's random dataset) run on them."""
import argparse
import os
import subprocess
import sys
import time

import torch

LLAMA_31_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                   num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                   max_position_embeddings=131072, rope_theta=500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 8192},
                   tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001)
# A model whose BF16 weights exceed a 24 GiB budget while its DF11 weights fit: Qwen2.5-14B's
# dimensions (48 layers, hidden 5120, MLP 13824, 40 query and 8 KV heads, vocabulary 152064).
SHAPES = {"8b": LLAMA_31_8B,
          "14b": dict(LLAMA_31_8B, hidden_size=5120, intermediate_size=13824,
                      num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8,
                      vocab_size=152064, max_position_embeddings=32768, rope_theta=1000000.0,
                      rope_scaling=None, bos_token_id=1, eos_token_id=2),
          "30b-a3b": dict(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"],
                          hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
                          num_experts=128, num_experts_per_tok=8, norm_topk_prob=True,
                          decoder_sparse_step=1, mlp_only_layers=[], num_hidden_layers=48,
                          num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                          vocab_size=151936, max_position_embeddings=40960,
                          rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                          bos_token_id=151643, eos_token_id=151645, torch_dtype="bfloat16")}


def write_moe(folder: str, shape: dict, seed: int = 0) -> None:
    """A Qwen3-MoE checkpoint of `shape` in `folder`: config.json and safetensors shards (about
    4 GiB each, with their index) in the checkpoint names a Qwen3-MoE model on the Hub uses (an
    expert's gate, up and down projections apart), made on the GPU a tensor at a time."""
    import json
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    cfg = {k: v for k, v in shape.items()}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    h, e, i = shape["hidden_size"], shape["num_experts"], shape["moe_intermediate_size"]
    hd, q, kv = shape["head_dim"], shape["num_attention_heads"], shape["num_key_value_heads"]
    tensors = [("model.embed_tokens.weight", (shape["vocab_size"], h), False),
               ("model.norm.weight", (h,), True), ("lm_head.weight", (shape["vocab_size"], h), False)]
    for n in range(shape["num_hidden_layers"]):
        p = f"model.layers.{n}."
        tensors += [(p + "input_layernorm.weight", (h,), True),
                    (p + "post_attention_layernorm.weight", (h,), True),
                    (p + "self_attn.q_proj.weight", (q * hd, h), False),
                    (p + "self_attn.k_proj.weight", (kv * hd, h), False),
                    (p + "self_attn.v_proj.weight", (kv * hd, h), False),
                    (p + "self_attn.o_proj.weight", (h, q * hd), False),
                    (p + "self_attn.q_norm.weight", (hd,), True),
                    (p + "self_attn.k_norm.weight", (hd,), True),
                    (p + "mlp.gate.weight", (e, h), False)]
        for x in range(e):
            tensors += [(p + f"mlp.experts.{x}.gate_proj.weight", (i, h), False),
                        (p + f"mlp.experts.{x}.up_proj.weight", (i, h), False),
                        (p + f"mlp.experts.{x}.down_proj.weight", (h, i), False)]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(seed)
    shard, size, index, k = {}, 0, {}, 0

    def flush():
        nonlocal shard, size, k
        name = f"model-{k:05d}.safetensors"
        save_file(shard, os.path.join(folder, name), metadata={"format": "pt"})
        index.update({t: name for t in shard})
        shard, size, k = {}, 0, k + 1

    for name, dims, ones in tensors:
        t = (torch.ones(dims, device=device) if ones else
             torch.randn(dims, device=device, generator=gen) * 0.02).to(torch.bfloat16)
        shard[name] = t.cpu()
        size += 2 * t.numel()
        if size >= 4 << 30:
            flush()
    if shard:
        flush()
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": index}, f, indent=1)


def write_tokenizer(folder: str, vocab_size: int) -> None:
    """tokenizer.json and tokenizer_config.json in `folder`: id i is the word "t<i>" (ids 0-2:
    <unk>, <s>, </s>), words split at whitespace, so that decoding ids and encoding the text
    gives the ids back."""
    if os.path.exists(os.path.join(folder, "tokenizer.json")):
        return
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {w: i for i, w in enumerate(specials)}
    vocab.update({f"t{i}": i for i in range(len(specials), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(folder)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--json", default="")
    p.add_argument("--batch", default="1,8")
    p.add_argument("--tokens", default="256")
    p.add_argument("--shape", choices=sorted(SHAPES), default="8b")
    p.add_argument("--layers", type=int, default=0, help="layers (default: the shape's)")
    p.add_argument("--compare", default="bf16,dfloat11")
    p.add_argument("--modes", default="eager,graph")
    p.add_argument("--make-only", action="store_true", help="make the folders, run nothing")
    p.add_argument("--bench-args", default=os.environ.get("BENCH_EXTRA", ""),
                   help="more arguments for python -m df11.bench (default: $BENCH_EXTRA)")
    args = p.parse_args()
    from transformers import AutoConfig, AutoModelForCausalLM
    bf16, dfl = os.path.join(args.work, "bf16"), os.path.join(args.work, "df11")
    if not os.path.isdir(dfl):
        shape = dict(SHAPES[args.shape])
        if args.layers:
            shape["num_hidden_layers"] = args.layers
        t = time.time()
        model = None
        if shape.get("model_type") == "qwen3_moe":
            if not os.environ.get("DF11_CLI"):
                raise SystemExit(f"--shape {args.shape} is compressed by the df11 tool: set "
                                 "DF11_CLI")
            write_moe(bf16, shape)
        else:
            config = AutoConfig.for_model("llama", **shape)
            torch.manual_seed(0)
            with torch.device("cuda"):
                model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
            model.save_pretrained(bf16)
        print(f"made {bf16} in {time.time() - t:.1f} s", flush=True)
        t = time.time()
        cli = os.environ.get("DF11_CLI")
        if cli or model is None:  # the df11 tool on the saved folder
            del model
            subprocess.run([cli, "compress", bf16, "-o", dfl, "-q"], check=True)
        else:  # without the tool: the same encoder from Python, on the model in memory
            import df11
            df11.compress(model, dfl)
            del model
        torch.cuda.empty_cache()
        print(f"{'df11 compress' if cli else 'df11.compress'} in {time.time() - t:.1f} s",
              flush=True)
    for folder in (bf16, dfl):
        write_tokenizer(folder, SHAPES[args.shape]["vocab_size"])
    if args.make_only:
        return 0
    cmd = [sys.executable, "-m", "df11.bench", dfl, "--bf16", bf16, "--batch", args.batch,
           "--tokens", args.tokens, "--compare", args.compare, "--cuda-graphs",
           "--modes", args.modes,
           "--json", args.json] + args.bench_args.split()
    print("$ python -m df11.bench " + " ".join(cmd[3:]), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
