"""Eager generate speed, paired in one process: BF16, df11 (decode mode), df11 mode="exec", the
official dfloat11 loader (when installed) and glyd (`--variants ...,glyd`: glyd.from_pretrained
on the BF16 folder, when installed) loaded side by side, then timed in alternating
rounds, so that the host's drift (these machines' eager rows move by 1.5x from run to run)
falls on every variant alike. Per round each variant generates the same tokens (greedy, HF
generate, batch B, --tokens new tokens after a 16-token prompt); reported: each variant's
median ms per token and the median over rounds of its time / BF16's, / the official loader's
and / glyd's, and whether its tokens equal BF16's.

    python ab_eager.py --work /dev/shm/df11-bench [--batch 1,8] [--rounds 7] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def load(name, work):
    from transformers import AutoConfig, AutoModelForCausalLM
    bf16_dir, df11_dir = os.path.join(work, "bf16"), os.path.join(work, "df11")
    if name == "bf16":
        return AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                    device_map="cuda").eval()
    if name == "glyd":
        import glyd
        return glyd.from_pretrained(bf16_dir).eval()
    import df11
    if name in ("df11", "df11-exec"):
        return df11.from_pretrained(df11_dir, device="cuda",
                                    mode="exec" if name == "df11-exec" else "decode")
    from df11.bench import _pkg_resources_shim
    _pkg_resources_shim()
    from dfloat11 import DFloat11Model
    try:
        from transformers.initialization import no_init_weights
    except ImportError:
        from transformers.modeling_utils import no_init_weights
    with no_init_weights():
        skeleton = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(df11_dir),
                                                    dtype=torch.bfloat16).eval()
    return DFloat11Model.from_pretrained(df11_dir, device="cuda", bfloat16_model=skeleton)


def generate(model, ids, tokens):
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=tokens, min_new_tokens=tokens, eos_token_id=None,
                             pad_token_id=0)
    return out[:, ids.shape[1]:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default="/dev/shm/df11-bench")
    p.add_argument("--variants", default="bf16,df11,df11-exec,dfloat11")
    p.add_argument("--batch", default="1,8")
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--json", default="")
    args = p.parse_args()
    import importlib.util
    names = [v for v in args.variants.split(",")
             if v not in ("dfloat11", "glyd") or importlib.util.find_spec(v) is not None]
    models = {v: load(v, args.work) for v in names}
    vocab = models["bf16"].config.vocab_size
    gpu = torch.cuda.get_device_name(0)
    print(f"GPU: {gpu}; {args.tokens} new tokens, prompt 16, {args.rounds} rounds, variants "
          f"in rotating order", flush=True)
    results = {"gpu": gpu, "batches": {}}
    for batch in [int(b) for b in args.batch.split(",")]:
        g = torch.Generator().manual_seed(1234)
        ids = torch.randint(1, vocab, (batch, 16), generator=g).cuda()
        tokens = {}
        for v in names:  # warm-up: two full runs each (the first run of a shape is slow)
            for _ in range(2):
                tokens[v] = generate(models[v], ids, args.tokens)
        times = {v: [] for v in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for v in order:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                generate(models[v], ids, args.tokens)
                torch.cuda.synchronize()
                times[v].append(time.perf_counter() - t0)
        rows = {}
        for v in names:
            ms = 1000 * statistics.median(times[v]) / args.tokens
            vs_bf16 = statistics.median(a / b for a, b in zip(times[v], times["bf16"]))
            row = {"ms_per_token": ms, "tokens_per_s": 1000 * batch / ms,
                   "time_over_bf16": vs_bf16, "all_s": times[v],
                   "tokens_equal_bf16": bool(torch.equal(tokens[v], tokens["bf16"]))}
            versus = ""
            for ref, who in (("dfloat11", "official's"), ("glyd", "glyd's")):
                if ref in times:
                    row[f"time_over_{ref}"] = statistics.median(
                        a / b for a, b in zip(times[v], times[ref]))
                    versus += f", {1 / row[f'time_over_{ref}']:5.3f}x {who}"
            rows[v] = row
            print(f"batch {batch:2} {v:10} {ms:8.2f} ms/token {row['tokens_per_s']:8.1f} tok/s  "
                  f"speed {1 / vs_bf16:5.3f}x BF16's{versus}"
                  f"  tokens {'= BF16' if row['tokens_equal_bf16'] else '!= BF16'}", flush=True)
        results["batches"][str(batch)] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
