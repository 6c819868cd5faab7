"""Resident memory a model adds on the CPU: BF16 (transformers) against df11's default mode.

Makes an 8-layer Llama (hidden 1024, intermediate 2816, vocab 32000, random weights, seed 0)
in --work (BF16 folder, then `df11 compress`), then in one fresh process per model: imports,
RSS; load; one forward pass and a 16-token greedy generate; RSS again. Reports the RSS added
(after less before), its anonymous and mapped parts (/proc/self/status: RssAnon, and RssFile
+ RssShmem: the mapped weights, from /dev/shm as shared memory, and the libraries' pages), and
whether the tokens equal BF16's. Memory only: on a shared machine the
times say little, and none is reported.

    python bench/cpu_memory.py --work /dev/shm/cpu-memory [--json OUT.json]
    (needs DF11_CLI, and df11 importable)
"""
import argparse
import json
import os
import subprocess
import sys


def rss() -> dict:
    """VmRSS and its parts (anonymous; file-backed; shared memory, as a folder in /dev/shm
    maps), bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(line.split()[1]) * 1024
    return out


def measure(which: str, path: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    import df11
    before = rss()
    if which == "bf16":
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    else:
        model = df11.from_pretrained(path, device="cpu")
    ids = torch.randint(0, 32000, (1, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(input_ids=ids)
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             max_new_tokens=16, min_new_tokens=16, do_sample=False,
                             pad_token_id=0)
    after = rss()
    added = {k: round((after.get(k, 0) - before.get(k, 0)) / 1e6, 1) for k in after}
    mapped = round(added.get("RssFile", 0) + added.get("RssShmem", 0), 1)
    return dict(model=which, added_mb=added["VmRSS"], added_anon_mb=added.get("RssAnon"),
                added_mapped_mb=mapped, tokens=out[0, -16:].tolist())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--json", default="")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(measure(*args.worker)))
        return 0
    bf16, coded = os.path.join(args.work, "bf16"), os.path.join(args.work, "df11")
    if not os.path.isdir(coded):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM
        config = AutoConfig.for_model("llama", hidden_size=1024, intermediate_size=2816,
                                      num_hidden_layers=8, num_attention_heads=16,
                                      num_key_value_heads=4, vocab_size=32000,
                                      tie_word_embeddings=False)
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).save_pretrained(bf16)
        subprocess.run([os.environ["DF11_CLI"], "compress", bf16, "-o", coded, "-q"],
                       check=True)
    rows = []
    for which, path in (("bf16", bf16), ("df11", coded)):
        out = subprocess.run([sys.executable, __file__, "--work", args.work, "--worker", which,
                              path], capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    rows[1]["tokens_equal_bf16"] = rows[1].pop("tokens") == rows[0].pop("tokens")
    rows[1]["vs_bf16"] = round(rows[1]["added_mb"] / rows[0]["added_mb"], 3)
    for row in rows:
        print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            import torch
            import transformers

            import df11
            json.dump(dict(model="llama, 8 layers, hidden 1024, vocab 32000", rows=rows,
                           torch=torch.__version__, transformers=transformers.__version__,
                           df11=df11.version()), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
