#!/usr/bin/env python3
"""How fast df11's encoder codes an engine's own weights (coded.encode, as vLLM's plugin codes a
tensor-parallel rank's slices): N tensors of 7168 x 4096 BF16 (Gaussian, std 0.02), made on the
GPU and left there (`cuda`: df11.compress reads them through its reader, 64 MiB at a time) or
moved to host memory first (`cpu`), coded twice into /dev/shm; wall and CPU seconds of each.
ONE_THREAD=1 sets torch's thread count to 1 first, as vLLM's workers run.

    python3 bench/encode_probe.py cpu|cuda [N]      (N default 112: 6.1 GiB)
"""
import os, shutil, sys, time, torch
from df11 import coded
where = sys.argv[1]
n_t = int(sys.argv[2]) if len(sys.argv) > 2 else 112
if os.environ.get("ONE_THREAD"):
    torch.set_num_threads(1)
dev = "cuda" if where == "cuda" else "cpu"
g = torch.Generator(device="cuda").manual_seed(0)
w = {f"l{i}.weight": (torch.randn(7168, 4096, generator=g, device="cuda") * 0.02)
     .to(torch.bfloat16).to(dev) for i in range(n_t)}
torch.cuda.synchronize()
n = sum(t.numel() * 2 for t in w.values())
for rep in range(2):
    out = "/dev/shm/enc_probe"
    shutil.rmtree(out, ignore_errors=True)
    t0, c0 = time.perf_counter(), time.process_time()
    with coded.encode(w, out) as f:
        pass
    t1, c1 = time.perf_counter(), time.process_time()
    print(f"{where} {n/2**30:.2f} GiB: {t1-t0:.2f} s wall, {c1-c0:.2f} CPU-s "
          f"({(c1-c0)/(t1-t0):.1f} cores), {len(os.sched_getaffinity(0))} allowed", flush=True)
shutil.rmtree("/dev/shm/enc_probe", ignore_errors=True)
