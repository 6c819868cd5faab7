#!/usr/bin/env python3
"""Where the default mode's eager generate step goes, on one GPU, in one process.

    python bench/eager_attribution.py BF16_DIR DF11_DIR [BATCH [ROUNDS]]

ROUNDS rounds (default two), each: BF16 (transformers), then df11's default mode, then the same
df11 model with its decode launches skipped (CudaDecoder.decode_now made a no-op: the blocks
then compute on whatever the buffer holds, so the tokens are meaningless; only the time counts),
then the host time of the blocks' pre-forward hooks (the lock and the decode's foreign call),
timed with time.perf_counter around DecodeMode.pre_forward. Each timing: greedy generate of 64
new tokens at batch BATCH (default 1) after a 16-token prompt, ms per token, 5 runs after a
warm-up, and the variant's GPU time per token (its kernels' durations summed by torch.profiler
over a 16-token generate), which tells a step bound by the host's launches from one bound by the
GPU.
Prints each run and the medians (JSON, last line)."""
import json
import statistics
import sys
import time

import torch
from transformers import AutoModelForCausalLM

import df11
from df11 import decoders, hooks


def main() -> None:
    bf16_dir, df11_dir = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    ids = torch.randint(0, 128256, (batch, 16),
                        generator=torch.Generator().manual_seed(0)).cuda()

    def gen(model, n=64):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e3, out

    res = {}

    def gpu_ms(model, n=16):
        cuda = torch.autograd.DeviceType.CUDA
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            gen(model, n)
        us = sum(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
                 for e in prof.events() if e.device_type == cuda)
        return us / n / 1e3

    def timed(name, model, rounds=5):
        gen(model, 8)
        ts = [gen(model)[0] for _ in range(rounds)]
        res.setdefault(name, []).extend(ts)
        try:
            g = gpu_ms(model)
        except Exception as e:  # noqa: BLE001 - a profiler that cannot count: the times stand
            print(name, "GPU time not counted:", type(e).__name__, e, flush=True)
            g = float("nan")
        res.setdefault(name + " GPU", []).append(g)
        print(name, [round(t, 2) for t in ts], "GPU ms per token", round(g, 2), flush=True)

    real = decoders.CudaDecoder.decode_now
    for _ in range(int(sys.argv[4]) if len(sys.argv) > 4 else 2):
        m = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16,
                                                 device_map="cuda").eval()
        timed("bf16", m)
        del m
        torch.cuda.empty_cache()
        m = df11.from_pretrained(df11_dir, device="cuda")
        timed("df11", m)
        decoders.CudaDecoder.decode_now = lambda self: None
        for u in m.df11.units:
            u.mode._steps = None
        timed("df11-no-decode", m)
        decoders.CudaDecoder.decode_now = real
        for u in m.df11.units:
            u.mode._steps = None
        acc = [0.0, 0]
        orig = hooks.DecodeMode.pre_forward

        def pf(self, orig=orig):
            t = time.perf_counter()
            orig(self)
            acc[0] += time.perf_counter() - t
            acc[1] += 1
        hooks.DecodeMode.pre_forward = pf
        gen(m)
        print("pre_forward host us per call", acc[0] / acc[1] * 1e6, "calls", acc[1], flush=True)
        hooks.DecodeMode.pre_forward = orig
        del m
        torch.cuda.empty_cache()
    print(json.dumps({k: statistics.median(v) for k, v in res.items()}))


if __name__ == "__main__":
    main()
