"""Coding BF16 weights that are on a GPU: df11's GPU encoder (coded.GpuGroup.encoded: the
weights counted, coded, decoded back and compared there) and the execution layout packed there
straight from BF16 (exec_mode.pack_bf16, then decoded back and compared), against the path that
copies them to host memory and codes them with the CPU encoder (coded.encode_batches), on the
Linear shapes of one Llama-3.1-8B block, whole (tensor parallel 1) and as one rank's slices at
tensor parallel 2.

    python bench/gpu_encode.py [--repeat 5] [--json OUT.json]

Weights: N(0, 0.02^2) BF16 (not all zeros). Each row is the median of `--repeat` runs after
one warm-up, wall time with the device synchronised at both ends (what a load waits for).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import torch

from df11 import coded, exec_mode

SHAPES = {"q_proj": (4096, 4096), "k_proj": (1024, 4096), "v_proj": (1024, 4096),
          "o_proj": (4096, 4096), "gate_proj": (14336, 4096), "up_proj": (14336, 4096),
          "down_proj": (4096, 14336)}
# At tensor parallel 2: q/k/v, gate/up split by rows (column-parallel), o/down by columns.
TP2 = {"q_proj": (2048, 4096), "k_proj": (512, 4096), "v_proj": (512, 4096),
       "o_proj": (4096, 2048), "gate_proj": (7168, 4096), "up_proj": (7168, 4096),
       "down_proj": (4096, 7168)}


def timed(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gpu_block(weights):
    for name, w in weights.items():
        group = coded.GpuGroup.encoded(w, name, "bench")
        got = coded.SpansWeight(group, [(0, w.numel())], tuple(w.shape)).decode()
        group.check()
        if not torch.equal(got.view(torch.int16), w.view(torch.int16)):
            raise SystemExit(f"{name}: the GPU-coded group decodes to other values")


def exec_block(weights):
    for name, w in weights.items():
        blob, mats = exec_mode.pack_bf16([w], name)
        ew = exec_mode.ExecWeight(blob, mats, name)
        got = ew.decode()
        ew.check()
        if not torch.equal(got.view(torch.int16), w.view(torch.int16)):
            raise SystemExit(f"{name}: the packed layout decodes to other values")


def cpu_block(weights):
    with tempfile.TemporaryDirectory(dir=coded.scratch_dir(1 << 30)) as tmp:
        for folder, _ in coded.encode_batches(weights, tmp):
            folder.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for label, shapes in (("8B block", SHAPES), ("8B block, one rank of TP 2", TP2)):
        weights = {f"layers.0.{n}.weight": (torch.randn(s, generator=g, device="cuda") *
                                            0.02).to(torch.bfloat16)
                   for n, s in shapes.items()}
        nbytes = sum(w.numel() * 2 for w in weights.values())
        gpu = timed(lambda w=weights: gpu_block(w), args.repeat)
        packed = timed(lambda w=weights: exec_block(w), args.repeat)
        cpu = timed(lambda w=weights: cpu_block(w), args.repeat)
        rows.append({"what": label, "bf16_bytes": nbytes, "gpu_encode_decode_compare_s": gpu,
                     "exec_pack_decode_compare_s": packed, "copy_and_cpu_encode_s": cpu})
        print(f"{label}: {nbytes / 1e6:.1f} MB of BF16; GPU encode + decode + compare "
              f"{gpu * 1e3:.1f} ms ({nbytes / gpu / 1e9:.1f} GB/s); execution layout packed + "
              f"decoded + compared {packed * 1e3:.1f} ms; copy + CPU encode "
              f"{cpu * 1e3:.1f} ms ({nbytes / cpu / 1e9:.2f} GB/s, {os.cpu_count()} cores)",
              flush=True)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cores": os.cpu_count(), "repeat": args.repeat, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
