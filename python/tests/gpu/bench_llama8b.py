"""The benchmark model: Llama-3.1-8B shapes (--shape 14b: Qwen2.5-14B's dimensions in a Llama,
14.8B weights, 29.5 GB of BF16), random weights (from_config, seeded),
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
                      rope_scaling=None, bos_token_id=1, eos_token_id=2)}


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
        config = AutoConfig.for_model("llama", **shape)
        torch.manual_seed(0)
        t = time.time()
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        model.save_pretrained(bf16)
        print(f"made {bf16} in {time.time() - t:.1f} s", flush=True)
        t = time.time()
        cli = os.environ.get("DF11_CLI")
        if cli:  # the df11 tool on the saved folder
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
