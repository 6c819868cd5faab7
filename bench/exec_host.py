#!/usr/bin/env python3
"""Host time of `mode="exec"`'s Linears, against BF16's nn.Linear, on one GPU.

    python bench/exec_host.py [--tokens 1,8] [--passes 500] [--rounds 9] [--json F]

Eager generate at small batches is bound by the host (BENCHMARKS.md, "Python engine"): what a
Linear's forward costs on the CPU is what a token loses there. On the package's tiny Llama
(python/tests/models.py, so that the GPU's work is a small part of each call), one decoder
layer's seven Linears are called as its attention and MLP call them: q, k and v on one input
(one launch for the three, the other two served from it), o, gate and up on one input, down.
Reported: microseconds of host time per layer (the seven calls), median of --rounds rounds of
--passes passes, the GPU drained between rounds; BF16's nn.Linear modules of the same layer,
loaded beside, in the same rounds. Needs the df11 CLI (DF11_CLI) to compress the model.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "tests"))
import df11  # noqa: E402
import models  # noqa: E402


def layer_calls(model):
    """One pass over layer 0's Linears, as LlamaAttention and LlamaMLP call them."""
    layer = model.model.layers[0]
    att, mlp = layer.self_attn, layer.mlp
    q, k, v, o = att.q_proj, att.k_proj, att.v_proj, att.o_proj
    gate, up, down = mlp.gate_proj, mlp.up_proj, mlp.down_proj

    def one(x, xo, xd):
        q(x)
        k(x)
        v(x)
        o(xo)
        gate(x)
        up(x)
        down(xd)
    return one, (q.in_features, o.in_features, down.in_features)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,8")
    ap.add_argument("--passes", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    results = {"gpu": torch.cuda.get_device_name(0), "df11": df11.__file__, "tokens": {}}
    with tempfile.TemporaryDirectory() as work:
        bf16_dir, df11_dir = models.llama_folders(work)
        variants = {
            "bf16": AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                         device_map="cuda").eval(),
            "df11-exec": df11.from_pretrained(df11_dir, device="cuda", mode="exec"),
        }
        calls = {name: layer_calls(m) for name, m in variants.items()}
        for tokens in [int(t) for t in args.tokens.split(",")]:
            dims = next(iter(calls.values()))[1]
            x, xo, xd = (torch.randn(1, tokens, d, device="cuda").to(torch.bfloat16)
                         for d in dims)
            times = {name: [] for name in calls}
            for name, (one, _) in calls.items():  # warm-up
                for _ in range(20):
                    one(x, xo, xd)
            for r in range(args.rounds):
                for name, (one, _) in calls.items():
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(args.passes):
                        one(x, xo, xd)
                    t = time.perf_counter() - t0
                    torch.cuda.synchronize()
                    times[name].append(1e6 * t / args.passes)
            row = {}
            for name, us in times.items():
                row[name] = {"us_per_layer": statistics.median(us), "rounds": us}
                print(f"tokens {tokens:3} {name:10} {statistics.median(us):8.1f} us of host time "
                      f"per layer's 7 Linears (rounds {min(us):.1f}-{max(us):.1f})", flush=True)
            results["tokens"][str(tokens)] = row
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
