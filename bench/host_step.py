#!/usr/bin/env python3
"""Host time of an eager generate step, BF16 against df11's modes, on one GPU.

    python bench/host_step.py [--layers 32] [--batch 1,8] [--rounds 5] [--profile N] [--json F]

A Llama of `--layers` blocks with tiny matrices (hidden 64, random weights), so that the GPU's
work per step is a small part of the step and the step's wall time is the host's: what
transformers' Python, torch's dispatch and df11's hooks and modules cost per token. BF16
(transformers), df11's default mode and `mode="exec"` are loaded in one process and timed in
rounds of rotating order: greedy generate of 64 new tokens after a 16-token prompt, ms per
token, median over the rounds, with the calling thread's CPU time per token beside each run
(a run whose wall time exceeds it waited: for the GPU, or for a core). `--profile N` also prints each variant's N functions of most own
time under cProfile over one such generate. Needs the df11 CLI (DF11_CLI) to compress the model.
"""
import argparse
import cProfile
import io
import json
import os
import pstats
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
from df11 import decoders  # noqa: E402

NEW = 64


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def generate(model, ids, n=NEW, cpu=None):
    """ms per token; `cpu` (a list) gets the calling thread's CPU ms per token."""
    sync()
    t, c = time.perf_counter(), time.thread_time()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                             min_new_tokens=n, do_sample=False)
    sync()
    if cpu is not None:
        cpu.append((time.thread_time() - c) / n * 1e3)
    return (time.perf_counter() - t) / n * 1e3, out


def skip_decodes(model):
    """The model's block decodes made no-ops (each unit's decode launch and status copy)."""
    for unit in model.df11.units:
        for rt in unit.groups:
            if isinstance(rt.decoder, decoders.CudaDecoder):
                rt.decoder.decode_now = lambda: None
    return model


def profile(model, ids, top: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    generate(model, ids)
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--no-decode", action="store_true",
                    help="also df11's default mode with its decode launches skipped (its tokens "
                         "are meaningless: only its time counts)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu (no mode=\"exec\" there)")
    args = ap.parse_args()
    dev = args.device
    with tempfile.TemporaryDirectory() as work:
        bf16_dir, df11_dir = models.llama_folders(work, num_hidden_layers=args.layers)
        variants = {
            "bf16": AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                         device_map=dev).eval(),
            "df11": df11.from_pretrained(df11_dir, device=dev),
        }
        if dev == "cuda":
            variants["df11-exec"] = df11.from_pretrained(df11_dir, device=dev, mode="exec")
            if args.no_decode:
                variants["df11-nodecode"] = skip_decodes(df11.from_pretrained(df11_dir,
                                                                              device=dev))
        gpu = torch.cuda.get_device_name() if dev == "cuda" else "CPU"
        result = {"gpu": gpu, "layers": args.layers, "new_tokens": NEW, "batches": {}}
        print(f"{gpu}: {args.layers}-layer Llama, hidden 64; eager generate, ms per token "
              f"(host-bound), median of {args.rounds} rounds", flush=True)
        for batch in (int(b) for b in args.batch.split(",")):
            ids = torch.randint(0, 512, (batch, 16),
                                generator=torch.Generator().manual_seed(batch)).to(dev)
            times = {name: [] for name in variants}
            cpus = {name: [] for name in variants}
            tokens = {}
            names = list(variants)
            for name in names:
                generate(variants[name], ids, 8)  # warm-up
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    ms, out = generate(variants[name], ids, cpu=cpus[name])
                    times[name].append(ms)
                    tokens[name] = out
            rows = {}
            base = statistics.median(times["bf16"])
            for name, ts in times.items():
                med = statistics.median(ts)
                rows[name] = {"ms_per_token": med, "runs": ts, "over_bf16_ms": med - base,
                              "thread_cpu_ms_per_token": cpus[name],
                              "tokens_equal_bf16": bool(torch.equal(tokens[name],
                                                                    tokens["bf16"]))}
                print(f"batch {batch:2d} {name:10s} {med:7.3f} ms/token  "
                      f"{med - base:+7.3f} ms against BF16  "
                      f"(runs {', '.join(f'{t:.2f}' for t in ts)}; the thread's CPU ms "
                      f"{', '.join(f'{c:.2f}' for c in cpus[name])})", flush=True)
            result["batches"][str(batch)] = rows
            if args.profile:
                for name in names:
                    print(f"---- cProfile, {name}, batch {batch}", flush=True)
                    print(profile(variants[name], ids, args.profile), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
