#!/usr/bin/env python3
"""How fast df11's encoder codes an engine's own weights (coded.encode, as vLLM's plugin codes a
tensor-parallel rank's slices): N tensors of 7168 x 4096 BF16 (Gaussian, std 0.02), made on the
GPU and left there (`cuda`: df11.compress reads them through its reader, 64 MiB at a time) or
moved to host memory first (`cpu`), coded twice into /dev/shm; wall and CPU seconds of each.
ONE_THREAD=1 sets torch's thread count to 1 first, as vLLM's workers run. --shard-bytes
(e.g. 256MB) cuts the folder into shards of that size, which the encoder writes side by side
as far as its memory bound allows (default: one shard, as coded.encode writes).

    python3 bench/encode_probe.py cpu|cuda [N] [--shard-bytes SIZE]   (N default 112: 6.1 GiB)
"""
import argparse
import os
import shutil
import time

import torch

from df11 import _capi
from df11.checkpoint import compress

p = argparse.ArgumentParser()
p.add_argument("where", choices=["cpu", "cuda"])
p.add_argument("n", type=int, nargs="?", default=112)
p.add_argument("--shard-bytes", default=None)
a = p.parse_args()
if os.environ.get("ONE_THREAD"):
    torch.set_num_threads(1)
g = torch.Generator(device="cuda").manual_seed(0)
w = {f"model.layers.{i}.mlp.down_proj.weight":
     (torch.randn(7168, 4096, generator=g, device="cuda") * 0.02).to(torch.bfloat16).to(a.where)
     for i in range(a.n)}
torch.cuda.synchronize()
n = sum(t.numel() * 2 for t in w.values())
out = "/dev/shm/enc_probe"
for rep in range(2):
    shutil.rmtree(out, ignore_errors=True)
    t0, c0 = time.perf_counter(), time.process_time()
    compress(w, out, config={"df11": "engine weights"}, group_by="tensor",
             max_shard_size=a.shard_bytes)
    _capi.Model(out).close()
    t1, c1 = time.perf_counter(), time.process_time()
    print(f"{a.where} {n / 2**30:.2f} GiB, shards {a.shard_bytes or 'one'}: {t1 - t0:.2f} s wall, "
          f"{c1 - c0:.2f} CPU-s ({(c1 - c0) / (t1 - t0):.1f} cores), "
          f"{len(os.sched_getaffinity(0))} allowed", flush=True)
shutil.rmtree(out, ignore_errors=True)
