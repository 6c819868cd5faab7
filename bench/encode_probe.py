#!/usr/bin/env python3
"""How fast df11's encoder codes an engine's own weights (coded.encode, as vLLM's plugin codes a
tensor-parallel rank's slices): N tensors of 7168 x 4096 BF16 (Gaussian, std 0.02), made on the
GPU and left there (`cuda`: df11.compress reads them through its reader, 64 MiB at a time;
`batches`: coded.encode_batches, as the plugin calls it, copies them through pinned buffers a
batch at a time) or moved to host memory first (`cpu`), coded twice into /dev/shm; wall and
CPU seconds of each. ONE_THREAD=1 sets torch's thread count to 1 first, as vLLM's workers run.
--shard-bytes (e.g. 256MB; a comma-separated list runs each in turn, "one" for one shard) cuts
each folder into shards of that size, which the encoder writes side by side as far as its
memory bound allows (default: one shard, as coded.encode writes). --batch-bytes: the batches'
size for `batches` (default coded.ENCODE_BATCH_BYTES).

    python3 bench/encode_probe.py cpu|cuda|batches [N] [--shard-bytes SIZE[,SIZE...]]
        [--batch-bytes SIZE]   (N default 112: 6.1 GiB)
"""
import argparse
import os
import shutil
import time

import torch

from df11 import _capi, coded
from df11.checkpoint import _size_bytes, compress

p = argparse.ArgumentParser()
p.add_argument("where", choices=["cpu", "cuda", "batches"])
p.add_argument("n", type=int, nargs="?", default=112)
p.add_argument("--shard-bytes", default="one")
p.add_argument("--batch-bytes", default=None)
a = p.parse_args()
if os.environ.get("ONE_THREAD"):
    torch.set_num_threads(1)
g = torch.Generator(device="cuda").manual_seed(0)
w = {f"model.layers.{i}.mlp.down_proj.weight":
     (torch.randn(7168, 4096, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
     .to("cpu" if a.where == "cpu" else "cuda")
     for i in range(a.n)}
torch.cuda.synchronize()
n = sum(t.numel() * 2 for t in w.values())
out = "/dev/shm/enc_probe"
for shard in a.shard_bytes.split(","):
    shard_bytes = None if shard == "one" else _size_bytes(shard)
    for rep in range(2):
        shutil.rmtree(out, ignore_errors=True)
        t0, c0 = time.perf_counter(), time.process_time()
        if a.where == "batches":
            batch = coded.ENCODE_BATCH_BYTES if a.batch_bytes is None else _size_bytes(
                a.batch_bytes)
            for folder, _ in coded.encode_batches(w, out, batch, shard_bytes):
                folder.close()
            what = f"batches of {batch / 2**30:.2f} GiB"
        else:
            compress(w, out, config={"df11": "engine weights"}, group_by="tensor",
                     max_shard_size=shard_bytes)
            _capi.Model(out).close()
            what = "one folder"
        t1, c1 = time.perf_counter(), time.process_time()
        print(f"{a.where} {n / 2**30:.2f} GiB, {what}, shards {shard}: {t1 - t0:.2f} s wall, "
              f"{c1 - c0:.2f} CPU-s ({(c1 - c0) / (t1 - t0):.1f} cores), "
              f"{len(os.sched_getaffinity(0))} allowed", flush=True)
shutil.rmtree(out, ignore_errors=True)
